"""A tiny scripted HTTP server on 127.0.0.1 for provider and transport tests.

Each test sets ``server.respond`` (a function of the recorded request returning a
:class:`Reply`); the server records every request so tests can count hits and check headers.
Slow replies wait on an event that teardown sets, so no handler thread outlives a test.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import attrs
import pytest

T = TypeVar("T")


@attrs.frozen
class Seen:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


@attrs.frozen
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"
    delay: float = 0.0
    content_length: bool = True  # False: no Content-Length, close-delimited body
    drip: float = 0.0  # seconds between 16-byte pieces of the body


def json_reply(doc: Any, status: int = 200, **kw: Any) -> Reply:
    return Reply(status, json.dumps(doc).encode(), **kw)


def prom_vector(*series: tuple[dict[str, str], str]) -> Reply:
    return json_reply(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": m, "value": [1.7e9, v]} for m, v in series],
            },
        }
    )


def held(gate: threading.Event, reply: Reply) -> Callable[[Seen], Reply]:
    """A responder that answers ``reply`` only once ``gate`` is set: the attempt stays in
    flight while a test lines up the callers that are meant to share it."""

    def respond(_req: Seen) -> Reply:
        if not gate.wait(10):
            raise AssertionError("the held reply was never released")
        return reply

    return respond


def together(
    n: int,
    call: Callable[[], T],
    *,
    joined: Callable[[], int],
    gate: threading.Event,
    timeout: float = 10.0,
) -> list[T | Exception]:
    """Run ``call`` in ``n`` threads released by one barrier; set ``gate`` (the server's
    held reply, see :func:`held`) only once ``joined()`` says the other ``n - 1`` callers
    are waiting for the attempt in flight, so they cannot have arrived after it finished.
    Returns each call's result or exception."""
    barrier = threading.Barrier(n)
    outcomes: list[T | Exception] = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait(timeout)
        try:
            result: T | Exception = call()
        except Exception as exc:
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + timeout
        while joined() < n - 1:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {joined()} of {n - 1} callers joined the attempt")
            time.sleep(0.001)
    finally:
        gate.set()
        for t in threads:
            t.join(timeout)
    assert len(outcomes) == n, f"{n - len(outcomes)} callers never returned"
    return outcomes


class ScriptedServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[Seen] = []
        self.respond: Callable[[Seen], Reply] = lambda _req: Reply(404, b"{}")
        self.release = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                )
                with outer._lock:
                    outer.requests.append(seen)
                reply = outer.respond(seen)
                if reply.delay:
                    outer.release.wait(reply.delay)
                    if outer.release.is_set():
                        return
                self.send_response(reply.status)
                if reply.content_type is not None:
                    self.send_header("Content-Type", reply.content_type)
                if reply.content_length:
                    self.send_header("Content-Length", str(len(reply.body)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                try:
                    if not reply.drip:
                        self.wfile.write(reply.body)
                        return
                    for i in range(0, len(reply.body), 16):
                        self.wfile.write(reply.body[i : i + 16])
                        self.wfile.flush()
                        if outer.release.wait(reply.drip):
                            return
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *_a: None  # type: ignore[method-assign]
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def hits(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    try:
        yield srv
    finally:
        srv.close()
