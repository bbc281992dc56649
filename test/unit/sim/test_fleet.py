"""The fleet model: capacity, cold starts, drains and the ReplicaSet's victim order."""

from __future__ import annotations

import pytest

from llmscaler_sim.fleet import ColdStart, Fleet, FleetModel

T0 = 1_000_000.0


def fleet(replicas: int = 2, **kw: object) -> Fleet:
    model = FleetModel(
        max_sequences=10,
        kv_per_sequence=0.05,
        cold_start=ColdStart("fixed", 30),
        drain_seconds=20,
        load_skew=0.0,
        warmup_seconds=0.0,
        **kw,  # type: ignore[arg-type]
    )
    return Fleet(model, namespace="ns", name="web", app="web", replicas=replicas, now=T0)


def test_demand_beyond_capacity_waits_and_kv_follows_running() -> None:
    f = fleet(2)
    samples, stats = f.scrape(T0, 30.0)
    assert stats.ready == 2 and stats.needed == 3
    assert stats.waiting == pytest.approx(10.0)  # 15 per pod, 10 run, 5 wait each
    kv = {s.labels["pod"]: s.value for s in samples if s.name == "vllm:kv_cache_usage_perc"}
    assert list(kv.values()) == [pytest.approx(0.5), pytest.approx(0.5)]


def test_new_pods_are_ready_after_the_cold_start_and_removed_ones_drain() -> None:
    f = fleet(1)
    f.set_replicas(2, T0)
    assert f.deployment(T0 + 29)["status"]["readyReplicas"] == 1
    assert f.deployment(T0 + 30)["status"]["readyReplicas"] == 2
    f.set_replicas(1, T0 + 100)
    dep = f.deployment(T0 + 110)
    assert dep["status"]["terminatingReplicas"] == 1 and dep["status"]["replicas"] == 1
    assert f.deployment(T0 + 120)["status"]["terminatingReplicas"] == 0
    # pod 1: 0..120 h ago-warm start counts from T0; pod 2: T0..T0+120
    assert f.pod_hours(T0 + 120) == pytest.approx((120 + 120) / 3600)
    assert f.created_pods == 1


def test_scale_down_honours_deletion_cost_then_removes_the_newest() -> None:
    f = fleet(3)
    names = [p.name for p in f.pods]
    f.set_replicas(2, T0 + 1)
    assert [r.pod for r in f.removals] == [names[2]]  # no costs: the newest
    f.set_replicas(3, T0 + 2)
    f.scrape(T0 + 40, 10.0)
    assert f.annotate(names[0], "-5")
    f.set_replicas(2, T0 + 41)
    assert f.removals[-1].pod == names[0]  # the lowest cost first


def test_starting_pods_go_before_ready_ones() -> None:
    f = fleet(2)
    f.set_replicas(3, T0)
    starting = f.pods[-1].name
    f.set_replicas(2, T0 + 5)
    assert f.removals[-1].pod == starting and not f.removals[-1].was_ready


def test_cold_start_distributions_parse_and_stay_non_negative() -> None:
    import random

    assert ColdStart.parse("90") == ColdStart("fixed", 90)
    u = ColdStart.parse("uniform:100,50")
    rng = random.Random(1)
    assert all(50 <= u.sample(rng) <= 150 for _ in range(100))
    assert ColdStart.parse("lognormal:120,0.3").sample(rng) > 0
    with pytest.raises(ValueError, match="invalid cold start"):
        ColdStart.parse("gamma:1")
