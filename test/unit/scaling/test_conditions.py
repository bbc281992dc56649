"""The wording of each condition, tested one function at a time (no reconciler, no cluster)."""

from __future__ import annotations

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_runtime.scaling import conditions
from llmscaler_runtime.scaling.reasons import ConditionReason
from llmscaler_runtime.scaling.status import ABLE_TO_SCALE, READY, SCALING_ACTIVE, SCALING_LIMITED
from llmscaler_runtime.scaling.target import target_view
from llmscaler_runtime.scaling.types import (
    History,
    Measurement,
    MetricReading,
    Plan,
    Recommendation,
)

from .fakes import deployment, scaler_obj

SCALER = LLMScaler.from_dict(scaler_obj(min_replicas=1, max_replicas=10))
SPEC = SCALER.spec
TARGET = target_view(deployment(replicas=4, ready=3, terminating=1))


def plan(current: int, desired: int, replicas: int, held_by: str | None = None) -> Plan:
    return Plan(current, desired, replicas, held_by, History(), History())  # type: ignore[arg-type]


def test_blocked_reports_on_scaling_active_unless_the_target_is_the_problem() -> None:
    r = ConditionReason.TARGET_OWNED_BY_ANOTHER_SCALER
    assert [(d.type, d.status, d.reason) for d in conditions.blocked(r, "m")] == [
        (SCALING_ACTIVE, False, r),
        (READY, False, r),
    ]
    t = ConditionReason.TARGET_NOT_FOUND
    assert [d.type for d in conditions.blocked(t, "m", able=True)] == [ABLE_TO_SCALE, READY]


def test_blocked_with_a_read_target_says_the_fleet_is_held_at_its_size() -> None:
    drafts = conditions.blocked(ConditionReason.SECRET_FORBIDDEN, "m", hold=TARGET)
    assert drafts[0] == conditions.cond(
        ABLE_TO_SCALE,
        True,
        ConditionReason.HOLDING_REPLICAS,
        "Holding 4 replicas until the metric source can be asked.",
    )
    assert [d.type for d in drafts] == [ABLE_TO_SCALE, SCALING_ACTIVE, READY]


def test_able_names_the_write_the_step_cap_and_each_hold() -> None:
    written = conditions.able(TARGET, plan(4, 8, 6, "step-cap"), scaled=True)
    assert written.reason == "SucceededRescale"
    assert written.message == "Set Deployment web to 6 replicas (step capped; heading to 8)."
    settle = conditions.able(TARGET, plan(4, 2, 4, "settle"), scaled=False)
    assert settle.reason == "WaitingForFleetToSettle"
    assert "(ready 3, terminating 1)" in settle.message
    window = conditions.able(TARGET, plan(4, 4, 4, "stabilization"), scaled=False)
    assert (window.reason, window.message.split(":")[0]) == (
        "ScaleDownStabilized",
        "Holding at 4 replicas",
    )
    assert conditions.able(TARGET, plan(4, 4, 4), scaled=False).reason == "ReadyForNewScale"


def test_able_names_what_held_a_scale_up() -> None:
    capped = conditions.able(TARGET, plan(4, 20, 8, "scale-up-step-cap"), scaled=True)
    assert capped.reason == "SucceededRescale"
    assert capped.message == "Set Deployment web to 8 replicas (step capped; heading to 20)."
    partial = conditions.able(TARGET, plan(4, 6, 6, "scale-up-stabilization"), scaled=True)
    assert partial.reason == "SucceededRescale"
    assert "lowest recommendation within the scale-up stabilization window" in partial.message
    held = conditions.able(TARGET, plan(4, 4, 4, "scale-up-stabilization"), scaled=False)
    assert held.reason == "ScaleUpStabilized"
    assert held.message == (
        "Holding at 4 replicas: a lower recommendation was seen within the scale-up "
        "stabilization window."
    )


def test_active_lists_the_skipped_metrics_by_name() -> None:
    m = Measurement(
        provider="Prometheus",
        readings=(
            MetricReading("kv", "q1", 0.8, 0.5),
            MetricReading("queue", "q2", 4.0, None, "down"),
        ),
    )
    draft = conditions.active(SPEC, m)
    assert (draft.type, draft.status, draft.reason) == (
        SCALING_ACTIVE,
        True,
        "SomeMetricsSkipped",
    )
    assert "skipped: queue" in draft.message
    clean = Measurement(provider="Prometheus", readings=(MetricReading("kv", "q1", 0.8, 0.5),))
    assert conditions.active(SPEC, clean).reason == "ValidMetricFound"


def test_limited_names_the_bound_that_was_hit() -> None:
    too_many = conditions.limited(SPEC, Recommendation(10, 14, 4, "TooManyReplicas"))
    assert (too_many.type, too_many.status) == (SCALING_LIMITED, True)
    assert "maxReplicas (10)" in too_many.message
    too_few = conditions.limited(SPEC, Recommendation(1, 0, 4, "TooFewReplicas"))
    assert "minReplicas (1)" in too_few.message
    within = conditions.limited(SPEC, Recommendation(4, 4, 4))
    assert (within.status, within.message) == (False, "The recommendation is within [1, 10].")


def test_held_for_signal_quotes_the_errors_and_what_was_done_about_the_bounds() -> None:
    m = Measurement(provider="Prometheus", error="kv: connection refused")
    rec = Recommendation(None, None, 4, reason="no metric")
    held = conditions.held_for_signal(SPEC, TARGET, plan(4, 4, 4), m, rec, scaled=False)
    assert [(d.type, d.reason) for d in held] == [
        (ABLE_TO_SCALE, "HoldingReplicas"),
        (SCALING_ACTIVE, "FailedGetMetrics"),
        (READY, "FailedGetMetrics"),
    ]
    assert held[0].message == "Holding 4 replicas until the signal can be read."
    assert held[1].message.endswith(": kv: connection refused")
    clamped = conditions.held_for_signal(SPEC, TARGET, plan(12, 10, 10), m, rec, scaled=True)
    assert "to respect the bounds [1, 10], then holding there" in clamped[0].message


def test_the_failure_reason_names_the_provider() -> None:
    custom = LLMScaler.from_dict(scaler_obj(provider="Custom")).spec
    assert conditions.measurement_failure_reason(custom) == "FailedGetDecision"
    assert conditions.measurement_failure_reason(SPEC) == "FailedGetMetrics"


def test_preemption_is_reported_exactly_while_the_field_is_set() -> None:
    assert conditions.preemption(SCALER) == ()
    with_field = LLMScaler.from_dict(scaler_obj(preemption=True))
    (draft,) = conditions.preemption(with_field)
    assert (draft.status, draft.reason) == (False, "NotImplemented")
    assert attrs.evolve(draft, message="") != draft


def test_the_advice_words_every_pacing_hold() -> None:
    """Every HeldBy value pacing can produce must have advisory wording: a missing one raised
    KeyError (SyncFailed) for an advisory scaler held by scale-up pacing."""
    import typing

    from llmscaler_runtime.scaling.types import HeldBy

    for held in typing.get_args(HeldBy):
        for p in (plan(4, 8, 6, held), plan(4, 8, 4, held)):
            draft = conditions.advice(TARGET, p)
            assert draft.reason in ("WouldRescale", "WouldHold")
            assert "; " in draft.message, (held, draft.message)
