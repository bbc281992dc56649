"""Advisory mode: the whole pipeline runs, nothing reaches the target or its pods."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from llmscaler_runtime.scaling.advisory import advice_changed, is_advisory, writers
from llmscaler_runtime.scaling.pause import PAUSED_REPLICAS_ANNOTATION
from llmscaler_runtime.scaling.status import ConditionDraft

from .fakes import deployment, pod, scaler_obj
from .test_reconciler import RETRY, SYNC, World


@pytest.fixture
def w() -> World:
    return World()


def advisory_obj(name: str = "s", **kw: Any) -> dict[str, Any]:
    obj = scaler_obj(name, **kw)
    obj["spec"]["advisory"] = True
    return obj


def fleet(w: World, replicas: int) -> None:
    w.cluster.put(deployment(replicas=replicas))
    for i in range(replicas):
        w.cluster.put(pod(f"p{i}", f"2026-01-01T00:00:0{i}Z"))


def target_writes(w: World) -> list[Any]:
    return [c for c in w.cluster.calls if not (c.kind == "LLMScaler" and c.subresource)]


def test_is_advisory_reads_spec_advisory_of_a_raw_scaler() -> None:
    assert is_advisory(advisory_obj())
    assert not is_advisory(scaler_obj())
    assert not is_advisory({"spec": {"advisory": "true"}})  # only a real boolean counts
    assert not is_advisory({})
    assert writers([advisory_obj("a"), scaler_obj("b")]) == [scaler_obj("b")]


def test_advice_changed_compares_reason_and_message() -> None:
    from llmscaler_runtime.api.v1alpha1 import LLMScalerStatus

    draft = ConditionDraft("Advisory", True, "WouldRescale", "Would set 5")
    condition = {
        "type": "Advisory",
        "status": "True",
        "reason": "WouldRescale",
        "message": "Would set 5",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    assert advice_changed(LLMScalerStatus(), draft)
    assert not advice_changed(LLMScalerStatus.from_dict({"conditions": [condition]}), draft)
    moved = {**condition, "message": "Would set 6"}
    assert advice_changed(LLMScalerStatus.from_dict({"conditions": [moved]}), draft)


def test_an_advisory_scale_down_writes_nothing_and_reports_what_it_would(w: World) -> None:
    w.cluster.put(advisory_obj(step=2))
    fleet(w, 6)
    w.fetcher.set_value(0.5)  # asks for 3; the step cap would write 4
    with structlog.testing.capture_logs() as logs:
        assert w.sync() == SYNC
    assert target_writes(w) == []
    status = w.status()
    assert status["desiredReplicas"] == 3 and status["currentReplicas"] == 6
    assert "lastScaleTime" not in status
    able = w.condition("AbleToScale")
    assert (able["status"], able["reason"]) == ("False", "Advisory")
    advice = w.condition("Advisory")
    assert (advice["status"], advice["reason"]) == ("True", "WouldRescale")
    assert "to 4 replicas (it has 6, heading to 3); step capped" in advice["message"]
    assert w.condition("Ready")["status"] == "True"
    assert "advising" in w.condition("Ready")["message"]
    assert w.condition("ScalingActive")["reason"] == "ValidMetricFound"
    ((kind, reason, message),) = w.recorder.events
    assert (kind, reason) == ("Normal", "WouldRescale")
    assert message.startswith("Would set Deployment web to 4 replicas (it has 6); metric")
    # the deletion costs a real scaler would have set, logged instead
    (line,) = [e for e in logs if e["event"] == "advisory: nothing written"]
    assert line["would_set_replicas"] == 4
    assert set(line["would_set_deletion_costs"]) == {"p5", "p4"}  # the newest go first


def test_a_steady_advisory_scaler_writes_nothing_at_all(w: World) -> None:
    w.cluster.put(advisory_obj())
    fleet(w, 3)
    w.fetcher.set_value(2.0)  # would scale to 6, every sync, since the fleet never follows
    w.sync()
    w.cluster.calls.clear()
    w.recorder.events.clear()
    for _ in range(3):
        w.clock.step(15)
        assert w.sync() == SYNC
    assert w.cluster.calls == [] and w.recorder.events == []
    # new advice: one status write and one Event
    w.fetcher.set_value(3.0)
    w.clock.step(15)
    w.sync()
    assert [c.verb for c in w.cluster.calls] == ["patch"]
    assert w.recorder.reasons() == ["WouldRescale"]
    assert w.status()["desiredReplicas"] == 9


def test_advisory_history_records_recommendations_but_never_a_write(w: World) -> None:
    """The fleet stays at 10: the advice must not walk down as if it had shrunk."""
    w.cluster.put(advisory_obj(window=60, step=2))
    fleet(w, 10)
    w.fetcher.set_value(0.4)  # asks for 4
    w.sync()
    assert w.condition("Advisory")["reason"] == "WouldHold"  # the window holds at first
    assert "stabilization window" in w.condition("Advisory")["message"]
    w.clock.step(61)
    w.sync()
    seen = []
    for _ in range(4):
        seen.append((w.status()["desiredReplicas"], w.condition("Advisory")["message"]))
        w.clock.step(15)
        w.sync()
    assert seen[0][0] == 4 and "to 8 replicas (it has 10, heading to 4)" in seen[0][1]
    assert len(set(seen)) == 1, seen  # the same advice while the traffic is the same


def test_advisory_held_for_signal_still_says_advisory(w: World) -> None:
    w.cluster.put(advisory_obj(min_replicas=5))
    fleet(w, 3)  # below minReplicas: a real scaler would set 5 even without a signal
    w.fetcher.set_value(None, error="down")
    assert w.sync() == RETRY
    assert target_writes(w) == []
    assert w.condition("AbleToScale")["reason"] == "Advisory"
    assert w.condition("Advisory")["reason"] == "WouldRescale"
    assert w.status()["desiredReplicas"] == 5
    assert w.condition("Ready")["reason"] == "FailedGetMetrics"
    assert "below minReplicas (5)" in w.recorder.events[-1][2]


def test_the_manager_wide_flag_makes_every_scaler_advisory(w: World) -> None:
    w.reconciler = w.new_reconciler(advisory=True)
    w.cluster.put(scaler_obj())  # spec.advisory unset
    fleet(w, 3)
    w.fetcher.set_value(2.0)
    w.sync()
    assert target_writes(w) == []
    assert w.condition("Advisory")["reason"] == "WouldRescale"


def test_leaving_advisory_mode_drops_the_condition_and_scales(w: World) -> None:
    w.cluster.put(advisory_obj())
    fleet(w, 3)
    w.fetcher.set_value(2.0)
    w.sync()
    real = scaler_obj(generation=2)
    real["status"] = w.status()
    w.cluster.put(real)
    w.sync()
    assert w.replicas() == 6
    assert "Advisory" not in {c["type"] for c in w.status()["conditions"]}
    assert w.condition("AbleToScale")["reason"] == "SucceededRescale"


def test_an_advisory_scaler_neither_blocks_a_real_one_nor_is_blocked(w: World) -> None:
    w.cluster.put(advisory_obj("old", created="2025-01-01T00:00:00Z"))
    w.cluster.put(scaler_obj("young", created="2026-02-01T00:00:00Z"))
    w.cluster.put(scaler_obj("mid", created="2025-06-01T00:00:00Z"))
    fleet(w, 3)
    w.fetcher.set_value(2.0)
    assert w.sync("young") == RETRY  # blocked by "mid", the oldest *writer*
    assert "'mid'" in w.condition("ScalingActive", "young")["message"]
    assert w.sync("mid") == SYNC and w.replicas() == 6  # the older advisory one is no rival
    assert w.sync("old") == SYNC  # and is not blocked itself
    assert w.condition("Advisory", "old")["reason"] == "WouldRescale"  # 6 -> 10 (value 2)
    assert w.replicas() == 6


def test_advisory_paused_replicas_is_not_written(w: World) -> None:
    obj = advisory_obj()
    obj["metadata"]["annotations"] = {PAUSED_REPLICAS_ANNOTATION: "1"}
    w.cluster.put(obj)
    fleet(w, 3)
    assert w.sync() == SYNC
    assert target_writes(w) == []
    able = w.condition("AbleToScale")
    assert able["reason"] == "Paused" and "advisory mode" in able["message"]
    # leaving advisory mode sets the count: "Paused" is not the "set once" mark
    real = {**scaler_obj(generation=2), "status": w.status()}
    real["metadata"]["annotations"] = {PAUSED_REPLICAS_ANNOTATION: "1"}
    w.cluster.put(real)
    w.sync()
    assert w.replicas() == 1
