"""The runner drives the real reconciler; the report's figures, checked by hand on small traces."""

from __future__ import annotations

import itertools
import math
from typing import Any

import attrs
import pytest

from llmscaler_sim.fleet import ColdStart, FleetModel
from llmscaler_sim.report import Slo, figures, render_table, to_json
from llmscaler_sim.run import simulate
from llmscaler_sim.trace import Trace
from llmscaler_sim.variants import build_variants


def scaler(**scale_down: Any) -> dict[str, Any]:
    sel = 'namespace="default", app="web"'
    return {
        "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
        "kind": "LLMScaler",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "serverAddress": "http://prometheus:9090",
            "minReplicas": 1,
            "maxReplicas": 4,
            "syncPeriodSeconds": 10,
            "metrics": [{"query": f"avg(vllm:kv_cache_usage_perc{{{sel}}})", "target": "0.5"}],
            "scaleDown": {"stabilizationWindowSeconds": 0, **scale_down},
        },
    }


def model() -> FleetModel:
    return FleetModel(
        max_sequences=100,
        kv_per_sequence=0.01,
        cold_start=ColdStart("fixed", 25),  # Ready between syncs: scraped before the next
        drain_seconds=10,
        scrape_interval=10,
        load_skew=0.0,
        warmup_seconds=0.0,
    )


def step_trace(levels: list[tuple[float, float]], end: float) -> Trace:
    times = [float(t) for t in range(0, int(end), 10)]
    demand = []
    for t in times:
        demand.append(next(v for start, v in reversed(levels) if t >= start))
    return Trace(tuple(times), tuple(demand), "concurrency", end)


def run(trace: Trace, **scale_down: Any):  # type: ignore[no-untyped-def]
    variant = build_variants([("s", scaler(**scale_down))], baselines=False)[0]
    return simulate(variant, trace, model(), initial_replicas=1)


def test_a_burst_scales_up_then_back_down_and_the_figures_add_up() -> None:
    # 40 sequences on 1 replica = 0.4 KV: hold. 150 from 100 s: KV caps at 1 -> 2 (ceil 1/0.5),
    # then 2 x 0.75 / 0.5 = 3 once both are Ready. Back to 40 at 300 s: ceil(0.4 / 0.5) = 1.
    result = run(step_trace([(0, 40), (100, 150), (300, 40)], 600))
    assert [d.replicas for d in result.decisions] == [2, 3, 1]
    f = figures(result, Slo(max_waiting=1000, max_kv=0.95, warm_kv=0.1))
    assert (f.scale_ups, f.scale_downs, f.cold_starts) == (2, 1, 2)
    assert f.peak_queue == 50.0  # 150 on the one replica that runs 100
    # 150 needs 2 replicas (capacity 100): short from the scrape at 100 s until the first
    # scrape after the second pod is Ready, one cold start after the first write.
    assert f.capacity_episodes == 1
    ready = result.decisions[0].time + 25
    assert f.time_to_capacity_max == pytest.approx(10 * math.ceil(ready / 10) - 100)
    # KV > 0.95 only while one replica carries 150 (capped at 1.0)
    assert f.slo_minutes > 0
    # replica-hours: pod 1 all 600 s; the others from their creation to the end of their drain
    up1, up2, down = (d.time for d in result.decisions)
    assert len(result.removals) == 2 and f.warm_caches_discarded == 2
    expected = (600 + (down + 10 - up1) + (down + 10 - up2)) / 3600
    assert f.replica_hours == pytest.approx(expected)
    assert f.gpu_hours == f.replica_hours


def test_replica_hours_start_with_the_trace_even_for_warm_initial_pods() -> None:
    # the pods present at the start are backdated by the warmup so they route as warm; that
    # time is before the trace and must not be billed: 1 replica x 600 s is 1/6 h, exactly
    warm = attrs.evolve(model(), warmup_seconds=FleetModel().warmup_seconds)
    assert warm.warmup_seconds > 0
    variant = build_variants([("s", scaler())], baselines=False)[0]
    result = simulate(variant, step_trace([(0, 40)], 600), warm, initial_replicas=1)
    assert result.decisions == ()
    assert result.replica_hours == pytest.approx(600 / 3600, abs=1e-9)
    assert round(result.replica_hours, 4) == 0.1667


def test_the_step_cap_walks_down_and_the_settle_guard_waits_for_the_drain() -> None:
    trace = step_trace([(0, 180), (100, 10)], 400)
    variant = build_variants([("s", scaler(maxStepReplicas=1))], baselines=False)[0]
    result = simulate(variant, trace, model(), initial_replicas=4)
    downs = [d for d in result.decisions if d.replicas < d.previous]
    assert [d.replicas for d in downs] == [3, 2, 1]
    gaps = [b.time - a.time for a, b in itertools.pairwise(downs)]
    assert all(g >= model().drain_seconds for g in gaps), gaps


def test_table_and_json_carry_every_variant() -> None:
    result = run(step_trace([(0, 40)], 100))
    text = render_table([result])
    assert "s" in text and "GPU-h" in text
    doc = to_json([result], trace="t")
    assert doc["variants"][0]["figures"]["syncs"] == result.syncs
    assert doc["trace"] == "t"


def test_a_query_selecting_no_pod_is_counted_as_failed_syncs_and_holds() -> None:
    obj = scaler()
    obj["spec"]["metrics"][0]["query"] = 'avg(vllm:kv_cache_usage_perc{app="other"})'
    variant = build_variants([("s", obj)], baselines=False)[0]
    result = simulate(variant, step_trace([(0, 150)], 100), model(), initial_replicas=1)
    assert result.decisions == ()
    assert figures(result).failed_syncs == result.syncs
