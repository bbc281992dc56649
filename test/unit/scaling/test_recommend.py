"""Recommendation rules: HPA ratio, baselines, hold on no signal, clamp, saturation."""

from __future__ import annotations

import math

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, MetricProvider, TargetRef
from llmscaler_runtime.scaling.recommend import SATURATED, HpaRecommender, ratio_replicas
from llmscaler_runtime.scaling.types import Measurement, MetricReading, TargetView


def spec(
    min_r: int = 1, max_r: int = 10, provider: MetricProvider = MetricProvider.PROMETHEUS
) -> LLMScalerSpec:
    return LLMScalerSpec(
        TargetRef("apps/v1", "Deployment", "web"),
        "http://p",
        min_r,
        max_r,
        metric_provider=provider,
    )


def view(spec_replicas: int = 4, ready: int = 4) -> TargetView:
    return TargetView("apps/v1", "Deployment", "web", "ns", spec_replicas, ready)


def prom(*values: tuple[float | None, float]) -> Measurement:
    return Measurement(
        "Prometheus",
        tuple(
            MetricReading(f"m{i}", "q", t, value=v, error=None if v is not None else "failed")
            for i, (v, t) in enumerate(values)
        ),
    )


rec = HpaRecommender().recommend


def test_ratio_uses_ready_replicas_as_baseline() -> None:
    # 3 ready of 4 requested: ceil(3 * 1.6 / 0.8) = 6, not ceil(4 * 2) = 8
    r = rec(spec(), view(4, 3), prom((1.6, 0.8)))
    assert r.replicas == 6 and r.baseline == 3


def test_largest_recommendation_across_metrics_wins() -> None:
    r = rec(spec(), view(4, 4), prom((0.4, 0.8), (3.0, 1.0), (1.0, 1.0)))
    assert r.replicas == 10  # 12 clamped to max 10
    assert r.unclamped == 12
    assert [v.replicas for v in r.per_metric] == [2, 12, 4]


def test_skipped_metric_does_not_vote_as_zero() -> None:
    # the failed guardrail must not pull the fleet to minReplicas
    r = rec(spec(), view(4, 4), prom((None, 1.0), (1.0, 1.0)))
    assert r.replicas == 4


def test_every_metric_skipped_holds() -> None:
    r = rec(spec(), view(4, 4), prom((None, 1.0), (None, 1.0)))
    assert r.replicas is None


def test_first_rollout_uses_spec_replicas_as_baseline() -> None:
    r = rec(spec(), view(spec_replicas=3, ready=0), prom((2.0, 1.0)))
    assert r.baseline == 3 and r.replicas == 6


def test_zero_replicas_uses_single_replica_baseline_so_fleet_wakes() -> None:
    r = rec(spec(min_r=0), view(spec_replicas=0, ready=0), prom((2.5, 1.0)))
    assert r.baseline == 1 and r.replicas == 3


def test_idle_metric_at_zero_min_scales_to_zero() -> None:
    r = rec(spec(min_r=0), view(4, 4), prom((0.0, 1.0)))
    assert r.replicas == 0


def test_clamp_to_min_and_max_reports_the_bound() -> None:
    low = rec(spec(min_r=2, max_r=5), view(4, 4), prom((0.1, 1.0)))
    assert (low.replicas, low.limited) == (2, "TooFewReplicas")
    high = rec(spec(min_r=2, max_r=5), view(4, 4), prom((4.0, 1.0)))
    assert (high.replicas, high.limited) == (5, "TooManyReplicas")
    within = rec(spec(min_r=2, max_r=5), view(4, 4), prom((1.0, 1.0)))
    assert (within.replicas, within.limited) == (4, None)


def test_max_replicas_zero_pins_fleet_at_zero() -> None:
    r = rec(spec(min_r=0, max_r=0), view(2, 2), prom((50.0, 1.0)))
    assert r.replicas == 0


@pytest.mark.parametrize("value", [1e308, 1e300, 2.0**63, 2.0**64 + 7])
def test_huge_ratio_saturates_at_max_replicas(value: float) -> None:
    r = rec(spec(max_r=7), view(5, 5), prom((value, 1e-300)))
    assert r.replicas == 7 and r.limited == "TooManyReplicas"


def test_overflowing_ratio_never_wraps() -> None:
    # value / target overflows to inf; baseline * inf must still saturate, not go negative
    assert ratio_replicas(3, 1e308, 1e-308) == SATURATED
    assert ratio_replicas(2**31 - 1, 2.0**40, 1.0) == SATURATED
    r = rec(spec(max_r=2**31 - 1), view(2**31 - 1, 2**31 - 1), prom((1e20, 1.0)))
    assert r.replicas == 2**31 - 1


def test_ratio_rejects_non_finite_input() -> None:
    with pytest.raises(ValueError):
        ratio_replicas(1, math.nan, 1.0)
    with pytest.raises(ValueError):
        ratio_replicas(1, 1.0, math.inf)


def test_float_noise_does_not_add_a_replica() -> None:
    assert ratio_replicas(3, 0.8, 0.8) == 3
    assert ratio_replicas(3, 2.1, 0.7) == 9  # 3 * (2.1 / 0.7) is 9.000000000000002 in floats
    assert ratio_replicas(3, 0.81, 0.8) == 4


def test_negative_value_reads_as_zero_demand() -> None:
    assert ratio_replicas(4, -3.0, 1.0) == 0


def test_custom_decision_is_absolute_not_a_ratio() -> None:
    custom = spec(provider=MetricProvider.CUSTOM)
    r = rec(custom, view(4, 2), Measurement("Custom", decision=7))
    assert r.replicas == 7  # not ceil(2 * 7 / anything)


def test_custom_decision_is_clamped() -> None:
    custom = spec(min_r=2, max_r=5, provider=MetricProvider.CUSTOM)
    assert rec(custom, view(), Measurement("Custom", decision=0)).replicas == 2
    assert rec(custom, view(), Measurement("Custom", decision=2**31 - 1)).replicas == 5


def test_custom_decision_zero_scales_to_zero_with_min_zero() -> None:
    custom = spec(min_r=0, provider=MetricProvider.CUSTOM)
    assert rec(custom, view(), Measurement("Custom", decision=0)).replicas == 0


def test_custom_failure_holds() -> None:
    custom = spec(provider=MetricProvider.CUSTOM)
    assert rec(custom, view(), Measurement("Custom", error="down")).replicas is None
