"""Recommendation: turn a measurement into a replica count within [minReplicas, maxReplicas].

Prometheus metrics use the HPA ratio ``ceil(baseline * value / target)`` and the largest vote
wins. The baseline is the target's ready replicas, so the ratio never compounds on pods that
were requested but do not serve yet. Two special baselines keep a fleet from getting stuck:
during a first rollout (nothing ready but spec.replicas > 0) it is spec.replicas, and at zero
replicas it is one, otherwise ``0 * anything`` could never wake the fleet. A Custom decision is
already an absolute count and is only clamped. Nothing measurable means no recommendation: the
fleet is held, a failed query is never read as zero.
"""

from __future__ import annotations

import math
from typing import Protocol

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, MetricProvider
from llmscaler_runtime.scaling.types import (
    Limit,
    Measurement,
    MetricRecommendation,
    Recommendation,
    TargetView,
)

__all__ = [
    "SATURATED",
    "HpaRecommender",
    "Recommender",
    "baseline_replicas",
    "clamp",
    "ratio_replicas",
]

# ceil() of a product that should be an integer can land a hair above it (3 * 0.8 / 0.8 is
# 3.0000000000000004); this relative slack keeps float noise from adding a replica.
_EPSILON = 1e-9
#: What an overflowing ratio saturates at: one more than any int32 replica count.
SATURATED = 2**31


class Recommender(Protocol):
    """Maps one sync's measurement to a clamped recommendation."""

    def recommend(
        self, spec: LLMScalerSpec, target: TargetView, measurement: Measurement
    ) -> Recommendation: ...


def baseline_replicas(target: TargetView) -> int:
    """The replica count the per-replica ratio is applied to (see module docstring)."""
    if target.ready_replicas > 0:
        return target.ready_replicas
    if target.spec_replicas > 0:
        return target.spec_replicas
    return 1


def ratio_replicas(baseline: int, value: float, target: float) -> int:
    """``ceil(baseline * value / target)``, saturating at :data:`SATURATED` instead of overflowing.

    No workload can hold more than an int32 of replicas, so any larger figure (including one
    that overflowed to infinity) is reported as ``SATURATED`` and the clamp then takes it down
    to maxReplicas. Negative values read as zero demand.
    """
    if not (math.isfinite(value) and math.isfinite(target)) or target <= 0:
        raise ValueError(f"cannot compute a ratio from value={value!r} target={target!r}")
    if value <= 0:
        return 0
    raw = baseline * (value / target)  # may overflow to inf for tiny targets
    if not math.isfinite(raw) or raw >= SATURATED:
        return SATURATED
    return max(0, math.ceil(raw - _EPSILON * max(1.0, raw)))


def clamp(replicas: int, spec: LLMScalerSpec) -> tuple[int, Limit | None]:
    """Clamp to [minReplicas, maxReplicas]; also say which bound applied, if any."""
    if replicas > spec.max_replicas:
        return spec.max_replicas, "TooManyReplicas"
    if replicas < spec.min_replicas:
        return spec.min_replicas, "TooFewReplicas"
    return replicas, None


@attrs.frozen
class HpaRecommender:
    """The default recommender: HPA ratio for Prometheus, clamp-only for Custom."""

    def recommend(
        self, spec: LLMScalerSpec, target: TargetView, measurement: Measurement
    ) -> Recommendation:
        baseline = baseline_replicas(target)
        if spec.metric_provider == MetricProvider.CUSTOM:
            if measurement.decision is None:
                return Recommendation(None, None, baseline, reason="no usable decision")
            clamped, limited = clamp(measurement.decision, spec)
            return Recommendation(
                clamped,
                measurement.decision,
                baseline,
                limited,
                reason=f"decision server asked for {measurement.decision} replicas",
            )
        votes: list[MetricRecommendation] = []
        for reading in measurement.readings:
            if reading.value is None:
                continue
            replicas = ratio_replicas(baseline, reading.value, reading.target)
            votes.append(
                MetricRecommendation(reading.name, reading.value, reading.target, replicas)
            )
        if not votes:
            return Recommendation(None, None, baseline, reason="every metric was skipped")
        winner = max(votes, key=lambda v: v.replicas)
        clamped, limited = clamp(winner.replicas, spec)
        return Recommendation(
            clamped,
            winner.replicas,
            baseline,
            limited,
            tuple(votes),
            reason=(
                f"metric {winner.name!r}: ceil({baseline} * {winner.value:g} / "
                f"{winner.target:g}) = {winner.replicas}"
            ),
        )
