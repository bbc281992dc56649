"""spec.fallback: the count a scaler goes to after its signal failed too often in a row."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec
from llmscaler_runtime.scaling.fallback import (
    FailureCounter,
    fallback_applies,
    fallback_recommendation,
)
from llmscaler_runtime.scaling.types import TargetView

from .fakes import deployment, scaler_obj
from .test_reconciler import RETRY, SYNC, World


def _spec(threshold: int = 3, replicas: int = 4, behavior: str = "Static", **over: Any) -> Any:
    raw = scaler_obj(**over)["spec"]
    raw["fallback"] = {"failureThreshold": threshold, "replicas": replicas, "behavior": behavior}
    return LLMScalerSpec.from_dict(raw)


def _target(spec_replicas: int, ready: int | None = None) -> TargetView:
    ready = spec_replicas if ready is None else ready
    return TargetView("apps/v1", "Deployment", "web", "ns", spec_replicas, ready)


# --- the pure rule -----------------------------------------------------------------------------


def test_the_fallback_applies_once_the_failures_pass_the_threshold_as_keda_counts() -> None:
    spec = _spec(threshold=3)
    assert [fallback_applies(spec.fallback, n) for n in range(6)] == [
        False,
        False,
        False,
        False,
        True,
        True,
    ]
    assert not fallback_applies(None, 100)  # no fallback: failures hold for ever
    assert fallback_recommendation(spec, _target(2), 2, 3) is None


def test_static_goes_to_the_fallback_count_even_below_the_current_one() -> None:
    spec = _spec(replicas=4)
    up = fallback_recommendation(spec, _target(2), 2, 4)
    down = fallback_recommendation(spec, _target(9), 9, 4)
    assert up is not None and (up.replicas, up.unclamped, up.baseline) == (4, 4, 2)
    assert down is not None and down.replicas == 4  # the user's explicit choice
    assert "fallback after 4 failed evaluations in a row: 4 replicas" in down.reason


def test_current_replicas_if_higher_never_goes_below_the_current_count() -> None:
    spec = _spec(replicas=4, behavior="CurrentReplicasIfHigher")
    up = fallback_recommendation(spec, _target(2), 2, 4)
    kept = fallback_recommendation(spec, _target(9, ready=7), 7, 4)
    assert up is not None and up.replicas == 4
    assert kept is not None and kept.replicas == 9  # spec.replicas, not the ready count
    assert "or the current 9 (CurrentReplicasIfHigher)" in kept.reason


def test_the_fallback_count_is_clamped_to_the_bounds_in_force() -> None:
    spec = _spec(replicas=4, behavior="CurrentReplicasIfHigher", max_replicas=10)
    above = fallback_recommendation(spec, _target(12), 12, 4)
    assert above is not None and (above.replicas, above.limited) == (10, "TooManyReplicas")


def test_the_failure_counter_counts_runs_per_scaler() -> None:
    counter = FailureCounter()
    assert [counter.failed("a") for _ in range(3)] == [1, 2, 3]
    assert counter.failed("b") == 1
    assert counter.succeeded("a") == 3 and counter.succeeded("a") == 0
    assert counter.failed("a") == 1
    counter.forget("b")
    assert counter.failed("b") == 1


# --- through the reconciler --------------------------------------------------------------------


def _fallback_world(replicas: int = 3, **fallback: Any) -> World:
    w = World()
    obj = scaler_obj(provider="Custom")
    obj["spec"]["fallback"] = {"failureThreshold": 2, "replicas": 5, **fallback}
    w.cluster.put(obj)
    w.cluster.put(deployment(replicas=replicas))
    return w


def _events(w: World, reason: str) -> list[tuple[str, str]]:
    return [(t, m) for t, r, m in w.recorder.events if r == reason]


def test_failures_hold_until_the_threshold_then_the_fallback_scales_and_recovers() -> None:
    w = _fallback_world()
    w.fetcher.set_decision(None, error="decision server: HTTP 500")
    for _ in range(2):  # failureThreshold: 2 failures in a row are held
        assert w.sync() == RETRY
        w.clock.step(10)
    assert w.applies() == [] and w.condition("ScalingActive")["reason"] == "FailedGetDecision"

    assert w.sync() == RETRY  # the third: the fallback applies
    assert w.replicas() == 5
    active = w.condition("ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "FallbackActive")
    assert "failureThreshold (2)" in active["message"]
    assert "fallback of 5 replicas (Static)" in active["message"]
    assert w.condition("Ready")["reason"] == "FallbackActive"
    assert w.condition("AbleToScale")["reason"] == "SucceededRescale"
    assert w.status()["desiredReplicas"] == 5
    ((kind, message),) = _events(w, "FallbackActive")
    assert kind == "Warning" and "heads to 5 replicas (it has 3)" in message
    rescale = _events(w, "SuccessfulRescale")[-1][1]
    assert "fallback after 3 failed evaluations in a row" in rescale
    (record, *_) = w.status()["recentDecisions"]  # a fallback scale is recorded like any other
    assert (record["from"], record["to"], record["driver"]) == (3, 5, "Fallback")
    assert "fallback after 3 failed evaluations in a row" in record["reason"]

    # while it goes on, it writes nothing and says nothing more than the source's own errors
    w.cluster.put(deployment(replicas=5))
    w.clock.step(10)
    w.sync()
    w.cluster.calls.clear()
    w.recorder.events.clear()
    w.clock.step(10)
    assert w.sync() == RETRY
    assert w.cluster.calls == []
    assert set(w.recorder.reasons()) == {"FailedGetDecision"}

    # the first good answer ends it: the decision drives the fleet again
    w.fetcher.set_decision(2)
    w.clock.step(10)
    assert w.sync() == SYNC
    assert w.replicas() == 2
    assert w.condition("ScalingActive")["reason"] == "ValidDecisionFound"
    assert w.condition("Ready")["status"] == "True"
    ((kind, message),) = _events(w, "FallbackEnded")
    assert kind == "Normal" and "after 5 failed evaluations in a row" in message

    # a new run of failures starts counting from zero
    w.fetcher.set_decision(None, error="down again")
    w.clock.step(15)
    assert w.sync() == RETRY
    assert w.replicas() == 2 and w.condition("ScalingActive")["reason"] == "FailedGetDecision"


def test_without_a_fallback_failures_hold_for_ever() -> None:
    w = World()
    w.cluster.put(scaler_obj(provider="Custom"))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_decision(None, error="down")
    for _ in range(20):
        assert w.sync() == RETRY
        w.clock.step(10)
    assert w.applies() == [] and "FallbackActive" not in w.recorder.reasons()


def test_a_static_fallback_below_the_fleet_waits_out_the_stabilization_window() -> None:
    w = World()
    obj = scaler_obj(window=60)
    obj["spec"]["fallback"] = {"failureThreshold": 1, "replicas": 2}
    w.cluster.put(obj)
    w.cluster.put(deployment(replicas=6))
    w.fetcher.set_value(None, error="no series")
    w.sync()  # held: counts as a recommendation of 6 in the window
    w.clock.step(10)
    w.sync()  # the fallback applies, but a scale-down waits for the window
    assert w.replicas() == 6
    assert w.condition("ScalingActive")["reason"] == "FallbackActive"
    assert w.condition("AbleToScale")["reason"] == "ScaleDownStabilized"
    w.clock.step(60)
    w.sync()
    assert w.replicas() == 2


def test_current_replicas_if_higher_holds_a_fleet_above_the_fallback() -> None:
    w = _fallback_world(replicas=8, behavior="CurrentReplicasIfHigher")
    w.fetcher.set_decision(None, error="down")
    for _ in range(4):
        w.sync()
        w.clock.step(10)
    assert w.applies() == []
    assert w.condition("ScalingActive")["reason"] == "FallbackActive"
    (message,) = [m for _, m in _events(w, "FallbackActive")]
    assert "heads to 8 replicas (it has 8)" in message


@pytest.mark.parametrize("restart_while_active", [False, True])
def test_a_restart_starts_the_count_again_and_still_ends_the_fallback(
    restart_while_active: bool,
) -> None:
    w = _fallback_world()
    w.fetcher.set_decision(None, error="down")
    for _ in range(3):
        w.sync()
        w.clock.step(10)
    assert w.condition("ScalingActive")["reason"] == "FallbackActive"
    w.cluster.put(deployment(replicas=5))
    w.reconciler = w.new_reconciler()  # a restart, or a new leader: memory is gone
    if restart_while_active:
        w.sync()  # failure 1 of a new run: held where the fallback left the fleet
        assert w.replicas() == 5
        assert w.condition("ScalingActive")["reason"] == "FailedGetDecision"
        w.clock.step(10)
    w.fetcher.set_decision(5)
    w.sync()
    ended = _events(w, "FallbackEnded")
    # the status still said FallbackActive only when no failing sync came in between
    assert len(ended) == (0 if restart_while_active else 1)
    if ended:
        assert ended[0][1] == "Fallback ended: the signal can be read again; scaling follows it."


def test_the_fallback_gauge_follows_the_fallback() -> None:
    """llmscaler_scaler_fallback_active (what the LLMScalerFallbackActive alert reads) is 1
    exactly while the fallback drives the fleet."""
    from prometheus_client import CollectorRegistry

    from llmscaler_runtime.scaling.metrics import PrometheusScalerMetrics

    registry = CollectorRegistry()
    w = _fallback_world()
    w.reconciler = w.new_reconciler(metrics=PrometheusScalerMetrics(registry))

    def gauge() -> float | None:
        labels = {"namespace": "ns", "name": "s"}
        return registry.get_sample_value("llmscaler_scaler_fallback_active", labels)

    w.fetcher.set_decision(None, error="decision server: HTTP 500")
    for _ in range(2):
        w.sync()
        w.clock.step(10)
    assert gauge() == 0.0
    w.sync()
    assert gauge() == 1.0
    w.fetcher.set_decision(2)
    w.clock.step(10)
    w.sync()
    assert gauge() == 0.0
