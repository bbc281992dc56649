"""Victim selection: newest-first, per-pod costs, stale-cost reset, minimal patches."""

from __future__ import annotations

import math
from typing import Any

import pytest

from llmscaler_runtime.scaling.types import INT32_MAX, INT32_MIN, PodCost, PodInfo
from llmscaler_runtime.scaling.victims import (
    NO_VICTIMS,
    VICTIM_COST,
    CacheAwareVictimSelector,
    VictimPlan,
    cost_from_value,
    plan_victims,
    pods_from_objects,
    selector_string,
)

from .fakes import pod

select = CacheAwareVictimSelector().select
PODS = [
    PodInfo("a", "2026-01-01T00:00:01Z"),
    PodInfo("b", "2026-01-01T00:00:03Z"),
    PodInfo("c", "2026-01-01T00:00:02Z"),
]


def test_newest_pods_get_a_low_cost_when_no_costs_are_known() -> None:
    assert select(PODS, 2, None) == (PodCost("b", VICTIM_COST), PodCost("c", VICTIM_COST))


def test_low_cost_only_on_exactly_the_pods_being_removed() -> None:
    assert select(PODS, 1, None) == (PodCost("b", VICTIM_COST),)
    assert select(PODS, 0, None) == ()


def test_stale_cost_from_an_earlier_decision_is_removed() -> None:
    pods = [
        PodInfo("a", "2026-01-01T00:00:01Z", deletion_cost=str(VICTIM_COST)),  # survived
        PodInfo("b", "2026-01-01T00:00:03Z"),
    ]
    assert select(pods, 1, None) == (PodCost("a", None), PodCost("b", VICTIM_COST))


def test_only_pods_whose_value_changes_are_patched() -> None:
    pods = [
        PodInfo("a", "2026-01-01T00:00:01Z"),
        PodInfo("b", "2026-01-01T00:00:03Z", deletion_cost=str(VICTIM_COST)),
    ]
    assert select(pods, 1, None) == ()
    costs = {"a": 5, "b": 7}
    already = [PodInfo("a", "t", "5"), PodInfo("b", "t", "3")]
    assert select(already, 1, costs) == (PodCost("b", 7),)


def test_per_pod_costs_are_written_and_unreported_pods_are_reset() -> None:
    pods = [PodInfo("a", "t1", "99"), PodInfo("b", "t2"), PodInfo("c", "t3")]
    assert select(pods, 1, {"b": 80, "c": 10}) == (
        PodCost("a", None),
        PodCost("b", 80),
        PodCost("c", 10),
    )


@pytest.mark.parametrize(
    ("value", "cost"),
    [
        (12.4, 12),
        (12.5, 13),
        (-12.5, -13),
        (0.49, 0),
        (-0.2, 0),
        (1e20, INT32_MAX),
        (-1e20, INT32_MIN),
        (math.inf, INT32_MAX),
        (-math.inf, INT32_MIN),
        (2147483647.6, INT32_MAX),
    ],
)
def test_cost_is_rounded_and_clamped_to_int32(value: float, cost: int) -> None:
    assert cost_from_value(value) == cost


def test_nan_cost_is_no_cost() -> None:
    assert cost_from_value(math.nan) is None


def test_terminating_pods_are_not_candidates() -> None:
    infos = pods_from_objects([pod("a", "t1", cost="4"), pod("b", "t2", terminating=True)])
    assert infos == [PodInfo("a", "t1", "4")]


def test_selector_string_covers_labels_and_expressions() -> None:
    sel = {
        "matchLabels": {"app": "web", "tier": "llm"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b", "a"]},
            {"key": "canary", "operator": "NotIn", "values": ["yes"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "old", "operator": "DoesNotExist"},
        ],
    }
    assert selector_string(sel) == ("app=web,tier=llm,zone in (a,b),canary notin (yes),gpu,!old")


def test_empty_or_bad_selector_is_refused() -> None:
    with pytest.raises(ValueError):
        selector_string({})
    with pytest.raises(ValueError):
        selector_string({"matchExpressions": [{"key": "k", "operator": "Near"}]})


# -- plan_victims: which pods are ranked, and with what ----------------------------------------


def _plan_for(
    *, current: int, replicas: int, behavior: str = "CacheAware", query: str | None = None
) -> tuple[Any, ...]:
    from llmscaler_runtime.api.v1alpha1 import LLMScaler
    from llmscaler_runtime.scaling.target import target_view
    from llmscaler_runtime.scaling.types import History, Plan

    from .fakes import FakeClient, FakeCluster, deployment, scaler_obj

    cluster = FakeCluster()
    for name, created in (("p1", "2026-01-01T00:00:01Z"), ("p2", "2026-01-01T00:00:02Z")):
        cluster.put(pod(name, created))
    scaler = LLMScaler.from_dict(scaler_obj(behavior=behavior, deletion_cost_query=query))
    plan = Plan(current, replicas, replicas, None, History(), History())
    return scaler, target_view(deployment(replicas=current)), plan, FakeClient(cluster)


def test_plan_victims_marks_the_newest_pod_for_a_cache_aware_scale_down() -> None:
    scaler, target, plan, client = _plan_for(current=2, replicas=1)
    got = plan_victims(
        scaler,
        target,
        plan,
        client=client,
        selector=CacheAwareVictimSelector(),
        cost_source=None,
        time_left=lambda: 10.0,
        asked=scaler,
    )
    assert got == VictimPlan((PodCost("p2", VICTIM_COST),))


def test_plan_victims_ranks_nothing_for_scale_up_behavior_none_or_zero() -> None:
    for kw in (
        {"current": 1, "replicas": 2},
        {"current": 2, "replicas": 1, "behavior": "None"},
        {"current": 2, "replicas": 0},
    ):
        scaler, target, plan, client = _plan_for(**kw)  # type: ignore[arg-type]
        got = plan_victims(
            scaler,
            target,
            plan,
            client=client,
            selector=CacheAwareVictimSelector(),
            cost_source=None,
            time_left=lambda: 10.0,
            asked=scaler,
        )
        assert got is NO_VICTIMS, kw


def test_plan_victims_falls_back_to_newest_first_when_no_time_is_left_for_costs() -> None:
    class Costs:
        def pod_costs(self, scaler: Any, budget: float) -> dict[str, int]:
            raise AssertionError("asked with no budget left")

    scaler, target, plan, client = _plan_for(current=2, replicas=1, query="cost_q")
    got = plan_victims(
        scaler,
        target,
        plan,
        client=client,
        selector=CacheAwareVictimSelector(),
        cost_source=Costs(),
        time_left=lambda: 0.0,
        asked=scaler,
    )
    assert got.changes == (PodCost("p2", VICTIM_COST),)
    assert got.cost_error is not None and "no time left" in got.cost_error
