"""A tiny threaded HTTP server base shared by the test kit's fakes.

The fakes must bind 127.0.0.1 on a random free port, run in a daemon thread, and stop cleanly
from a test's teardown; putting that in one place keeps each fake down to its request logic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

Handler = Callable[[BaseHTTPRequestHandler], None]


class _QuietHandler(BaseHTTPRequestHandler):
    """Routes every method to the owner's callback and keeps stderr free of access logs."""

    protocol_version = "HTTP/1.1"
    dispatch: Handler

    def do_GET(self) -> None:
        self.dispatch(self)

    def do_POST(self) -> None:
        self.dispatch(self)

    def do_HEAD(self) -> None:
        self.dispatch(self)

    def log_message(self, format: str, *args: object) -> None:
        return


class Service:
    """Start on ``with`` entry, stop on exit: the lifecycle every test-kit server shares."""

    def start(self) -> None:
        """Subclasses start their server and threads here."""

    def stop(self) -> None:
        """Subclasses stop what ``start`` started; must be safe to call twice."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LocalHTTPServer(Service):
    """Serves one callback on 127.0.0.1 from a daemon thread; restartable on the same port.

    ``port=0`` picks a free port at the first start; a later :meth:`start` after :meth:`stop`
    rebinds the same port so a client configured with the old URL sees the server come back.
    """

    def __init__(self, handler: Handler, *, port: int = 0, name: str = "testkit-http") -> None:
        self._handler = handler
        self._port = port
        self._name = name
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port (only meaningful once started)."""
        return self._port

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            handler_cls = type(
                "Handler", (_QuietHandler,), {"dispatch": staticmethod(self._handler)}
            )
            server = ThreadingHTTPServer(("127.0.0.1", self._port), handler_cls)
            server.daemon_threads = True
            self._port = int(server.server_address[1])
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self._name
            )
            self._thread.daemon = True
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)


def send(
    request: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    content_type: str,
    *,
    extra_headers: dict[str, str] | None = None,
) -> None:
    """Writes a complete response with Content-Length so keep-alive clients are not confused."""
    request.send_response(status)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", str(len(body)))
    for key, value in (extra_headers or {}).items():
        request.send_header(key, value)
    request.end_headers()
    if request.command != "HEAD":
        request.wfile.write(body)


def read_body(request: BaseHTTPRequestHandler, limit: int = 1 << 20) -> bytes:
    """Reads the request body up to ``limit`` bytes (the fakes never need more)."""
    length = int(request.headers.get("Content-Length") or 0)
    return request.rfile.read(min(length, limit)) if length > 0 else b""


class LoopbackService(Service):
    """A test-kit fake whose HTTP side is one :class:`LocalHTTPServer` in ``self._server``."""

    _server: LocalHTTPServer

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    @property
    def port(self) -> int:
        return self._server.port
