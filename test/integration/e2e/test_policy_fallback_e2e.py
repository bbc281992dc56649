"""spec.fallback and spec.schedules end to end: the real manager process, a fake decision server.

One manager serves the module. A scaler fails as long as the decision server has no decision
for its serviceId (the server answers, but nothing matches: an unusable reply), so each test
controls its own scaler's signal without disturbing the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.conftest import LLMSCALER, decided_scaler, deployment
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(kube.get("apps/v1", "Deployment", name, ns)["spec"]["replicas"])


def _condition(kube: Any, ns: str, name: str, type_: str) -> dict[str, Any]:
    obj = kube.get(LLMSCALER, "LLMScaler", name, ns)
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return {}


def _events(kube: Any, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    items = kube.list("v1", "Event", ns)["items"]
    return [
        e
        for e in items
        if e.get("involvedObject", {}).get("name") == name and e.get("reason") == reason
    ]


def _event(kube: Any, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    """The Events of ``reason`` once there is one (the recorder sends them in the background)."""
    return wait_for(
        lambda: _events(kube, ns, name, reason), timeout=15, what=f"a {reason} Event on {name}"
    )


def test_a_failing_decision_server_falls_back_after_the_threshold_and_recovers(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    ns, app, sid = namespace, "fallback", f"fallback-{namespace}"
    kube.create(deployment(app, ns, 1))
    body = decided_scaler(
        decisions,
        app,
        ns,
        app,
        1,
        service_id=sid,
        fallback={"failureThreshold": 2, "replicas": 3},
    )
    decisions.set_decisions([])  # no decision matches: every evaluation fails
    kube.create(body)

    wait_for(
        lambda: _replicas(kube, ns, app) == 3,
        timeout=30,
        what="the fallback count of 3 replicas",
        diagnostics=manager.logs,
    )
    # the third failure in a row (failureThreshold 2) is the one that scaled
    (rescale,) = _event(kube, ns, app, "SuccessfulRescale")
    assert "fallback after 3 failed evaluations in a row" in rescale["message"], rescale
    assert len([r for r in decisions.requests if r.service_id == sid]) >= 3
    (started,) = _event(kube, ns, app, "FallbackActive")
    assert started["type"] == "Warning" and "heads to 3 replicas" in started["message"]
    active = wait_for(
        lambda: (
            (c := _condition(kube, ns, app, "ScalingActive"))
            and c["reason"] == "FallbackActive"
            and c
        ),
        timeout=15,
        what="ScalingActive reason FallbackActive",
    )
    assert active["status"] == "False" and "failureThreshold (2)" in active["message"]

    # the first good answer ends the fallback: the decision drives the fleet again
    decisions.set_decision(sid, 2, namespace=ns)
    wait_for(
        lambda: _replicas(kube, ns, app) == 2,
        timeout=30,
        what="the decision of 2 replicas once the server answers",
        diagnostics=manager.logs,
    )
    wait_for(
        lambda: _condition(kube, ns, app, "ScalingActive").get("reason") == "ValidDecisionFound",
        timeout=15,
        what="ScalingActive back to ValidDecisionFound",
    )
    (ended,) = _event(kube, ns, app, "FallbackEnded")
    assert ended["type"] == "Normal"
