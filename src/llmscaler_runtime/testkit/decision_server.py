"""A fake of the Custom provider's decision server, for tests and the demo.

It follows the contract the operator relies on: ``GET {path}?serviceId=<id>`` answers with
``{"apiVersion": "llmscaling.inference.x-k8s.io/v1alpha1", "decisions": [...]}`` where each
decision carries ``namespace``, ``serviceId`` and ``replicas.active``. Everything a client must
survive can be switched on per test (:class:`FailureMode`), and every request is recorded with its
headers so a test can check what the operator actually sent (``serverHeaders``, the query).
"""

from __future__ import annotations

import enum
import json
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from llmscaler_runtime.testkit._http import LocalHTTPServer, LoopbackService, send

API_VERSION = "llmscaling.inference.x-k8s.io/v1alpha1"
DEFAULT_PATH = "/decisions"
HUGE_BODY_BYTES = 16 * 1024 * 1024


class FailureMode(enum.Enum):
    """How the server misbehaves; ``NONE`` serves the configured decisions."""

    NONE = "none"
    DOWN = "down"  # the port refuses connections (listener closed)
    RESET = "reset"  # accepts, then closes the connection without a response
    HTTP_500 = "500"
    GARBAGE = "garbage"  # 200 with bytes that are not JSON
    HTML = "html"  # 200 text/html, like a proxy's error page
    HUGE = "huge"  # 200 with a body far larger than any real reply
    WRONG_API_VERSION = "wrong-api-version"
    SLOW = "slow"  # answers correctly after ``slow_seconds``


@attrs.frozen
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]  # lower-cased names
    at: float

    @property
    def service_id(self) -> str | None:
        values = self.query.get("serviceId")
        return values[0] if values else None


class DecisionServer(LoopbackService):
    """Serves settable decisions on ``http://127.0.0.1:<port>``; see the module docstring.

    By default only the decisions whose ``serviceId`` equals the requested one are returned, as a
    well-behaved server would; ``filter_by_service_id=False`` returns every configured decision so
    a test can check that the client matches the reply instead of trusting it.
    """

    def __init__(self, *, path: str = DEFAULT_PATH, port: int = 0) -> None:
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', got {path!r}")
        self.path = path
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._decisions: list[dict[str, Any]] = []
        self._requests: list[RecordedRequest] = []
        self._mode = FailureMode.NONE
        self.filter_by_service_id = True
        self.slow_seconds = 5.0
        self._server = LocalHTTPServer(self._handle, port=port, name="decision-server")

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to put in ``spec.serverAddress``."""
        return f"http://127.0.0.1:{self.port}"

    # -- decisions --------------------------------------------------------------------------
    def set_decision(self, service_id: str, active: int, *, namespace: str = "default") -> None:
        """Replaces the decision for (namespace, serviceId), keeping the others."""
        if not isinstance(active, int) or isinstance(active, bool):
            raise TypeError("active must be an int")
        entry = {"namespace": namespace, "serviceId": service_id, "replicas": {"active": active}}
        with self._lock:
            self._decisions = [
                d
                for d in self._decisions
                if not (d.get("serviceId") == service_id and d.get("namespace") == namespace)
            ]
            self._decisions.append(entry)

    def set_decisions(self, decisions: Sequence[Mapping[str, Any]]) -> None:
        """Sets the raw decision list verbatim, malformed entries included (for error tests)."""
        with self._lock:
            # a JSON round trip, not kube.deep_copy: store what the wire will carry (any Mapping
            # becomes a dict) and refuse a value JSON cannot encode now, not on the first request
            self._decisions = [json.loads(json.dumps(d)) for d in decisions]

    def clear_decisions(self) -> None:
        with self._lock:
            self._decisions = []

    # -- failure modes ----------------------------------------------------------------------
    @property
    def mode(self) -> FailureMode:
        return self._mode

    def set_mode(self, mode: FailureMode) -> None:
        """Switches behaviour; ``DOWN`` closes the listener and leaving it rebinds the same port."""
        with self._lock:
            previous, self._mode = self._mode, mode
        if mode is FailureMode.DOWN and previous is not FailureMode.DOWN:
            self._server.stop()
        elif mode is not FailureMode.DOWN and previous is FailureMode.DOWN:
            self._server.start()

    # -- request log ------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests = []

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Blocks until at least ``count`` requests in total have been recorded."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._requests) >= count, timeout=timeout)

    # -- serving ----------------------------------------------------------------------------
    def _reply_body(self, service_id: str | None, api_version: str) -> bytes:
        with self._lock:
            decisions = [
                d
                for d in self._decisions
                if not self.filter_by_service_id or d.get("serviceId") == service_id
            ]
        return json.dumps({"apiVersion": api_version, "decisions": decisions}).encode()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        recorded = RecordedRequest(
            method=request.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in request.headers.items()},
            at=time.time(),
        )
        with self._cond:
            self._requests.append(recorded)
            self._cond.notify_all()
            mode = self._mode
        if mode is FailureMode.RESET:
            request.close_connection = True
            request.wfile.flush()
            request.connection.close()
            return
        if parts.path != self.path:
            send(request, 404, b'{"error": "not found"}', "application/json")
            return
        if request.command not in ("GET", "HEAD"):
            send(request, 405, b'{"error": "method not allowed"}', "application/json")
            return
        if mode is FailureMode.HTTP_500:
            send(request, 500, b'{"error": "internal error"}', "application/json")
        elif mode is FailureMode.GARBAGE:
            send(request, 200, b"\x00\xffnot json{{", "application/json")
        elif mode is FailureMode.HTML:
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            send(request, 200, page, "text/html")
        elif mode is FailureMode.HUGE:
            body = b'{"apiVersion": "' + API_VERSION.encode() + b'", "padding": "'
            body += b"x" * HUGE_BODY_BYTES + b'", "decisions": []}'
            send(request, 200, body, "application/json")
        elif mode is FailureMode.WRONG_API_VERSION:
            body = self._reply_body(recorded.service_id, "llmscaling.inference.x-k8s.io/v2")
            send(request, 200, body, "application/json")
        else:
            if mode is FailureMode.SLOW:
                time.sleep(self.slow_seconds)  # the behaviour under test is the delay itself
            send(
                request, 200, self._reply_body(recorded.service_id, API_VERSION), "application/json"
            )
