"""Pacing: scale-down stabilization, hold after a write, re-clamp, seeding, step cap, settle;
scale-up stabilization and step cap (spec.scaleUp)."""

from __future__ import annotations

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, ScaleDown, ScaleUp, TargetRef
from llmscaler_runtime.scaling.pacing import HistoryStore, ScaleDownPacer
from llmscaler_runtime.scaling.types import History, Plan, Recommendation, TargetView

T0 = 1000.0


def spec(
    window: int = 0,
    step: int = 0,
    min_r: int = 1,
    max_r: int = 20,
    *,
    up_window: int = 0,
    up_step: int = 0,
) -> LLMScalerSpec:
    return LLMScalerSpec(
        TargetRef("apps/v1", "Deployment", "web"),
        "http://p",
        min_r,
        max_r,
        scale_down=ScaleDown(stabilization_window_seconds=window, max_step_replicas=step),
        scale_up=ScaleUp(stabilization_window_seconds=up_window, max_step_replicas=up_step),
    )


def view(replicas: int, ready: int | None = None, terminating: int | None = None) -> TargetView:
    return TargetView(
        "apps/v1",
        "Deployment",
        "web",
        "ns",
        replicas,
        replicas if ready is None else ready,
        terminating_replicas=terminating,
    )


def rec(n: int | None) -> Recommendation:
    return Recommendation(n, n, 1)


pace = ScaleDownPacer().pace


class Sim:
    """Drives the pacer like the reconciler does: stores the history a successful write leaves."""

    def __init__(self, s: LLMScalerSpec, replicas: int) -> None:
        self.spec = s
        self.replicas = replicas
        self.history: History | None = None
        self.t = T0

    def sync(
        self,
        recommended: int | None,
        at: float,
        *,
        ready: int | None = None,
        terminating: int | None = None,
    ) -> Plan:
        self.t = at
        plan = pace(
            self.history, self.spec, view(self.replicas, ready, terminating), rec(recommended), at
        )
        self.history = plan.history_if_written
        self.replicas = plan.replicas
        return plan


def test_scale_up_is_immediate_even_inside_window() -> None:
    sim = Sim(spec(window=300), 3)
    assert sim.sync(8, T0).replicas == 8


def test_stabilization_holds_at_largest_recommendation_within_window() -> None:
    sim = Sim(spec(window=100), 6)
    sim.sync(6, T0)
    plan = sim.sync(2, T0 + 10)
    assert (plan.replicas, plan.desired, plan.held_by) == (6, 6, "stabilization")
    sim.sync(4, T0 + 50)
    # 6 (at T0) has left the window at T0+100; 4 (at T0+50) is still in it
    plan = sim.sync(2, T0 + 100)
    assert (plan.replicas, plan.desired) == (4, 4)


def test_stabilization_window_zero_scales_down_at_once() -> None:
    sim = Sim(spec(window=0), 6)
    assert sim.sync(2, T0).replicas == 2


def test_history_is_replaced_by_the_count_written_after_a_scale_down() -> None:
    sim = Sim(spec(window=60, step=2), 10)
    sim.sync(10, T0)
    first = sim.sync(2, T0 + 60)  # window passed: step 10 -> 8
    assert first.replicas == 8
    assert first.history_if_written.samples == ((T0 + 60, 8),)
    # the next step waits one full window after the write, although 2 is recommended
    held = sim.sync(2, T0 + 100)
    assert (held.replicas, held.held_by) == (8, "stabilization")
    assert sim.sync(2, T0 + 120).replicas == 6


def test_failed_write_does_not_start_a_hold() -> None:
    plan = pace(History(((T0, 10),)), spec(window=60), view(10), rec(2), T0 + 60)
    assert plan.replicas == 2
    assert plan.history_if_failed.samples == ((T0 + 60, 2),)
    assert plan.history_if_written.samples == ((T0 + 60, 2),)
    assert not plan.history_if_failed.stepping_down and plan.history_if_written.stepping_down


def test_stabilized_value_is_clamped_again_so_lower_max_applies_at_once() -> None:
    sim = Sim(spec(window=300, max_r=20), 10)
    sim.sync(10, T0)
    sim.spec = spec(window=300, max_r=4)
    plan = sim.sync(4, T0 + 1)  # the recommender already clamped to the new max
    assert (plan.desired, plan.replicas) == (4, 4)


def test_first_sync_seeds_history_with_current_replicas() -> None:
    # a restarted manager (no history) must not scale down before one full window
    s = spec(window=120)
    plan = pace(None, s, view(10), rec(2), T0)
    assert (plan.replicas, plan.held_by) == (10, "stabilization")
    plan = pace(plan.history_if_written, s, view(10), rec(2), T0 + 119)
    assert plan.replicas == 10
    plan = pace(plan.history_if_written, s, view(10), rec(2), T0 + 120)
    assert plan.replicas == 2


def test_max_step_replicas_caps_each_scale_down_write() -> None:
    sim = Sim(spec(step=2), 10)
    walk = [sim.sync(1, T0 + i).replicas for i in range(6)]
    assert walk == [8, 6, 4, 2, 1, 1]


def test_desired_reports_destination_not_the_capped_step() -> None:
    plan = pace(None, spec(step=2), view(10), rec(3), T0)
    assert (plan.desired, plan.replicas, plan.held_by) == (3, 8, "step-cap")


def test_step_cap_does_not_limit_scale_up() -> None:
    assert pace(None, spec(step=1), view(2), rec(9), T0).replicas == 9


def test_settle_guard_waits_for_ready_to_reach_spec_between_steps() -> None:
    sim = Sim(spec(step=2), 10)
    assert sim.sync(1, T0).replicas == 8
    held = sim.sync(1, T0 + 1, ready=9)  # pods from the last step still counted
    assert (held.replicas, held.held_by, held.desired) == (8, "settle", 1)
    assert sim.sync(1, T0 + 2, ready=8).replicas == 6


def test_settle_guard_waits_for_terminating_pods() -> None:
    sim = Sim(spec(step=2), 10)
    sim.sync(1, T0)
    assert sim.sync(1, T0 + 1, terminating=2).held_by == "settle"
    assert sim.sync(1, T0 + 2, terminating=0).replicas == 6


def test_settle_guard_does_not_block_scale_up() -> None:
    sim = Sim(spec(step=2), 10)
    sim.sync(1, T0)
    assert sim.sync(15, T0 + 1, ready=3).replicas == 15


def test_settle_guard_only_between_steps_of_a_walk_down() -> None:
    # an unready pod (e.g. pending for a GPU) must not block the first scale-down
    assert pace(None, spec(), view(5, ready=4), rec(2), T0).replicas == 2


def test_no_measurement_holds_and_counts_as_holding_the_current_count() -> None:
    plan = pace(History(((T0, 9),)), spec(window=60), view(7), rec(None), T0 + 1)
    assert (plan.replicas, plan.desired, plan.held_by) == (7, 7, "no-measurement")
    assert plan.history_if_written.samples == ((T0, 9), (T0 + 1, 7))
    assert plan.history_if_failed.samples == ((T0, 9), (T0 + 1, 7))


def test_no_scale_down_within_a_window_of_a_failed_sync() -> None:
    """Good at 7, a failure at +50 s, then a low reading: the fleet waits a window from the
    failure, not from the last good reading (issue 12: nothing failed in the window)."""
    failed = pace(History(((T0, 7),)), spec(window=60), view(7), rec(None), T0 + 50)
    low = pace(failed.history_if_written, spec(window=60), view(7), rec(2), T0 + 70)
    assert low.replicas == 7 and low.held_by == "stabilization"
    later = pace(low.history_if_written, spec(window=60), view(7), rec(2), T0 + 110)
    assert later.replicas == 2


def test_history_store_forgets_by_uid() -> None:
    store = HistoryStore()
    store.put("a", History(((T0, 1),)))
    store.put("b", History())
    store.forget("a")
    store.forget("missing")
    assert store.get("a") is None and store.get("b") == History() and len(store) == 1


def test_plan_is_frozen() -> None:
    plan = pace(None, spec(), view(3), rec(3), T0)
    assert not plan.changes
    try:
        plan.replicas = 4  # type: ignore[misc]
    except attrs.exceptions.FrozenInstanceError:
        pass
    else:
        raise AssertionError("Plan must be immutable")


def test_history_keeps_only_samples_that_can_still_be_the_maximum() -> None:
    s = spec(window=1000)
    history = None
    for i, r in enumerate([5, 9, 3, 7, 4, 4, 6]):
        plan = pace(history, s, view(9), rec(r), T0 + i)
        history = plan.history_if_written
    assert history is not None
    # 9 dominates everything before it; 7 and 6 stay because each may outlive 9's successor
    assert [r for (_, r) in history.samples] == [9, 7, 6]
    assert pace(history, s, view(9), rec(1), T0 + 10).desired == 9


# --- the bounds are never damped (HPA semantics) ---------------------------------------------


def test_lowering_max_below_current_goes_to_max_in_one_write_despite_the_step_cap() -> None:
    # The HPA sets a workload above maxReplicas straight to maxReplicas; the step cap only
    # paces what lies below the bound.
    plan = pace(History(((T0, 10),)), spec(window=300, step=1, max_r=4), view(10), rec(4), T0 + 1)
    assert (plan.desired, plan.replicas, plan.held_by) == (4, 4, None)
    assert plan.history_if_written == History(((T0 + 1, 4),), True)


def test_lowering_max_below_current_is_not_held_by_the_settle_guard() -> None:
    history = History(((T0, 10),), stepping_down=True)
    plan = pace(history, spec(step=1, max_r=4), view(10, ready=8), rec(4), T0 + 1)
    assert plan.replicas == 4


def test_below_max_the_rest_of_the_walk_down_stays_paced() -> None:
    # 10 -> max 6 at once; the metric wants 2, which is paced as usual from there
    plan = pace(None, spec(step=1, max_r=6), view(10), rec(2), T0)
    assert (plan.desired, plan.replicas, plan.held_by) == (2, 6, "step-cap")


def test_no_measurement_still_enforces_the_bounds() -> None:
    above = pace(History(((T0, 9),)), spec(window=60, max_r=4), view(9), rec(None), T0 + 1)
    assert (above.replicas, above.held_by) == (4, "no-measurement")
    assert above.history_if_written == History(((T0 + 1, 4),), True)
    assert above.history_if_failed.samples == ((T0 + 1, 9),)  # the hold, now
    below = pace(None, spec(min_r=3), view(1), rec(None), T0)
    assert below.replicas == 3
    pinned = pace(None, spec(min_r=0, max_r=0), view(2), rec(None), T0)
    assert pinned.replicas == 0
    # a fleet at zero within its bounds (scale-to-zero) is held at zero, not woken
    at_zero = pace(None, spec(min_r=0, max_r=5), view(0), rec(None), T0)
    assert (at_zero.replicas, at_zero.changes) == (0, False)


def test_a_restart_mid_walk_down_still_waits_for_terminating_pods() -> None:
    # the previous leader stepped 10 -> 9 and a pod is still terminating when we take over
    held = pace(None, spec(step=1), view(9, terminating=1), rec(2), T0)
    assert (held.replicas, held.held_by) == (9, "settle")
    assert (
        pace(
            held.history_if_written, spec(step=1), view(9, terminating=0), rec(2), T0 + 15
        ).replicas
        == 8
    )


# --- scale-up pacing (spec.scaleUp; off by default) -------------------------------------------


def test_scale_up_window_grows_only_to_the_lowest_recommendation_in_the_window() -> None:
    sim = Sim(spec(up_window=60, max_r=50), 1)
    sim.sync(1, T0)
    burst = sim.sync(40, T0 + 15)  # 1 was recommended 15 s ago: hold
    assert (burst.replicas, burst.desired, burst.held_by) == (1, 1, "scale-up-stabilization")
    sim.sync(10, T0 + 30)
    sim.sync(40, T0 + 45)
    # at T0+60 the 1 has left the window; the lowest left is 10 (at T0+30)
    partial = sim.sync(40, T0 + 60)
    assert (partial.replicas, partial.desired, partial.held_by) == (
        10,
        10,
        "scale-up-stabilization",
    )
    assert sim.sync(40, T0 + 89).replicas == 10
    full = sim.sync(40, T0 + 90)  # 10 (at T0+30) has left: every sample in the window is 40
    assert (full.replicas, full.held_by) == (40, None)


def test_a_burst_shorter_than_the_scale_up_window_adds_nothing() -> None:
    sim = Sim(spec(up_window=60, max_r=50), 2)
    sim.sync(2, T0)
    for i in range(1, 4):
        assert sim.sync(30, T0 + 15 * i).replicas == 2
    assert sim.sync(2, T0 + 60).replicas == 2  # the burst is over before the window passed
    assert sim.sync(30, T0 + 75).replicas == 2  # and a new one starts its own window


def test_scale_up_window_does_not_hold_a_scale_down_or_the_scale_down_window_a_scale_up() -> None:
    both = spec(window=60, up_window=60)
    sim = Sim(both, 5)
    sim.sync(5, T0)
    assert sim.sync(2, T0 + 60).replicas == 2  # the up window keeps no higher count
    sim2 = Sim(spec(window=60), 5)
    assert sim2.sync(9, T0).replicas == 9  # without an up window scale-up stays immediate


def test_first_sync_seeds_the_scale_up_window_too() -> None:
    # as in the HPA (and as the scale-down window): a restarted manager waits one window
    s = spec(up_window=30)
    plan = pace(None, s, view(2), rec(8), T0)
    assert (plan.replicas, plan.held_by) == (2, "scale-up-stabilization")
    assert plan.history_if_written.up_samples == ((T0, 2), (T0, 8))
    plan = pace(plan.history_if_written, s, view(2), rec(8), T0 + 30)
    assert plan.replicas == 8


def test_a_sync_that_measured_nothing_holds_the_scale_up_window() -> None:
    s = spec(up_window=60)
    good = pace(None, s, view(3), rec(3), T0)
    failed = pace(good.history_if_written, s, view(3), rec(None), T0 + 50)
    assert failed.history_if_written.up_samples == ((T0 + 50, 3),)
    high = pace(failed.history_if_written, s, view(3), rec(9), T0 + 70)
    assert (high.replicas, high.held_by) == (3, "scale-up-stabilization")
    assert pace(high.history_if_written, s, view(3), rec(9), T0 + 110).replicas == 9


def test_a_failed_write_keeps_the_scale_up_window() -> None:
    s = spec(up_window=60)
    plan = pace(History(((T0, 3),), up_samples=((T0, 3),)), s, view(3), rec(9), T0 + 60)
    assert plan.replicas == 9
    assert plan.history_if_failed.up_samples == plan.history_if_written.up_samples
    assert plan.history_if_failed.up_samples == ((T0 + 60, 9),)


def test_scale_up_history_keeps_only_samples_that_can_still_be_the_minimum() -> None:
    s = spec(up_window=1000, max_r=50)
    history = None
    for i, r in enumerate([5, 2, 8, 4, 6, 6, 3]):
        history = pace(history, s, view(2), rec(r), T0 + i).history_if_written
    assert history is not None
    # the seed (2) and the 2 dominate what came before them; 3 replaced 4 and 6
    assert [r for (_, r) in history.up_samples] == [2, 3]
    # the window is off: nothing is kept at all
    off = pace(None, spec(max_r=50), view(2), rec(5), T0).history_if_written
    assert off.up_samples == ()


def test_scale_up_step_cap_bounds_each_write_and_desired_is_the_destination() -> None:
    sim = Sim(spec(up_step=4, max_r=50), 1)
    walk = []
    for i in range(12):
        plan = sim.sync(40, T0 + 15 * i)
        walk.append((plan.replicas, plan.held_by))
        assert plan.desired == 40
    assert [r for r, _ in walk] == [5, 9, 13, 17, 21, 25, 29, 33, 37, 40, 40, 40]
    assert {h for _, h in walk[:9]} == {"scale-up-step-cap"} and walk[9][1] is None


def test_scale_up_step_cap_has_no_settle_guard() -> None:
    # pods that fail readiness under overload must not stop the fleet from growing
    sim = Sim(spec(up_step=2, max_r=50), 4)
    assert sim.sync(20, T0).replicas == 6
    assert sim.sync(20, T0 + 15, ready=3).replicas == 8


def test_scale_up_step_cap_does_not_limit_a_scale_down() -> None:
    assert pace(None, spec(up_step=1), view(9), rec(2), T0).replicas == 2


def test_scale_up_step_cap_does_not_damp_raising_the_fleet_to_min_replicas() -> None:
    # 0 -> minReplicas 5 in one write; only what lies above the bound is paced
    plan = pace(None, spec(up_step=2, min_r=5, max_r=50), view(0), rec(20), T0)
    assert (plan.replicas, plan.desired, plan.held_by) == (5, 20, "scale-up-step-cap")
    exact = pace(None, spec(up_step=2, min_r=5, max_r=50), view(0), rec(5), T0)
    assert (exact.replicas, exact.held_by) == (5, None)


def test_scale_up_window_does_not_damp_raising_the_fleet_to_min_replicas() -> None:
    # the seed (1) is below the new minReplicas 4: the bound applies at once anyway
    plan = pace(None, spec(up_window=300, min_r=4), view(1), rec(6), T0)
    assert (plan.replicas, plan.desired, plan.held_by) == (4, 4, "scale-up-stabilization")


def test_window_and_cap_together_bound_a_burst_from_1_to_40() -> None:
    """The README's example: a 60 s window, 4 replicas a step, a 15 s period."""
    sim = Sim(spec(up_window=60, up_step=4, max_r=40), 1)
    sim.sync(1, T0)
    sizes = [sim.sync(40, T0 + 15 * i).replicas for i in range(1, 15)]
    assert sizes == [1, 1, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 40, 40]
