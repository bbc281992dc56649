"""The HTTP request handler: bytes in and out, fault injection, recording, verb dispatch.

Everything that knows it is HTTP lives here and nothing else does: reading a (possibly
chunked) body, writing JSON answers and the chunked watch stream, injected latency and errors,
the request recorder, and turning exceptions into ``Status`` answers. What a path means
(routing) and what a verb does (verbs, patching, deletion, watch) is asked of the modules
that own it, which see only a :class:`~.request.Request` and answer with a
:class:`~.request.Reply`.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import ssl
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import StatusError
from ..faults import RecordedRequest
from . import deletion, patching, routing, tables, verbs, watch
from .request import Reply, Request, Resource, ServerState, method_not_allowed

_log = logging.getLogger("llmscaler_runtime.envtest.server")

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class Handler(BaseHTTPRequestHandler):
    """One connection; ``api`` is set on the subclass ``ApiServer`` builds."""

    api: ServerState
    protocol_version = "HTTP/1.1"
    server_version = "envtest-apiserver"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging (tests would drown in it)."""

    # ---- plumbing -------------------------------------------------------------------------

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self._status = code

    def _answer(self, req: Request, reply: Reply) -> None:
        """Send a verb's reply; an object becomes a Table when the client asked for one."""
        if reply.rt is None:
            return self._send(reply.code, reply.body)
        headers = {}
        if reply.warnings:
            headers["Warning"] = ", ".join(
                f'299 - "{w.replace(chr(34), chr(92) + chr(34))}"' for w in reply.warnings
            )
        obj = reply.body
        if req.want_table():
            obj = tables.table(
                reply.rt,
                reply.version,
                [obj],
                obj["metadata"].get("resourceVersion", ""),
                req.include_object(),
            )
        self._send(reply.code, obj, headers)

    def _error(self, err: StatusError) -> None:
        retry = (err.details or {}).get("retryAfterSeconds")
        self._send(err.code, err.status(), {"Retry-After": str(retry)} if retry else None)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        self._status = 0
        self._recorded = False
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        req = self._req = Request(self.api, query, self.headers)
        try:
            body = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
            faults = self.api.faults
            faults.apply_latency(method, path)
            code = faults.error_for(method, path)
            if code is not None:
                raise StatusError(
                    code,
                    _REASONS.get(code, "Unknown"),
                    f"injected fault: {code} on {method} {path}",
                    {"retryAfterSeconds": 1} if code == 429 else None,
                )
            self._route(req, method, path, body)
        except StatusError as err:
            self._error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # the server keeps serving whatever a request does
            _log.exception("envtest request failed")
            try:
                self._error(StatusError(500, "InternalError", f"Internal error occurred: {exc}"))
            except OSError:
                self.close_connection = True
        finally:
            self._record(method, path)

    def _record(self, method: str, path: str) -> None:
        """Record once per request (watches record when the stream starts)."""
        if self._recorded:
            return
        self._recorded = True
        rec = self._req.rec
        self.api.faults.record(
            RecordedRequest(
                method=method,
                path=path,
                verb=rec["verb"],
                resource=rec["resource"],
                subresource=rec["subresource"],
                namespace=rec["namespace"],
                user_agent=self.headers.get("User-Agent", ""),
                group=rec["group"],
                name=rec["name"],
                status=self._status,
            )
        )

    # ---- routing and verbs ----------------------------------------------------------------

    def _route(self, req: Request, method: str, path: str, body: bytes) -> None:
        if path in routing.HEALTH_PATHS:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            self._status = 200
            return
        api = self.api
        found = routing.resolve(api.storage.registry, method, path, api.host, api.port)
        if isinstance(found, routing.Document):
            return self._send(200, found.body)
        req.rec.update(
            resource=found.plural,
            group=found.group,
            namespace=found.namespace or "",
            name=found.name or "",
            subresource=found.sub or "",
        )
        rt, namespace = routing.lookup(api.storage.registry, found)
        res = Resource(rt, found.version, namespace, found.name, found.sub)
        reply = self._verb(req, method, res, body)
        if reply is not None:
            self._answer(req, reply)

    def _verb(self, req: Request, method: str, res: Resource, body: bytes) -> Reply | None:
        """Run the verb; None when it wrote its own response (a watch)."""
        if method == "GET" and res.name is None:
            watching = req.query.get("watch") in ("true", "1")
            req.validate_list_options(watching)
            if watching:
                req.rec["verb"] = "watch"
                watch.serve(req, _HandlerStream(self), res)
                return None
            return verbs.list_objects(req, res)
        if method == "GET":
            return verbs.get(req, res)
        if method == "POST":
            return verbs.create(req, res, body)
        if method == "PUT":
            return verbs.update(req, res, body)
        if method == "PATCH":
            return patching.patch(req, res, body)
        if method == "DELETE":
            return deletion.delete(req, res, body)
        raise method_not_allowed()


class _HandlerStream:
    """A watch's :class:`~.watch.Stream` over the handler's connection (chunked encoding)."""

    def __init__(self, handler: Handler) -> None:
        self._h = handler

    def begin(self) -> None:
        h = self._h
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache, private")
        h.end_headers()
        h._status = 200
        h._record("GET", urlsplit(h.path).path.rstrip("/"))

    def chunk(self, data: bytes) -> None:
        self._h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self._h.wfile.flush()

    def client_gone(self) -> bool:
        conn = self._h.connection
        try:
            readable, _, _ = select.select([conn], [], [], 0)
            if not readable:
                return False
            if isinstance(conn, ssl.SSLSocket):
                return False  # TLS records cannot be peeked; a closed peer shows on next write
            return conn.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def end(self) -> None:
        try:
            self._h.wfile.write(b"0\r\n\r\n")
            self._h.wfile.flush()
        except OSError:
            pass
        self._h.close_connection = True

    def abort(self) -> None:
        self._h.close_connection = True


__all__ = ["Handler"]
