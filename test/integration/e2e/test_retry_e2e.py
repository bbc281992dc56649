"""Retries against a failing metric source, with the real manager process (issue 12).

A scaler with ``syncPeriodSeconds: 6`` and ``retryPeriodSeconds: 1`` whose source answers HTTP
500 is re-synced every second. Each of those retries must reach the source: the manager used to
share the failed answer for the whole 6 s tick, so the source saw one request per tick and
``retryPeriodSeconds`` did nothing for metric failures. Both providers go through the same
transport, so both are checked: Prometheus (a scripted endpoint that fails on demand) and the
Custom provider (the test kit's decision server in its HTTP 500 mode).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from llmscaler_runtime.testkit._http import LocalHTTPServer, LoopbackService, send
from llmscaler_runtime.testkit.decision_server import DecisionServer, FailureMode
from test.integration.e2e.conftest import decided_scaler, deployment, scaler
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration]

SYNC, RETRY = 6, 1
RETRIES = 4  # retries looked at: with one request per tick they alone would span 24 s


class FailingPrometheus(LoopbackService):
    """``/api/v1/query`` answering HTTP 500 (as Prometheus does for an internal error) until
    :meth:`recover` makes it answer one sample; every query's arrival time is recorded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: str | None = None
        self.arrivals: list[float] = []
        self._server = LocalHTTPServer(self._handle, name="failing-prometheus")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def recover(self, value: str) -> None:
        with self._lock:
            self._value = value

    def times(self) -> list[float]:
        with self._lock:
            return list(self.arrivals)

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        if parts.path != "/api/v1/query" or not parse_qs(parts.query).get("query"):
            send(request, 404, b"404 page not found\n", "text/plain")
            return
        with self._lock:
            self.arrivals.append(time.monotonic())
            value = self._value
        if value is None:
            body = {"status": "error", "errorType": "internal", "error": "storage unavailable"}
            send(request, 500, json.dumps(body).encode(), "application/json")
            return
        data = {"resultType": "vector", "result": [{"metric": {}, "value": [time.time(), value]}]}
        send(
            request,
            200,
            json.dumps({"status": "success", "data": data}).encode(),
            "application/json",
        )


@pytest.fixture
def failing_prometheus() -> Iterator[FailingPrometheus]:
    with FailingPrometheus() as server:
        yield server


@pytest.fixture
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _ready(kube: Any, ns: str, name: str, n: int) -> bool:
    return kube.get("apps/v1", "Deployment", name, ns).get("status", {}).get("readyReplicas") == n


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(kube.get("apps/v1", "Deployment", name, ns)["spec"]["replicas"])


def _syncs(manager: ManagerProcess, result: str, reason: str) -> float:
    """``llmscaler_scaler_syncs_total{result, reason}`` from the manager's metrics endpoint."""
    pattern = (
        rf'^llmscaler_scaler_syncs_total\{{(?=[^}}]*result="{result}")'
        rf'(?=[^}}]*reason="{reason}")[^}}]*\}}\s+([0-9.e+]+)$'
    )
    m = re.search(pattern, manager.metrics(), re.M)
    return float(m.group(1)) if m else 0.0


def _assert_retried_every_period(times: list[float]) -> None:
    """The first ``RETRIES`` retries after the first failure came about ``RETRY`` s apart."""
    span = times[RETRIES] - times[0]
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(times)]
    # RETRIES retry periods are 4 s; one request per 6 s tick would make it at least 18 s
    assert span < SYNC, f"{RETRIES} retries took {span:.1f}s (gaps {gaps})"


def test_a_failing_prometheus_is_asked_again_every_retry_period(
    kube: Any, namespace: str, manager: ManagerProcess, failing_prometheus: FailingPrometheus
) -> None:
    ns, app = namespace, "flaky-prom"
    kube.create(deployment(app, ns, 1))
    wait_for(lambda: _ready(kube, ns, app, 1), timeout=30, what="1 ready replica")
    kube.create(
        scaler(
            app,
            ns,
            app,
            failing_prometheus.url,
            metrics=[{"name": "load", "query": f'load{{namespace="{ns}"}}', "target": "1"}],
            syncPeriodSeconds=SYNC,
            retryPeriodSeconds=RETRY,
        )
    )
    times = wait_for(
        lambda: (t := failing_prometheus.times()) and len(t) > RETRIES and t,
        timeout=SYNC * RETRIES,  # what the old behaviour would need: the test fails, not hangs
        what=f"{RETRIES + 1} queries to the failing Prometheus",
        diagnostics=lambda: f"queries at {failing_prometheus.times()}\n{manager.logs()}",
    )
    _assert_retried_every_period(times)
    assert _replicas(kube, ns, app) == 1  # nothing is decided on a failing source
    # The controller's error counter never sees these (reconcile catches them); this does.
    failed = _syncs(manager, "retry", "FailedGetMetrics")
    assert failed >= RETRIES, f"{failed} failed syncs counted for {len(times)} queries"

    # Once Prometheus answers again, the next retry uses the answer: 1 replica at 3x the target.
    failing_prometheus.recover("3")
    wait_for(
        lambda: _replicas(kube, ns, app) == 3,
        timeout=15,
        what="scale-up to 3 once Prometheus answers",
        diagnostics=manager.logs,
    )
    wait_for(
        lambda: _syncs(manager, "success", "Scaling") >= 1,
        timeout=15,
        what="a successful sync counted in llmscaler_scaler_syncs_total",
        diagnostics=manager.metrics,
    )


def test_a_failing_decision_server_is_asked_again_every_retry_period(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    ns, app, sid = namespace, "flaky-decisions", f"retry-{namespace}"
    kube.create(deployment(app, ns, 1))
    wait_for(lambda: _ready(kube, ns, app, 1), timeout=30, what="1 ready replica")
    body = decided_scaler(
        decisions, app, ns, app, 2, service_id=sid, syncPeriodSeconds=SYNC, retryPeriodSeconds=RETRY
    )
    decisions.set_mode(FailureMode.HTTP_500)  # failing before the scaler's first sync
    kube.create(body)

    def asked() -> list[float]:
        return [r.at for r in decisions.requests if r.service_id == sid]

    times = wait_for(
        lambda: (t := asked()) and len(t) > RETRIES and t,
        timeout=SYNC * RETRIES,
        what=f"{RETRIES + 1} requests to the failing decision server",
        diagnostics=lambda: f"requests at {asked()}\n{manager.logs()}",
    )
    _assert_retried_every_period(times)
    assert _replicas(kube, ns, app) == 1

    decisions.set_mode(FailureMode.NONE)
    wait_for(
        lambda: _replicas(kube, ns, app) == 2,
        timeout=15,
        what="the decision of 2 replicas once the server answers",
        diagnostics=manager.logs,
    )
