"""A tiny scripted Kubernetes API on 127.0.0.1 for client tests.

Each expected exchange states the method, path, query, content type and body the client must
send and what to answer. Discovery documents are served outside the script so tests only
script the calls they are about. A mismatch is answered with HTTP 599 and recorded, so the
client raises and the test fails with the recorded explanation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs

DISCOVERY: dict[str, dict[str, Any]] = {
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "list"]},
            {"name": "pods/status", "kind": "Pod", "namespaced": True, "verbs": ["get"]},
            {"name": "pods/eviction", "kind": "Eviction", "namespaced": True, "verbs": ["create"]},
            {"name": "namespaces", "kind": "Namespace", "namespaced": False, "verbs": ["get"]},
            {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["get"]},
        ],
    },
    "/apis/apps/v1": {
        "kind": "APIResourceList",
        "groupVersion": "apps/v1",
        "resources": [
            {"name": "deployments", "kind": "Deployment", "namespaced": True, "verbs": ["get"]},
            {
                "name": "deployments/scale",
                "kind": "Scale",
                "namespaced": True,
                "group": "autoscaling",
                "version": "v1",
            },
            {"name": "deployments/status", "kind": "Deployment", "namespaced": True},
        ],
    },
}


@attrs.define
class Exchange:
    method: str
    path: str
    query: dict[str, str] | None = None
    content_type: str | None = None
    body: Any = None
    status: int = 200
    response: Any = None
    headers: dict[str, str] = attrs.field(factory=dict)
    stream: list[bytes] | None = None
    check_body: Callable[[Any], bool] | None = None


def status_body(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return body


class ScriptedApi:
    def __init__(self) -> None:
        self.script: list[Exchange] = []
        self.failures: list[str] = []
        self.discovery_hits: dict[str, int] = {}
        self.discovery = {k: json.loads(json.dumps(v)) for k, v in DISCOVERY.items()}
        self.requests: list[tuple[str, str, dict[str, str], dict[str, str]]] = []
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                api._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def expect(self, method: str, path: str, **kw: Any) -> None:
        with self._lock:
            self.script.append(Exchange(method, path, **kw))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _send(
        self, h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str]
    ) -> None:
        data = (
            body
            if isinstance(body, bytes)
            else json.dumps(body).encode()
            if body is not None
            else b""
        )
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append((h.command, parts.path, query, dict(h.headers.items())))
        if h.command == "GET" and parts.path in self.discovery and not query:
            with self._lock:
                self.discovery_hits[parts.path] = self.discovery_hits.get(parts.path, 0) + 1
            self._send(h, 200, self.discovery[parts.path], {})
            return
        unknown_group = parts.path.startswith("/apis/") and parts.path.count("/") == 3
        if h.command == "GET" and not query and unknown_group:
            with self._lock:
                self.discovery_hits[parts.path] = self.discovery_hits.get(parts.path, 0) + 1
            self._send(
                h,
                404,
                status_body(404, "NotFound", "the server could not find the requested resource"),
                {},
            )
            return
        with self._lock:
            exp = self.script.pop(0) if self.script else None
        problems = []
        if exp is None:
            problems.append(f"unexpected {h.command} {h.path}")
        else:
            if exp.method != h.command:
                problems.append(f"method {h.command} != {exp.method}")
            if exp.path != parts.path:
                problems.append(f"path {parts.path} != {exp.path}")
            if exp.query is not None and exp.query != query:
                problems.append(f"query {query} != {exp.query}")
            ctype = h.headers.get("Content-Type")
            if exp.content_type is not None and ctype != exp.content_type:
                problems.append(f"content-type {ctype} != {exp.content_type}")
            if exp.body is not None or exp.check_body is not None:
                try:
                    got = json.loads(raw) if raw else None
                except ValueError:
                    got = raw
                if exp.body is not None and got != exp.body:
                    problems.append(f"body {got} != {exp.body}")
                if exp.check_body is not None and not exp.check_body(got):
                    problems.append(f"body {got} rejected")
        if problems:
            with self._lock:
                self.failures.extend(problems)
            self._send(h, 599, {"problems": problems}, {})
            return
        assert exp is not None
        if exp.stream is not None:
            h.send_response(exp.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for chunk in exp.stream:
                h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
            return
        self._send(h, exp.status, exp.response, exp.headers)
