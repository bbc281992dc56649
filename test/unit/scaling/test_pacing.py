"""Scale-down pacing: stabilization, hold after a write, re-clamp, seeding, step cap, settle."""

from __future__ import annotations

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, ScaleDown, TargetRef
from llmscaler_runtime.scaling.pacing import HistoryStore, ScaleDownPacer
from llmscaler_runtime.scaling.types import History, Plan, Recommendation, TargetView

T0 = 1000.0


def spec(window: int = 0, step: int = 0, min_r: int = 1, max_r: int = 20) -> LLMScalerSpec:
    return LLMScalerSpec(
        TargetRef("apps/v1", "Deployment", "web"),
        "http://p",
        min_r,
        max_r,
        scale_down=ScaleDown(stabilization_window_seconds=window, max_step_replicas=step),
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
