"""Recommendation rules: HPA ratio, baselines, hold on no signal, clamp, saturation."""

from __future__ import annotations

import math

import pytest

from llmscaler_runtime.api.v1alpha1 import (
    LLMScalerSpec,
    MetricProvider,
    ScaleDown,
    ScaleUp,
    TargetRef,
)
from llmscaler_runtime.scaling.recommend import SATURATED, HpaRecommender, ratio_replicas
from llmscaler_runtime.scaling.types import Measurement, MetricReading, TargetView


def spec(
    min_r: int = 1,
    max_r: int = 10,
    provider: MetricProvider = MetricProvider.PROMETHEUS,
    *,
    up: str = "0",
    down: str = "0",
) -> LLMScalerSpec:
    return LLMScalerSpec(
        TargetRef("apps/v1", "Deployment", "web"),
        "http://p",
        min_r,
        max_r,
        metric_provider=provider,
        scale_up=ScaleUp(tolerance=up),
        scale_down=ScaleDown(tolerance=down),
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


# --- tolerance (scaleUp.tolerance / scaleDown.tolerance, the HPA's per-direction band) ------


@pytest.mark.parametrize(
    ("value", "vote", "tolerated"),
    [(0.82, 10, True), (0.86, 11, False), (0.66, 10, True), (0.62, 8, False)],
)
def test_the_readmes_worked_tolerance_example(value: float, vote: int, tolerated: bool) -> None:
    s = spec(max_r=20, up="0.05", down="0.2")
    r = rec(s, view(10, 10), prom((value, 0.8)))
    assert (r.replicas, r.per_metric[0].tolerated) == (vote, tolerated)
    plain = rec(spec(max_r=20), view(10, 10), prom((value, 0.8)))
    assert plain.replicas == math.ceil(10 * value / 0.8)  # without a band: the ratio


def test_the_band_ends_are_inclusive_despite_float_noise() -> None:
    # 0.72 / 0.8 is 0.8999999999999999 and 0.88 / 0.8 is 1.0999999999999999 in floats
    s = spec(up="0.1", down="0.1")
    assert rec(s, view(10, 10), prom((0.72, 0.8))).replicas == 10
    assert rec(s, view(10, 10), prom((0.88, 0.8))).replicas == 10
    assert rec(s, view(10, 10), prom((0.7, 0.8))).replicas == 9
    assert rec(s, view(10, 10), prom((0.9, 0.8))).replicas == 10  # max 10, ratio asks 12
    assert rec(s, view(10, 10), prom((0.9, 0.8))).unclamped == 12


def test_each_direction_has_its_own_band() -> None:
    only_down = spec(max_r=20, down="0.2")
    assert rec(only_down, view(10, 10), prom((0.66, 0.8))).replicas == 10  # held
    assert rec(only_down, view(10, 10), prom((0.82, 0.8))).replicas == 11  # up is not damped
    only_up = spec(max_r=20, up="0.2")
    assert rec(only_up, view(10, 10), prom((0.9, 0.8))).replicas == 10  # held
    assert rec(only_up, view(10, 10), prom((0.78, 0.8))).replicas == 10  # ceil(9.75)
    assert rec(only_up, view(10, 10), prom((0.7, 0.8))).replicas == 9  # down is not damped


def test_a_tolerated_vote_is_spec_replicas_not_the_ready_baseline() -> None:
    # 4 requested, 2 ready, the metric at its target: the band keeps 4 (the HPA's
    # currentReplicas); the plain ratio would vote ceil(2 * 1.0) = 2 and shrink a starting fleet
    s = spec(up="0.1", down="0.1")
    assert rec(s, view(4, 2), prom((0.8, 0.8))).replicas == 4
    assert rec(spec(), view(4, 2), prom((0.8, 0.8))).replicas == 2


def test_one_metric_inside_its_band_holds_a_scale_down_but_not_a_scale_up() -> None:
    # the largest vote wins, as in the HPA: a tolerated metric votes for the current count
    s = spec(max_r=20, up="0.1", down="0.1")
    down = rec(s, view(10, 10), prom((0.78, 0.8), (0.2, 0.8)))
    assert [v.replicas for v in down.per_metric] == [10, 3] and down.replicas == 10
    assert "within the tolerance [0.9, 1.1], keeping 10" in down.reason
    up = rec(s, view(10, 10), prom((0.78, 0.8), (1.2, 0.8)))
    assert up.replicas == 15


def test_no_band_at_zero_replicas_so_the_fleet_can_wake() -> None:
    s = spec(min_r=0, up="0.5", down="0.5")
    # baseline 1, ratio 1.2 is inside [0.5, 1.5] but "no change" would mean "stay asleep"
    assert rec(s, view(0, 0), prom((1.2, 1.0))).replicas == 2


def test_tolerance_does_not_apply_to_a_custom_decision() -> None:
    custom = spec(provider=MetricProvider.CUSTOM, up="0.5", down="0.5")
    assert rec(custom, view(4, 4), Measurement("Custom", decision=5)).replicas == 5
    assert rec(custom, view(4, 4), Measurement("Custom", decision=3)).replicas == 3


def test_zero_tolerances_change_nothing_even_at_a_ratio_of_one() -> None:
    assert rec(spec(), view(4, 3), prom((0.8, 0.8))).replicas == 3  # ceil(3 * 1.0), as before
    assert rec(spec(up="0", down="0.0"), view(4, 3), prom((0.8, 0.8))).replicas == 3


# --- activationThreshold (per metric, at zero replicas; KEDA's activation) ------------------


def prom_at(*values: tuple[float | None, float, float | None]) -> Measurement:
    """Readings with (value, target, activationThreshold)."""
    return Measurement(
        "Prometheus",
        tuple(
            MetricReading(f"m{i}", "q", t, value=v, activation_threshold=a)
            for i, (v, t, a) in enumerate(values)
        ),
    )


def test_at_zero_a_value_not_above_the_threshold_does_not_wake_the_fleet() -> None:
    s = spec(min_r=0)
    quiet = rec(s, view(0, 0), prom_at((2.0, 1.0, 2.0)))
    assert quiet.replicas == 0 and quiet.per_metric[0].inactive
    assert "not above its activationThreshold" in quiet.reason
    woken = rec(s, view(0, 0), prom_at((2.5, 1.0, 2.0)))
    assert woken.replicas == 3 and not woken.per_metric[0].inactive  # ceil(1 * 2.5 / 1)


def test_without_a_threshold_any_value_above_zero_wakes_the_fleet_as_before() -> None:
    s = spec(min_r=0)
    assert rec(s, view(0, 0), prom_at((0.01, 1.0, None))).replicas == 1
    assert rec(s, view(0, 0), prom_at((0.0, 1.0, None))).replicas == 0
    assert rec(s, view(0, 0), prom_at((0.01, 1.0, 0.0))).replicas == 1  # "0" is the same


def test_any_active_metric_wakes_the_fleet() -> None:
    s = spec(min_r=0)
    r = rec(s, view(0, 0), prom_at((0.4, 1.0, 0.5), (3.0, 2.0, 1.0)))
    assert [v.inactive for v in r.per_metric] == [True, False] and r.replicas == 2


def test_the_threshold_has_no_effect_while_replicas_run() -> None:
    s = spec(min_r=0)
    # 2 ready, value 0.4 below the threshold 1: the ratio still votes ceil(2 * 0.4) = 1
    assert rec(s, view(2, 2), prom_at((0.4, 1.0, 1.0))).replicas == 1
    # and a first rollout (nothing ready, spec.replicas > 0) is not "at zero"
    assert rec(s, view(3, 0), prom_at((0.4, 1.0, 1.0))).replicas == 2


def test_min_replicas_still_applies_at_zero() -> None:
    # a fleet at zero below minReplicas 2 is raised to the bound whatever the threshold says
    assert rec(spec(min_r=2), view(0, 0), prom_at((0.1, 1.0, 5.0))).replicas == 2
