"""``ApiServer``: the listening socket, its serving thread, and the state requests share.

It holds the storage, the fault injector and the watch settings, and builds the handler class
bound to them; it answers no request itself (that is the handler's and the verb modules').
"""

from __future__ import annotations

import ssl
import threading
from http.server import ThreadingHTTPServer

from ..faults import Faults
from ..storage import Storage
from .handler import Handler


class ApiServer:
    """Owns the storage, the faults and the listening socket."""

    def __init__(
        self,
        storage: Storage,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        bookmark_interval: float = 60.0,
        default_watch_timeout: float = 1800.0,
    ) -> None:
        self.storage = storage
        self.faults = Faults()
        self.faults.drop_watches_hook = storage.drop_watches
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self._stopping = threading.Event()
        handler = type("Handler", (Handler,), {"api": self})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 256
        if ssl_context is not None:
            self.httpd.socket = ssl_context.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if ssl_context is not None else "http"
        self.host = host
        self.port = int(self.httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="envtest-apiserver",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self.storage.drop_watches()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


__all__ = ["ApiServer"]
