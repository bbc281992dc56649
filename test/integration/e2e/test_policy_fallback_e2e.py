"""spec.fallback and spec.schedules end to end: the real manager process, a fake decision server.

One manager serves the module. A scaler fails as long as the decision server has no decision
for its serviceId (the server answers, but nothing matches: an unusable reply), so each test
controls its own scaler's signal without disturbing the other.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import Weekday
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


def _await_replicas(
    kube: Any, ns: str, name: str, replicas: int, what: str, manager: ManagerProcess
) -> None:
    wait_for(
        lambda: _replicas(kube, ns, name) == replicas,
        timeout=30,
        what=what,
        diagnostics=manager.logs,
    )


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

    _await_replicas(kube, ns, app, 3, "the fallback count of 3 replicas", manager)
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
    _await_replicas(kube, ns, app, 2, "the decision of 2 replicas once the server answers", manager)
    wait_for(
        lambda: _condition(kube, ns, app, "ScalingActive").get("reason") == "ValidDecisionFound",
        timeout=15,
        what="ScalingActive back to ValidDecisionFound",
    )
    (ended,) = _event(kube, ns, app, "FallbackEnded")
    assert ended["type"] == "Normal"


def _open_now() -> tuple[str, dt.datetime]:
    """A zone whose local time is far enough from midnight for a window around it, and that
    local time (the test must not depend on the hour it runs at)."""
    for zone in ("UTC", "Asia/Tokyo", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"):
        local = dt.datetime.now(zoneinfo.ZoneInfo(zone))
        if 2 <= local.hour <= 21:
            return zone, local
    raise AssertionError("no candidate zone is between 02:00 and 22:00")  # never: 5 spread zones


def test_a_schedule_open_now_raises_the_floor_and_closing_it_lets_go(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    ns, app, sid = namespace, "scheduled", f"scheduled-{namespace}"
    zone, local = _open_now()
    today = tuple(Weekday)[local.weekday()].value
    other = tuple(Weekday)[(local.weekday() + 1) % 7].value
    around_now = {
        "name": "now",
        "timeZone": zone,
        "days": [today],
        "start": f"{local.hour - 1:02d}:00",
        "end": f"{local.hour + 2:02d}:00",
        "minReplicas": 3,
    }
    tomorrow = {**around_now, "name": "tomorrow", "days": [other], "minReplicas": 5}
    kube.create(deployment(app, ns, 1))
    kube.create(
        decided_scaler(decisions, app, ns, app, 1, service_id=sid, schedules=[around_now, tomorrow])
    )

    _await_replicas(kube, ns, app, 3, "the open window's minReplicas of 3", manager)
    limited = wait_for(
        lambda: (
            (c := _condition(kube, ns, app, "ScalingLimited")).get("reason") == "TooFewReplicas"
            and c
        ),
        timeout=15,
        what="ScalingLimited naming the open schedule",
    )
    assert "minReplicas (3) while schedule 'now' is open" in limited["message"], limited

    # the window no longer opens today: the spec's bounds return and the decision of 1 rules
    closed = {**around_now, "days": [other]}
    kube.patch(LLMSCALER, "LLMScaler", app, {"spec": {"schedules": [closed, tomorrow]}}, ns)
    _await_replicas(
        kube, ns, app, 1, "the decision of 1 replica once the window is closed", manager
    )
