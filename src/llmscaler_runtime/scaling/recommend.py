"""Recommendation: turn a measurement into a replica count within [minReplicas, maxReplicas].

Prometheus metrics use the HPA ratio ``ceil(baseline * value / target)`` and the largest vote
wins. The baseline is the target's ready replicas, so the ratio never compounds on pods that
were requested but do not serve yet. Two special baselines keep a fleet from getting stuck:
during a first rollout (nothing ready but spec.replicas > 0) it is spec.replicas, and at zero
replicas it is one, otherwise ``0 * anything`` could never wake the fleet. A Custom decision is
already an absolute count and is only clamped. Nothing measurable means no recommendation: the
fleet is held, a failed query is never read as zero.

Tolerance is the HPA's per-direction dead band (KEP-4951): a metric whose ratio value/target lies
within ``[1 - scaleDown.tolerance, 1 + scaleUp.tolerance]`` votes for the current spec.replicas
instead of its ratio, and the largest vote still wins, so one metric inside its band is enough to
veto a scale-down (as in the HPA, where each metric's proposal is computed with the tolerance and
the maximum is taken). Like the HPA it is skipped at zero replicas, where "no change" would mean
"never wake". With both tolerances 0 (the default) there is no band at all, so a ratio of exactly
1 still votes ceil(baseline), as it always has.

At zero replicas a metric with an ``activationThreshold`` votes 0 unless its value is above the
threshold (KEDA's activation rule), so the fleet wakes when any metric is active. Without one the
rule is today's: any value above 0 wakes it. The Custom provider has no such field: its decision
is already an absolute count, and "stay at zero" is a decision the server makes.
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
    "Tolerances",
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


@attrs.frozen
class Tolerances:
    """The dead band of usage ratios that vote "no change" (see module docstring)."""

    down: float = 0.0
    up: float = 0.0

    @classmethod
    def of(cls, spec: LLMScalerSpec) -> Tolerances:
        """The spec's band; the common "0"/"0" costs no parsing on the per-sync path."""
        down, up = spec.scale_down.tolerance, spec.scale_up.tolerance
        if down == "0" and up == "0":
            return cls()
        return cls(spec.scale_down.tolerance_value, spec.scale_up.tolerance_value)

    def holds(self, value: float, target: float) -> bool:
        """The HPA's ``isWithin``: ``1 - down <= value/target <= 1 + up``; never without a band.

        The ends get the same float slack as the ratio (0.72 / 0.8 is 0.8999999999999999), so
        a value exactly on the edge a user wrote counts as inside, as the rule says."""
        if not (self.down or self.up):
            return False
        ratio = value / target
        return 1.0 - self.down - _EPSILON <= ratio <= 1.0 + self.up + _EPSILON


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
        current = target.spec_replicas
        band = Tolerances.of(spec) if current > 0 else Tolerances()
        votes: list[MetricRecommendation] = []
        for reading in measurement.readings:
            if reading.value is None:
                continue
            threshold = reading.activation_threshold
            if current == 0 and threshold is not None and reading.value <= threshold:
                vote = MetricRecommendation(
                    reading.name, reading.value, reading.target, 0, inactive=True
                )
            elif band.holds(reading.value, reading.target):
                vote = MetricRecommendation(
                    reading.name, reading.value, reading.target, current, tolerated=True
                )
            else:
                replicas = ratio_replicas(baseline, reading.value, reading.target)
                vote = MetricRecommendation(reading.name, reading.value, reading.target, replicas)
            votes.append(vote)
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
            reason=_why(winner, baseline, band),
        )


def _why(winner: MetricRecommendation, baseline: int, band: Tolerances) -> str:
    """How the winning vote came about, for Events and the decision log."""
    if winner.inactive:
        return (
            f"metric {winner.name!r}: {winner.value:g} is not above its activationThreshold, "
            "staying at zero"
        )
    if winner.tolerated:
        return (
            f"metric {winner.name!r}: {winner.value:g} / {winner.target:g} is within the "
            f"tolerance [{1 - band.down:g}, {1 + band.up:g}], keeping {winner.replicas}"
        )
    return (
        f"metric {winner.name!r}: ceil({baseline} * {winner.value:g} / "
        f"{winner.target:g}) = {winner.replicas}"
    )
