"""The Manager's HTTP endpoints: ``/healthz`` + ``/readyz`` probes and ``/metrics``.

Probes follow the Kubernetes/controller-runtime convention: named checks, ``200 ok`` when all
pass, ``?verbose`` lists each check as ``[+]name ok`` / ``[-]name failed: reason``, and
``/readyz/<name>`` runs one check. A failing probe answers 503 so that kubelet (and tests) can
tell "not ready yet" from a crashed handler.

Sockets are bound when the server object is built, so a bad address fails fast at construction
and the chosen port (``127.0.0.1:0`` in tests) is known before anything is served.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from llmscaler_runtime.log import get_logger

__all__ = ["Check", "HealthChecks", "HttpServer", "parse_bind_address"]

#: A probe check: returns None/True when healthy, False when not, or raises with the reason.
Check = Callable[[], bool | None]

_log = get_logger(__name__)


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``":8080"`` -> all interfaces; ``"127.0.0.1:0"`` -> loopback, random port; ``"0"`` or
    ``""`` -> disabled (None). ``"[::1]:0"`` for IPv6."""
    if address in ("0", ""):
        return None
    host, sep, port_s = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must look like 'host:port', ':port' or '0'")
    try:
        port = int(port_s)
    except ValueError:
        raise ValueError(f"bind address {address!r} has a non-numeric port") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"bind address {address!r}: port out of range")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


class HealthChecks:
    """A named, ordered set of checks; thread-safe to add to while being served."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._checks: dict[str, Check] = {}
        self._lock = threading.Lock()

    def add(self, name: str, check: Check) -> None:
        if not name or "/" in name:
            raise ValueError(f"check name {name!r} must be non-empty and contain no '/'")
        with self._lock:
            if name in self._checks:
                raise ValueError(f"{self.kind} check {name!r} already registered")
            self._checks[name] = check

    def names(self) -> list[str]:
        with self._lock:
            return list(self._checks)

    def run(self, only: str | None = None) -> tuple[bool, list[tuple[str, str | None]]]:
        """Run checks (or just ``only``); returns (all ok, [(name, failure reason or None)])."""
        with self._lock:
            items = list(self._checks.items())
        if only is not None:
            items = [(n, c) for n, c in items if n == only]
            if not items:
                raise KeyError(only)
        results: list[tuple[str, str | None]] = []
        for name, check in items:
            try:
                ok = check()
                reason = None if ok is None or ok else "check returned false"
            except Exception as exc:
                reason = str(exc) or type(exc).__name__
            results.append((name, reason))
        return all(r is None for _, r in results), results


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class HttpServer:
    """A tiny threaded HTTP server; ``routes`` maps a path prefix to a handler."""

    def __init__(
        self,
        name: str,
        address: tuple[str, int],
        handler: Callable[[str, dict[str, list[str]]], tuple[int, str, bytes]],
    ) -> None:
        self.name = name
        outer = handler

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                try:
                    status, ctype, body = outer(parts.path, parse_qs(parts.query, True))
                except Exception as exc:  # a broken handler answers 500, never kills the server
                    status, ctype, body = 500, "text/plain", f"internal error: {exc}\n".encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # probes hit every few seconds; request logs would drown real ones

        host, port = address
        cls = _Server6 if ":" in host else _Server
        self._httpd = cls((host, port), _Handler)
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"http-{self.name}",
                daemon=True,
            )
            self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(5)
        self._httpd.server_close()


def probe_handler(
    healthz: HealthChecks, readyz: HealthChecks
) -> Callable[[str, dict[str, list[str]]], tuple[int, str, bytes]]:
    """Serve ``/healthz[/<name>]`` and ``/readyz[/<name>]``."""

    def handle(path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        segments = [s for s in path.split("/") if s]
        if not segments or segments[0] not in ("healthz", "readyz") or len(segments) > 2:
            return 404, "text/plain", b"404 page not found\n"
        checks = healthz if segments[0] == "healthz" else readyz
        only = segments[1] if len(segments) == 2 else None
        try:
            ok, results = checks.run(only)
        except KeyError:
            return 404, "text/plain", f"no {checks.kind} check named {only}\n".encode()
        verbose = "verbose" in query
        status = 200 if ok else 503
        if not verbose and ok:
            return status, "text/plain; charset=utf-8", b"ok"
        lines = [f"[+]{n} ok" if r is None else f"[-]{n} failed: {r}" for n, r in results]
        lines.append(f"{checks.kind} check {'passed' if ok else 'failed'}")
        return status, "text/plain; charset=utf-8", ("\n".join(lines) + "\n").encode()

    return handle


def metrics_handler(
    registry: CollectorRegistry,
) -> Callable[[str, dict[str, list[str]]], tuple[int, str, bytes]]:
    """Serve the registry in the Prometheus text format on ``/metrics``."""

    def handle(path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        if path.rstrip("/") != "/metrics":
            return 404, "text/plain", b"404 page not found\n"
        return 200, CONTENT_TYPE_LATEST, generate_latest(registry)

    return handle
