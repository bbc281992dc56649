"""The wording of every condition a sync writes: pure functions from the sync's values.

Each function turns what one step found (the target, the plan, the measurement, the
recommendation) into :class:`~.status.ConditionDraft` values; ``status.build_status`` then
merges them into the status, keeping transition times. Kept apart from the reconciler so the
orchestration reads as steps, and so the wording — which is what a person sees in ``kubectl
describe`` — is tested directly, one function at a time, without a cluster fixture.

Messages say what happened and what to do about it, as HPA's conditions do.
"""

from __future__ import annotations

from collections.abc import Sequence

from llmscaler_runtime.api.v1alpha1 import LLMScaler, LLMScalerSpec, MetricProvider
from llmscaler_runtime.scaling.pause import PAUSED_ANNOTATION, PAUSED_REPLICAS_ANNOTATION, Pause
from llmscaler_runtime.scaling.reasons import ConditionReason
from llmscaler_runtime.scaling.status import (
    ABLE_TO_SCALE,
    ADVISORY,
    PREEMPTION,
    READY,
    SCALING_ACTIVE,
    SCALING_LIMITED,
    ConditionDraft,
)
from llmscaler_runtime.scaling.types import HeldBy, Measurement, Plan, Recommendation, TargetView

R = ConditionReason  # the wording below reads better with the short name

__all__ = [
    "able",
    "active",
    "advice",
    "advisory",
    "blocked",
    "cond",
    "failed_rescale",
    "fallback_active",
    "fallback_ended_message",
    "fallback_started_message",
    "held_for_signal",
    "holding",
    "invalid_pause",
    "invalid_spec",
    "limited",
    "measurement_failure_reason",
    "paused",
    "preemption",
    "ready",
    "rescale_reason",
    "rollout_in_progress",
    "sync_failed",
]


def cond(type_: str, ok: bool | None, reason: ConditionReason, message: str) -> ConditionDraft:
    """One draft; ``ok=None`` is status Unknown."""
    return ConditionDraft(type_, ok, reason, message)


def measurement_failure_reason(spec: LLMScalerSpec) -> ConditionReason:
    """The reason used when the signal could not be read: it names the provider's kind."""
    custom = spec.metric_provider == MetricProvider.CUSTOM
    return R.FAILED_GET_DECISION if custom else R.FAILED_GET_METRICS


def ready(*, advisory: bool = False) -> ConditionDraft:
    """Ready=True: the sync measured and scaled (or had nothing to change), or advised."""
    if advisory:
        message = "The scaler is measuring and advising; advisory mode writes nothing."
        return cond(READY, True, R.SCALING, message)
    return cond(READY, True, R.SCALING, "The scaler is measuring and scaling its target.")


def holding(target: TargetView, why: str) -> ConditionDraft:
    """AbleToScale=True, holding the current size until ``why`` is resolved."""
    return cond(
        ABLE_TO_SCALE, True, R.HOLDING_REPLICAS, f"Holding {target.spec_replicas} replicas {why}."
    )


def blocked(
    reason: ConditionReason, message: str, *, able: bool = False, hold: TargetView | None = None
) -> tuple[ConditionDraft, ...]:
    """A sync that stopped before measuring: the blocking condition and Ready=False.

    ``able=True`` reports the problem on AbleToScale (the target itself is the problem), else on
    ScalingActive (the signal or the right to write is); ``hold`` adds AbleToScale=True
    "holding" for a target that was read and is left as it is.
    """
    head = [holding(hold, "until the metric source can be asked")] if hold is not None else []
    kind = ABLE_TO_SCALE if able else SCALING_ACTIVE
    return (*head, cond(kind, False, reason, message), cond(READY, False, reason, message))


def rollout_in_progress(target: TargetView, reason: str) -> tuple[ConditionDraft, ...]:
    """The rollout guard deferred scaling (this is not a failure: Ready stays True)."""
    return (
        cond(
            ABLE_TO_SCALE,
            False,
            R.ROLLOUT_IN_PROGRESS,
            f"Scaling waits for the rollout of {target.kind} {target.name} to finish: {reason}.",
        ),
        cond(READY, True, R.ROLLOUT_IN_PROGRESS, "Waiting for the rollout to settle."),
    )


def held_for_signal(
    spec: LLMScalerSpec,
    target: TargetView,
    plan: Plan,
    measurement: Measurement,
    recommendation: Recommendation,
    scaled: bool,
) -> tuple[ConditionDraft, ...]:
    """Nothing could be measured: the fleet is held (within the bounds)."""
    reason = measurement_failure_reason(spec)
    detail = "; ".join(measurement.errors) or recommendation.reason
    what = (
        f"Set {target.kind} {target.name} to {plan.replicas} replicas to respect the "
        f"bounds [{spec.min_replicas}, {spec.max_replicas}], then holding there"
        if scaled
        else f"Holding {target.spec_replicas} replicas"
    )
    return (
        cond(ABLE_TO_SCALE, True, R.HOLDING_REPLICAS, f"{what} until the signal can be read."),
        cond(
            SCALING_ACTIVE, False, reason, f"No usable signal from {spec.server_address}: {detail}"
        ),
        cond(READY, False, reason, f"The last sync could not measure: {detail}"),
    )


def _fallback_text(spec: LLMScalerSpec) -> str:
    fallback = spec.fallback
    assert fallback is not None, "only called while a fallback applies"
    return (
        f"the signal failed more than failureThreshold ({fallback.failure_threshold}) "
        f"evaluations in a row, so the fallback of {fallback.replicas} replicas "
        f"({fallback.behavior}) applies until an evaluation measures something"
    )


def fallback_active(
    spec: LLMScalerSpec, measurement: Measurement, able_now: ConditionDraft
) -> tuple[ConditionDraft, ...]:
    """The signal has failed too often in a row: ``spec.fallback`` drives the fleet;
    ``able_now`` is this sync's AbleToScale (:func:`able`), as after any recommendation.

    The messages carry no failure count, so a fallback that goes on writes no status."""
    detail = "; ".join(measurement.errors) or "nothing could be measured"
    why = _fallback_text(spec)
    return (
        able_now,
        cond(SCALING_ACTIVE, False, R.FALLBACK_ACTIVE, f"Scaling on the fallback: {why}."),
        cond(READY, False, R.FALLBACK_ACTIVE, f"The last sync could not measure: {detail}"),
    )


def fallback_started_message(spec: LLMScalerSpec, target: TargetView, replicas: int) -> str:
    """The Warning Event's message when a fallback starts."""
    return (
        f"Fallback active: {_fallback_text(spec)}; {target.kind} {target.name} heads to "
        f"{replicas} replicas (it has {target.spec_replicas})."
    )


def fallback_ended_message(failures: int) -> str:
    """The Event's message when an evaluation measures again after a fallback."""
    runs = f" after {failures} failed evaluations in a row" if failures else ""
    return f"Fallback ended: the signal can be read again{runs}; scaling follows it."


def able(target: TargetView, plan: Plan, scaled: bool) -> ConditionDraft:
    """AbleToScale after a measured sync: what was written, or what holds the next step."""
    if scaled:
        extra = ""
        if plan.held_by in ("step-cap", "scale-up-step-cap"):
            extra = f" (step capped; heading to {plan.desired})"
        elif plan.held_by == "scale-up-stabilization":
            extra = (
                " (the lowest recommendation within the scale-up stabilization window; "
                "the metrics ask for more)"
            )
        return cond(
            ABLE_TO_SCALE,
            True,
            R.SUCCEEDED_RESCALE,
            f"Set {target.kind} {target.name} to {plan.replicas} replicas{extra}.",
        )
    if plan.held_by == "settle":
        return cond(
            ABLE_TO_SCALE,
            True,
            R.WAITING_FOR_FLEET_TO_SETTLE,
            f"Next scale-down step waits until all {target.spec_replicas} replicas are "
            f"ready and none is terminating (ready {target.ready_replicas}, terminating "
            f"{target.terminating_replicas or 0}).",
        )
    if plan.held_by == "stabilization":
        return cond(
            ABLE_TO_SCALE,
            True,
            R.SCALE_DOWN_STABILIZED,
            f"Holding at {plan.desired} replicas: a higher recommendation was seen within "
            "the scale-down stabilization window.",
        )
    if plan.held_by == "scale-up-stabilization":
        return cond(
            ABLE_TO_SCALE,
            True,
            R.SCALE_UP_STABILIZED,
            f"Holding at {plan.desired} replicas: a lower recommendation was seen within "
            "the scale-up stabilization window.",
        )
    matches = "The recommendation matches the target."
    return cond(ABLE_TO_SCALE, True, R.READY_FOR_NEW_SCALE, matches)


def active(spec: LLMScalerSpec, measurement: Measurement) -> ConditionDraft:
    """ScalingActive after a measured sync: which signal drove it, and what was skipped."""
    if spec.metric_provider == MetricProvider.CUSTOM:
        return cond(
            SCALING_ACTIVE,
            True,
            R.VALID_DECISION_FOUND,
            f"The decision server asked for {measurement.decision} replicas.",
        )
    skipped = [r for r in measurement.readings if r.value is None]
    if skipped:
        names = ", ".join(r.name for r in skipped)
        return cond(
            SCALING_ACTIVE,
            True,
            R.SOME_METRICS_SKIPPED,
            f"Scaling on the remaining metrics; skipped: {names} (see events).",
        )
    return cond(SCALING_ACTIVE, True, R.VALID_METRIC_FOUND, "Every metric returned a usable value.")


def limited(
    spec: LLMScalerSpec, rec: Recommendation, schedules: Sequence[str] = ()
) -> ConditionDraft:
    """ScalingLimited: whether a bound cut the recommendation, and which. ``spec`` carries the
    bounds in force; ``schedules`` names the open windows that set them, if any."""
    opened = ", ".join(repr(name) for name in schedules)
    where = f" while schedule {opened} is open" if len(schedules) == 1 else ""
    if len(schedules) > 1:
        where = f" while schedules {opened} are open"
    if rec.limited == "TooManyReplicas":
        return cond(
            SCALING_LIMITED,
            True,
            R.TOO_MANY_REPLICAS,
            f"The signal asks for more than maxReplicas ({spec.max_replicas}){where}; raise "
            "maxReplicas if the fleet is overloaded.",
        )
    if rec.limited == "TooFewReplicas":
        return cond(
            SCALING_LIMITED,
            True,
            R.TOO_FEW_REPLICAS,
            f"The signal asks for fewer than minReplicas ({spec.min_replicas}){where}; lower "
            "minReplicas (0 allows scale to zero) if the fleet should shrink further.",
        )
    return cond(
        SCALING_LIMITED,
        False,
        R.DESIRED_WITHIN_RANGE,
        f"The recommendation is within [{spec.min_replicas}, {spec.max_replicas}]{where}.",
    )


def failed_rescale(message: str) -> tuple[ConditionDraft, ...]:
    """The replica write failed: the sync retries at the retry period."""
    return (
        cond(ABLE_TO_SCALE, False, R.FAILED_UPDATE_SCALE, message + "; retrying."),
        cond(READY, False, R.FAILED_UPDATE_SCALE, message),
    )


def sync_failed(error: BaseException) -> tuple[ConditionDraft, ...]:
    """A bug ended the sync; the scaler retries rather than sit in exponential backoff."""
    return (cond(READY, False, R.SYNC_FAILED, f"The last sync failed: {error}; retrying."),)


def invalid_spec(message: str) -> tuple[ConditionDraft, ...]:
    """The spec does not parse; nothing is measured or written until it is fixed."""
    return blocked(R.INVALID_SPEC, message)


def preemption(scaler: LLMScaler) -> tuple[ConditionDraft, ...]:
    """The Preemption condition, present exactly while ``spec.preemption`` is set."""
    if scaler.spec.preemption is None:
        return ()
    return (
        cond(
            PREEMPTION,
            False,
            R.NOT_IMPLEMENTED,
            "spec.preemption is accepted but not implemented: it has no effect on scaling.",
        ),
    )


def paused(
    pause: Pause, target: TargetView | None = None, *, advisory: bool = False
) -> tuple[ConditionDraft, ...]:
    """A paused scaler (``scaling.pause``): nothing is measured, so ScalingActive is False,
    as the HPA's is when scaling is disabled; Ready stays True, since the pause is on purpose.

    With ``target``, the paused-replicas count is on it: reason ``PausedReplicas``, which the
    next syncs read as "already set once" (never in advisory mode, which writes nothing, so
    that leaving advisory mode sets it). The messages carry no live figures, so a paused
    scaler's status is written once and then left alone.
    """
    if pause.replicas is None or target is None:
        able = cond(
            ABLE_TO_SCALE,
            False,
            R.PAUSED,
            f"Paused by the annotation {PAUSED_ANNOTATION}{pause.note}: no metric is read and "
            "nothing is written to the target or its pods until the annotation is removed or "
            'set to "false".',
        )
    elif advisory:
        able = cond(
            ABLE_TO_SCALE,
            False,
            R.PAUSED,
            f"Paused by the annotation {PAUSED_REPLICAS_ANNOTATION}: advisory mode, so "
            f"{pause.replicas} replicas are not written to {target.kind} {target.name}; "
            "nothing is written until the annotation is removed.",
        )
    else:
        able = cond(
            ABLE_TO_SCALE,
            False,
            R.PAUSED_REPLICAS,
            f"Paused by the annotation {PAUSED_REPLICAS_ANNOTATION}: {target.kind} "
            f"{target.name} is set to {pause.replicas} replicas, once, and then left alone "
            "until the annotation is removed.",
        )
    return (
        able,
        cond(SCALING_ACTIVE, False, R.PAUSED, "Metrics are not evaluated while paused."),
        cond(READY, True, R.PAUSED, "The scaler is paused on purpose (see AbleToScale)."),
    )


def invalid_pause(message: str) -> tuple[ConditionDraft, ...]:
    """A paused-replicas value that cannot be used: held as paused, reported as a problem."""
    return blocked(R.INVALID_PAUSED_REPLICAS, message, able=True)


def rescale_reason(spec: LLMScalerSpec, plan: Plan, rec: Recommendation) -> str:
    """Why a rescale goes where it goes, for its Event: a violated bound, or the signal."""
    if plan.current > spec.max_replicas and plan.replicas == spec.max_replicas:
        return f"above maxReplicas ({spec.max_replicas})"
    if plan.current < spec.min_replicas and plan.replicas == spec.min_replicas:
        return f"below minReplicas ({spec.min_replicas})"
    return rec.reason


#: The advice's wording of each pacing hold; every HeldBy value must be here (a test checks).
_HELD: dict[HeldBy, str] = {
    "stabilization": "held by the scale-down stabilization window",
    "settle": "waiting for the fleet to settle",
    "step-cap": "step capped",
    "scale-up-stabilization": "held by the scale-up stabilization window",
    "scale-up-step-cap": "scale-up step capped",
    "no-measurement": "no usable signal",
}


def advice(target: TargetView, plan: Plan) -> ConditionDraft:
    """The Advisory condition: what this sync would have written (``scaling.advisory``).
    Replica counts only, so a steady advisory scaler's status does not change."""
    held = f"; {_HELD[plan.held_by]}" if plan.held_by is not None else ""
    if plan.changes:
        heading = f", heading to {plan.desired}" if plan.desired != plan.replicas else ""
        return cond(
            ADVISORY,
            True,
            R.WOULD_RESCALE,
            f"Would set {target.kind} {target.name} to {plan.replicas} replicas (it has "
            f"{plan.current}{heading}){held}; advisory mode wrote nothing.",
        )
    return cond(
        ADVISORY,
        True,
        R.WOULD_HOLD,
        f"Would keep {target.kind} {target.name} at {plan.current} replicas{held}.",
    )


def advisory(target: TargetView, plan: Plan) -> tuple[ConditionDraft, ...]:
    """Advisory mode replaces AbleToScale: not able, by design; the advice beside it."""
    return (
        cond(
            ABLE_TO_SCALE,
            False,
            R.ADVISORY,
            f"Advisory mode: nothing is written to {target.kind} {target.name} or its pods; "
            "the Advisory condition says what would be.",
        ),
        advice(target, plan),
    )
