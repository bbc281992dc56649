"""The decision record: one ``status.recentDecisions`` entry per scale, built from a sync's values.

``kubectl get llmscaler -o yaml`` should answer "why did it scale?" without the Events (which
expire after an hour) or the logs (which may be gone). So every sync that changes the
replica count adds one entry, newest first, saying when, from how many to how many, what drove
it (the metric that won the vote with its value and target, the decision server's answer, or a
bound the fleet was outside of) and which pacing rule held it back. The entry travels in the
status write the scale already causes, so it costs no API call, and a steady sync, which
writes no status, records nothing.

Pure: the reconciler hands in the values of the sync; nothing here reads a clock or the API.
"""

from __future__ import annotations

import attrs

from llmscaler_runtime.api.v1alpha1 import (
    DECISION_TEXT_MAX,
    LLMScalerSpec,
    MetricProvider,
    ScaleDecision,
)
from llmscaler_runtime.scaling.conditions import rescale_reason
from llmscaler_runtime.scaling.types import Measurement, Plan, Recommendation

__all__ = [
    "DRIVER_BOUNDS",
    "DRIVER_DECISION_SERVER",
    "DRIVER_FALLBACK",
    "DRIVER_METRIC",
    "decision_entry",
    "figure",
]

#: ``driver`` of a scale asked for by the metric that won the vote.
DRIVER_METRIC = "Metric"
#: ``driver`` of a scale asked for by the Custom provider's decision server.
DRIVER_DECISION_SERVER = "DecisionServer"
#: ``driver`` of a scale that brought the fleet back inside [minReplicas, maxReplicas].
DRIVER_BOUNDS = "Bounds"
#: ``driver`` of a scale to ``spec.fallback``'s count after the signal failed too often.
DRIVER_FALLBACK = "Fallback"


def figure(value: float) -> str:
    """A number as the record shows it: six significant digits, like the Events' ``:g``."""
    return f"{value:.6g}"


def _to_a_bound(spec: LLMScalerSpec, plan: Plan) -> bool:
    """The write brought a fleet outside [minReplicas, maxReplicas] to the violated bound."""
    return (plan.current > spec.max_replicas and plan.replicas == spec.max_replicas) or (
        plan.current < spec.min_replicas and plan.replicas == spec.min_replicas
    )


def decision_entry(
    time: str,
    spec: LLMScalerSpec,
    measurement: Measurement,
    recommendation: Recommendation,
    plan: Plan,
    *,
    fallback: bool = False,
) -> ScaleDecision:
    """The record of a sync that wrote ``plan.replicas`` (``time`` is RFC 3339);
    ``fallback``: the recommendation is ``spec.fallback``'s, not the signal's."""
    entry = ScaleDecision(
        time=time,
        from_replicas=plan.current,
        to_replicas=plan.replicas,
        desired=plan.desired,
        held_by=plan.held_by,
        # a custom recommender's reason or a long metric name is cut, so the status write
        # that carries the scale is never rejected over it
        reason=rescale_reason(spec, plan, recommendation)[:DECISION_TEXT_MAX],
    )
    if fallback:
        return attrs.evolve(entry, driver=DRIVER_FALLBACK)
    if _to_a_bound(spec, plan) or recommendation.replicas is None:
        return attrs.evolve(entry, driver=DRIVER_BOUNDS)
    if spec.metric_provider == MetricProvider.CUSTOM and measurement.decision is not None:
        return attrs.evolve(entry, driver=DRIVER_DECISION_SERVER, value=str(measurement.decision))
    # the winning vote is the one the unclamped recommendation came from (the first on a tie,
    # as the recommender picks it)
    for vote in recommendation.per_metric:
        if vote.replicas == recommendation.unclamped:
            return attrs.evolve(
                entry,
                driver=DRIVER_METRIC,
                metric=vote.name[:DECISION_TEXT_MAX] or None,
                value=figure(vote.value),
                target=figure(vote.target),
            )
    return entry
