"""Decisions you can read (issue 14, item 8), against the real manager process on both API
backends: a scale shows up in ``status.recentDecisions`` with from, to and what drove it, the
manager's ``/metrics`` has the scaler's own series (and drops them when the scaler is deleted),
and a steady scaler writes nothing more.

The decision server drives exact replica counts. "Nothing was written" is asserted only after
evidence that the manager evaluated the scaler several more times (its requests to the
decision server), never after a bare sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmscaler_runtime.testkit.decision_server import DecisionServer, FailureMode
from test.integration.e2e.conftest import LLMSCALER, decided_scaler, deployment
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration]

SERVICE = "decisions-svc"
SYNC = 1  # seconds: every wait below is a few periods


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _scaler(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get(LLMSCALER, "LLMScaler", name, ns)  # type: ignore[no-any-return]


def _dep(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get("apps/v1", "Deployment", name, ns)  # type: ignore[no-any-return]


def _recent(kube: Any, ns: str, name: str) -> list[dict[str, Any]]:
    return list(_scaler(kube, ns, name).get("status", {}).get("recentDecisions") or [])


def _series(manager: ManagerProcess, ns: str, name: str) -> dict[tuple[str, str], float]:
    """The manager's samples of one scaler: (sample name, the third label's value) -> value."""
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(manager.metrics()):
        for sample in family.samples:
            labels = dict(sample.labels)
            if labels.pop("namespace", None) != ns or labels.pop("name", None) != name:
                continue
            out[(sample.name, next(iter(labels.values()), ""))] = sample.value
    return out


def _requests_for(decisions: DecisionServer, service: str) -> int:
    return sum(1 for r in decisions.requests if r.service_id == service)


def test_a_scale_is_recorded_reported_and_the_steady_state_writes_nothing(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    ns, app, name = namespace, "web", "decided"
    kube.create(deployment(app, ns, 1))
    kube.create(
        decided_scaler(
            decisions,
            name,
            ns,
            app,
            3,
            service_id=SERVICE,
            min_replicas=1,
            max_replicas=5,
            syncPeriodSeconds=SYNC,
            retryPeriodSeconds=SYNC,
        )
    )

    # 1. a scale up, then a scale down: each recorded, newest first, with what drove it
    wait_for(
        lambda: [(d["from"], d["to"]) for d in _recent(kube, ns, name)] == [(1, 3)],
        timeout=30,
        what="the scale from 1 to 3 in status.recentDecisions",
        diagnostics=manager.logs,
    )
    decisions.set_decision(SERVICE, 2, namespace=ns)
    recent = wait_for(
        lambda: (r := _recent(kube, ns, name)) and len(r) == 2 and r,
        timeout=30,
        what="the scale from 3 to 2 in status.recentDecisions",
        diagnostics=manager.logs,
    )
    down, up = recent
    assert (down["from"], down["to"], down["driver"], down["value"]) == (
        3,
        2,
        "DecisionServer",
        "2",
    )
    assert (up["from"], up["to"], up["driver"], up["value"]) == (1, 3, "DecisionServer", "3")
    assert down["reason"] == "decision server asked for 2 replicas"
    status = _scaler(kube, ns, name)["status"]
    assert status["lastScaleTime"] == down["time"] >= up["time"]
    assert _dep(kube, ns, app)["spec"]["replicas"] == 2

    # 2. the manager's /metrics has this scaler's own series
    series = wait_for(
        lambda: (
            (s := _series(manager, ns, name))
            and s.get(("llmscaler_scaler_desired_replicas", "")) == 2
            and s
        ),
        timeout=15,
        what="llmscaler_scaler_desired_replicas 2 on /metrics",
    )
    assert series[("llmscaler_scaler_max_replicas", "")] == 5
    assert series[("llmscaler_scaler_min_replicas", "")] == 1
    assert series[("llmscaler_scaler_scale_events_total", "up")] == 1
    assert series[("llmscaler_scaler_scale_events_total", "down")] == 1

    # 3. steady: once the status has caught up, more evaluations write nothing at all
    def settled() -> bool:
        obj = _scaler(kube, ns, name)
        return bool(
            obj.get("status", {}).get("currentReplicas") == 2
            and _dep(kube, ns, app).get("status", {}).get("readyReplicas") == 2
        )

    wait_for(settled, timeout=30, what="the status to show 2 ready replicas")
    # one more evaluation after settling, so the status write that records it is behind us
    seen = _requests_for(decisions, SERVICE)
    wait_for(lambda: _requests_for(decisions, SERVICE) >= seen + 2, timeout=15, what="syncs")
    before = _scaler(kube, ns, name)["metadata"]["resourceVersion"]
    generation = _dep(kube, ns, app)["metadata"]["generation"]
    seen = _requests_for(decisions, SERVICE)
    wait_for(
        lambda: _requests_for(decisions, SERVICE) >= seen + 3,
        timeout=15,
        what="three more evaluations of the steady scaler",
    )
    assert _scaler(kube, ns, name)["metadata"]["resourceVersion"] == before, "status rewritten"
    assert _dep(kube, ns, app)["metadata"]["generation"] == generation, "replicas rewritten"
    assert len(_recent(kube, ns, name)) == 2

    # 4. a failing decision server: errors by reason, the record untouched
    decisions.set_mode(FailureMode.HTTP_500)
    wait_for(
        lambda: (
            _series(manager, ns, name).get(
                ("llmscaler_scaler_errors_total", "FailedGetDecision"), 0
            )
            >= 2
        ),
        timeout=15,
        what="llmscaler_scaler_errors_total{reason=FailedGetDecision}",
    )
    decisions.set_mode(FailureMode.NONE)
    assert len(_recent(kube, ns, name)) == 2

    # 5. deleted: every series of the scaler leaves /metrics
    kube.delete(LLMSCALER, "LLMScaler", name, ns)
    wait_for(
        lambda: not _series(manager, ns, name),
        timeout=15,
        what="the deleted scaler's series to leave /metrics",
        diagnostics=lambda: str(_series(manager, ns, name)),
    )
