"""Tolerance, scale-up pacing and the activation threshold, with the real manager (issue 14).

One manager process serves the module. The metric source is a scripted ``/api/v1/query``
endpoint that answers each scaler's query with the value the test set for it and counts the
queries, so "the manager held" is asserted only after it has evaluated the scaler several
times with that value, never after a bare sleep. Scale-up pacing is driven through the Custom
provider, whose decision is an exact replica count.
"""

from __future__ import annotations

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
from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.conftest import (
    LLMSCALER,
    decided_scaler,
    deployment,
    scaler,
    target_deployment,
)
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration]

EVALUATIONS = 3  # syncs that must see a value before "nothing happened" is asserted


class ScriptedPrometheus(LoopbackService):
    """``/api/v1/query`` answering each query with the value set for it (one sample, no
    labels) and counting, per query, how often it was asked since the value was set."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, str] = {}
        self._asked: dict[str, int] = {}
        self._server = LocalHTTPServer(self._handle, name="scripted-prometheus")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set(self, query: str, value: str) -> None:
        with self._lock:
            self._values[query] = value
            self._asked[query] = 0

    def asked(self, query: str) -> int:
        with self._lock:
            return self._asked.get(query, 0)

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        query = (parse_qs(parts.query).get("query") or [""])[0]
        with self._lock:
            value = self._values.get(query)
            if value is not None:
                self._asked[query] += 1
        if parts.path != "/api/v1/query" or value is None:
            send(request, 404, b"404 page not found\n", "text/plain")
            return
        data = {"resultType": "vector", "result": [{"metric": {}, "value": [time.time(), value]}]}
        body = json.dumps({"status": "success", "data": data}).encode()
        send(request, 200, body, "application/json")


@pytest.fixture(scope="module")
def source() -> Iterator[ScriptedPrometheus]:
    with ScriptedPrometheus() as server:
        yield server


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(target_deployment(kube, ns, name)["spec"]["replicas"])


def _ready(kube: Any, ns: str, name: str) -> int:
    return int(target_deployment(kube, ns, name).get("status", {}).get("readyReplicas") or 0)


def _deploy(kube: Any, ns: str, name: str, replicas: int) -> None:
    kube.create(deployment(name, ns, replicas))
    wait_for(
        lambda: _ready(kube, ns, name) == replicas and _replicas(kube, ns, name) == replicas,
        timeout=30,
        what=f"deployment {name} with {replicas} ready replicas",
    )


def _able(kube: Any, ns: str, name: str) -> dict[str, Any]:
    obj = kube.get(LLMSCALER, "LLMScaler", name, ns)
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == "AbleToScale":
            return c  # type: ignore[no-any-return]
    return {}


def _rescales(kube: Any, ns: str, name: str) -> list[tuple[int, int, str]]:
    """The scaler's SuccessfulRescale Events as (was, new size, message), in the order of the
    climb (Event timestamps have one-second resolution, steps are a second apart)."""
    out = []
    for e in kube.list("v1", "Event", ns)["items"]:
        if e.get("involvedObject", {}).get("name") != name:
            continue
        if e.get("reason") != "SuccessfulRescale":
            continue
        message = str(e.get("message"))
        size, was = map(int, re.findall(r"New size: (\d+) \(was (\d+)\)", message)[0])
        out.append((was, size, message))
    return sorted(out)


def _answer(
    source: ScriptedPrometheus,
    kube: Any,
    where: tuple[str, str, str],
    value: str,
    replicas: int,
    *,
    held: bool,
    manager: ManagerProcess,
) -> None:
    """Answer ``value`` for the scaler's query, then either check that the manager evaluated
    it several times and left ``replicas`` alone (``held``) or wait for it to set them."""
    ns, name, query = where
    source.set(query, value)
    if held:
        wait_for(
            lambda: source.asked(query) > EVALUATIONS,
            timeout=15,
            what=f"{EVALUATIONS + 1} evaluations of {value}",
            diagnostics=manager.logs,
        )
        assert _replicas(kube, ns, name) == replicas, f"{value} changed the replica count"
        return
    wait_for(
        lambda: _replicas(kube, ns, name) == replicas,
        timeout=15,
        what=f"{replicas} replicas once the metric reads {value}",
        diagnostics=manager.logs,
    )


def test_tolerance_holds_inside_the_band_and_scales_outside_it(
    kube: Any, namespace: str, manager: ManagerProcess, source: ScriptedPrometheus
) -> None:
    """5 ready replicas, target 1, band [0.75, 1.2]: 0.78 and 1.15 (which would vote 4 and 6
    without a band) hold 5; 1.3 is outside and votes ceil(5 * 1.3) = 7."""
    ns, app = namespace, "banded"
    query = f'load{{namespace="{ns}", app="{app}"}}'
    _deploy(kube, ns, app, 5)
    source.set(query, "1")
    kube.create(
        scaler(
            app,
            ns,
            app,
            source.url,
            max_replicas=10,
            metrics=[{"name": "load", "query": query, "target": "1"}],
            scaleUp={"tolerance": "0.2"},
            scale_down={"tolerance": "0.25"},
        )
    )
    wait_for(
        lambda: _able(kube, ns, app).get("reason") == "ReadyForNewScale",
        timeout=20,
        what="the scaler's first evaluation",
        diagnostics=manager.logs,
    )
    where = (ns, app, query)
    _answer(source, kube, where, "0.78", 5, held=True, manager=manager)
    _answer(source, kube, where, "1.15", 5, held=True, manager=manager)
    _answer(source, kube, where, "1.3", 7, held=False, manager=manager)


def test_scale_up_window_and_step_cap_pace_a_burst(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    """A decision jumping from 1 to 9 with a 4 s scale-up window and 3 replicas a step: the
    condition says ScaleUpStabilized first, nothing is written for about a window, then the
    fleet climbs 1 -> 4 -> 7 -> 9, each capped step an Event that says what held it."""
    ns, app, sid = namespace, "paced", f"paced-{namespace}"
    window = 4
    _deploy(kube, ns, app, 1)
    body = decided_scaler(
        decisions,
        app,
        ns,
        app,
        1,
        service_id=sid,
        max_replicas=12,
        scaleUp={"stabilizationWindowSeconds": window, "maxStepReplicas": 3},
    )
    kube.create(body)
    # the restart seed holds scale-up for one window too; wait until the fleet is steady at 1
    wait_for(
        lambda: _able(kube, ns, app).get("reason") == "ReadyForNewScale",
        timeout=20,
        what="the scaler steady at 1 replica",
        diagnostics=manager.logs,
    )
    decisions.set_decision(sid, 9, namespace=ns)
    changed = time.monotonic()
    wait_for(
        lambda: _able(kube, ns, app).get("reason") == "ScaleUpStabilized",
        timeout=10,
        what="AbleToScale=ScaleUpStabilized while the window holds",
        diagnostics=manager.logs,
    )
    assert _replicas(kube, ns, app) == 1
    wait_for(lambda: _replicas(kube, ns, app) > 1, timeout=15, what="the first scale-up step")
    # the last decision of 1 was asked at most a sync (1 s) before the change
    assert time.monotonic() - changed >= window - 1.5, "the scale-up window did not hold"
    wait_for(
        lambda: _replicas(kube, ns, app) == 9,
        timeout=20,
        what="the climb to 9",
        diagnostics=manager.logs,
    )
    steps = wait_for(
        lambda: (m := _rescales(kube, ns, app)) and len(m) >= 3 and m,
        timeout=10,
        what="three SuccessfulRescale Events",
    )
    assert [(was, size) for was, size, _ in steps] == [(1, 4), (4, 7), (7, 9)], steps
    assert all("held by scale-up-step-cap" in m for _, _, m in steps[:2]), steps
    assert "held by" not in steps[2][2], steps
    status = kube.get(LLMSCALER, "LLMScaler", app, ns)["status"]
    assert status["desiredReplicas"] == 9


def test_activation_threshold_keeps_the_fleet_at_zero_until_the_value_exceeds_it(
    kube: Any, namespace: str, manager: ManagerProcess, source: ScriptedPrometheus
) -> None:
    """At zero replicas, 2 (= the threshold, which alone would wake 2 replicas) keeps the
    fleet asleep; 2.5 wakes it to ceil(1 * 2.5 / 1) = 3."""
    ns, app = namespace, "asleep"
    query = f'queue{{namespace="{ns}", app="{app}"}}'
    kube.create(deployment(app, ns, 0))
    kube.create(
        scaler(
            app,
            ns,
            app,
            source.url,
            min_replicas=0,
            max_replicas=5,
            metrics=[{"name": "queue", "query": query, "target": "1", "activationThreshold": "2"}],
        )
    )
    where = (ns, app, query)
    _answer(source, kube, where, "2", 0, held=True, manager=manager)
    _answer(source, kube, where, "2.5", 3, held=False, manager=manager)
