"""Metric sources gone wrong: one scripted HTTP server per campaign row.

A row's server answers in one of three phases: ``good`` (the healthy signal that keeps the fleet
at its size), ``fault`` (the row's misbehaviour) and ``recover`` (a healthy signal asking for a
scale-down, so the campaign can time how long scaling takes to resume). It speaks either the
Prometheus HTTP API (``/api/v1/query``) or the Custom provider's decision-server contract; both
are external contracts we do not own, which is why a scripted fake is allowed here. Every
request is counted with its time.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import attrs

from llmscaler_runtime.testkit._http import LocalHTTPServer, send

DECISION_API_VERSION = "llmscaling.inference.x-k8s.io/v1alpha1"
Fault = Callable[["Answer"], None]


@attrs.define
class Answer:
    """What a fault function gets: the request, and how the healthy answer would look."""

    request: BaseHTTPRequestHandler
    source: ScriptedSource
    count: int  # this request's number, from 1

    def good(self, value: float | int) -> bytes:
        return self.source.body(value)

    def send(
        self, status: int, body: bytes, ctype: str = "application/json", **headers: str
    ) -> None:
        send(self.request, status, body, ctype, extra_headers=headers or None)

    def reset(self) -> None:
        """Close the connection at once, with a TCP RST and no response."""
        sock = self.request.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.request.close_connection = True
        sock.close()


class ScriptedSource:
    """A Prometheus or decision server whose answers a campaign row scripts, phase by phase."""

    def __init__(
        self,
        kind: str,
        fault: Fault | None,
        *,
        good_value: float | int,
        recover_value: float | int,
        namespace: str,
        service_id: str = "svc",
    ) -> None:
        if kind not in ("prometheus", "decision"):
            raise ValueError(kind)
        self.kind = kind
        self.fault = fault
        self.good_value = good_value
        self.recover_value = recover_value
        self.namespace = namespace
        self.service_id = service_id
        self.phase = "good"
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self.requests: list[tuple[float, str]] = []  # (monotonic time, phase)
        self._server = LocalHTTPServer(self._handle, name=f"fault-{kind}")

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self.stop_event.set()
        self._server.stop()

    def set_phase(self, phase: str, *, listening: bool = True) -> None:
        """Switch phase; ``listening=False`` closes the port (connections are refused)."""
        with self._lock:
            self.phase = phase
        if listening:
            self._server.start()  # same port: a closed port comes back where it was
        else:
            self._server.stop()

    def requests_in(self, phase: str) -> int:
        with self._lock:
            return sum(1 for _, p in self.requests if p == phase)

    # -- answers -----------------------------------------------------------------------------

    def body(self, value: float | int) -> bytes:
        if self.kind == "prometheus":
            doc: dict[str, Any] = {
                "status": "success",
                "data": {
                    "resultType": "vector",
                    "result": [{"metric": {}, "value": [time.time(), str(value)]}],
                },
            }
        else:
            doc = {
                "apiVersion": DECISION_API_VERSION,
                "decisions": [
                    {
                        "namespace": self.namespace,
                        "serviceId": self.service_id,
                        "replicas": {"active": value},
                    }
                ],
            }
        return json.dumps(doc).encode()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        with self._lock:
            phase = self.phase
            self.requests.append((time.monotonic(), phase))
            count = sum(1 for _, p in self.requests if p == phase)
        if phase == "fault" and self.fault is None:
            # "Down": new connections are refused (the port is closed); a request on a
            # connection kept alive from before gets a reset, as from a killed process.
            Answer(request, self, count).reset()
            return
        if phase == "fault" and self.fault is not None:
            try:
                self.fault(Answer(request, self, count))
            except OSError:
                pass  # the client gave up first: that is the point of several faults
            return
        value = self.recover_value if phase == "recover" else self.good_value
        send(request, 200, self.body(value), "application/json")


# -- the faults ----------------------------------------------------------------------------------


def status(code: int, body: bytes = b"error", **headers: str) -> Fault:
    return lambda a: a.send(code, body, "text/plain", **headers)


def body(raw: bytes, ctype: str = "application/json") -> Fault:
    return lambda a: a.send(200, raw, ctype)


def prom_value(text: str) -> Fault:
    doc = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.0, text]}]},
    }
    return body(json.dumps(doc).encode())


def prom_result(result: list[Any], result_type: str = "vector") -> Fault:
    doc = {"status": "success", "data": {"resultType": result_type, "result": result}}
    return body(json.dumps(doc).encode())


def decision(doc: dict[str, Any]) -> Fault:
    return body(json.dumps(doc).encode())


def active(value: Any, *, namespace: str = "", service_id: str = "svc") -> Callable[[Answer], None]:
    def fault(a: Answer) -> None:
        doc = {
            "apiVersion": DECISION_API_VERSION,
            "decisions": [
                {
                    "namespace": namespace or a.source.namespace,
                    "serviceId": service_id,
                    "replicas": {"active": value},
                }
            ],
        }
        a.send(200, json.dumps(doc).encode())

    return fault


def slow(seconds: float) -> Fault:
    """A correct answer, but later than the manager's request timeout."""

    def fault(a: Answer) -> None:
        if not a.source.stop_event.wait(seconds):
            a.send(200, a.good(a.source.good_value))

    return fault


def trickle(interval: float, total: float) -> Fault:
    """A healthy-looking response that drips one byte per ``interval`` for ``total`` seconds."""

    def fault(a: Answer) -> None:
        payload = a.good(a.source.good_value)
        a.request.send_response(200)
        a.request.send_header("Content-Type", "application/json")
        a.request.send_header("Content-Length", str(len(payload)))
        a.request.end_headers()
        end = time.monotonic() + total
        for i in range(len(payload)):
            if time.monotonic() > end or a.source.stop_event.wait(interval):
                break
            a.request.wfile.write(payload[i : i + 1])
            a.request.wfile.flush()
        a.request.close_connection = True

    return fault


def close_mid_body(a: Answer) -> None:
    payload = a.good(a.source.good_value)
    a.request.send_response(200)
    a.request.send_header("Content-Type", "application/json")
    a.request.send_header("Content-Length", str(len(payload) + 500))
    a.request.end_headers()
    a.request.wfile.write(payload[: len(payload) // 2])
    a.request.wfile.flush()
    a.reset()


def huge(a: Answer) -> None:
    """A valid-looking JSON answer of 24 MiB: far above the manager's response cap."""
    padding = b" " * (24 * 1024 * 1024)
    a.send(200, b'{"status":"success","data":{"resultType":"vector","result":[' + padding + b"]}}")


def flapping(a: Answer) -> None:
    """Every other answer fails: valid, 500, valid, 500, ..."""
    if a.count % 2:
        a.send(500, b"flap", "text/plain")
    else:
        a.send(200, a.good(a.source.good_value))


def reset(a: Answer) -> None:
    a.reset()
