"""The runner drives the real reconciler; the report's figures, checked by hand on small traces."""

from __future__ import annotations

import io
import itertools
import logging
import math
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import structlog

from llmscaler_runtime.log import configure_logging
from llmscaler_sim.fleet import ColdStart, FleetModel
from llmscaler_sim.report import Slo, figures, render_svg, render_table, to_json
from llmscaler_sim.run import (
    PreflightError,
    capacity_replicas,
    preflight,
    simulate,
    simulate_all,
    steady_replicas,
)
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


def test_the_run_starts_at_the_specs_fixed_point_not_at_full_capacity() -> None:
    # 150 sequences fit on 2 replicas (capacity 100), but at target 0.5 KV the recommendation
    # for 2 (0.75 each) is 3: starting at 2 would open every variant with a forced scale-up
    trace = step_trace([(0, 150)], 300)
    variant = build_variants([("s", scaler())], baselines=False)[0]
    assert capacity_replicas(variant, trace, model()) == 2
    assert steady_replicas(variant, trace, model()) == 3
    result = simulate(variant, trace, model())
    assert result.initial_replicas == 3
    assert result.decisions == ()
    # a looser target has a smaller fixed point, found by the same reconciler
    loose = scaler()
    loose["spec"]["metrics"][0]["target"] = "0.8"
    variant = build_variants([("s", loose)], baselines=False)[0]
    assert simulate(variant, trace, model()).initial_replicas == 2


def test_initial_replicas_must_not_be_negative() -> None:
    variant = build_variants([("s", scaler())], baselines=False)[0]
    with pytest.raises(ValueError, match=">= 0"):
        simulate(variant, step_trace([(0, 40)], 100), model(), initial_replicas=-1)


@pytest.mark.parametrize(
    ("field", "query", "why"),
    [
        ("metric", 'avg(vllm:kv_cache_usage_perc{app="other"})', "no series"),
        ("metric", "histogram_quantile(0.9, rate(x_bucket[1m]))", "histogram_quantile"),
        ("cost", 'vllm:kv_cache_usage_perc{app="other"} * 100', "no series"),
    ],
)
def test_preflight_names_the_variant_and_the_query_it_cannot_answer(
    field: str, query: str, why: str
) -> None:
    obj = scaler(behavior="CacheAware", deletionCostQuery='vllm:kv_cache_usage_perc{app="web"}')
    if field == "metric":
        obj["spec"]["metrics"][0]["query"] = query
    else:
        obj["spec"]["scaleDown"]["deletionCostQuery"] = query
    variant = build_variants([("tight", obj)], baselines=False)[0]
    with pytest.raises(PreflightError) as err:
        preflight(variant, step_trace([(0, 40)], 100), model())
    message = str(err.value)
    assert "'tight'" in message and query in message and why in message
    good = build_variants([("s", scaler())], baselines=False)[0]
    preflight(good, step_trace([(0, 40)], 100), model())  # a query it can answer passes


@pytest.fixture(params=["structlog-defaults", "stdlib"])
def log_stream(request: pytest.FixtureRequest) -> Iterator[io.StringIO]:
    """Either way logging can be set up: structlog's own print logger (to stdout), or through
    the stdlib to a stream (the manager's configure_logging); a run must print nothing."""
    old = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    if request.param == "stdlib":
        configure_logging("debug", "console", stream=stream)
    else:
        structlog.reset_defaults()
    yield stream
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)
    structlog.configure(**old)


def test_warnings_of_a_failing_run_are_counted_not_printed(
    capsys: pytest.CaptureFixture[str], log_stream: io.StringIO
) -> None:
    obj = scaler()
    obj["spec"]["metrics"][0]["query"] = 'avg(vllm:kv_cache_usage_perc{app="other"})'
    variant = build_variants([("s", obj)], baselines=False)[0]
    before = structlog.get_config()
    result = simulate(variant, step_trace([(0, 40)], 100), model(), initial_replicas=1)
    assert structlog.get_config() == before  # the caller's logging set-up is given back
    captured = capsys.readouterr()
    assert captured.err + captured.out + log_stream.getvalue() == ""
    assert result.warnings == {"metric fetch failed": result.syncs}
    assert figures(result).warnings == result.syncs
    table = render_table([result])
    assert "warnings" in table and f"{result.syncs} │" in table
    assert to_json([result])["variants"][0]["warnings"] == {"metric fetch failed": result.syncs}


def test_the_plot_of_a_month_of_trace_has_hour_ticks_it_can_label() -> None:
    result = run(step_trace([(0, 40)], 100))
    for days in (1, 30, 400, 20 * 365):
        month = attrs.evolve(result, trace_end=days * 86400.0)
        svg = render_svg([month])
        ticks = svg.count('text-anchor="middle"')
        assert 2 <= ticks <= 13, (days, ticks)


def test_variants_in_a_process_pool_give_exactly_the_sequential_results() -> None:
    # a bursty trace with skewed load and a random cold start, so the runs have something
    # to differ in: decisions, victims, scrapes and every figure must match one for one
    trace = step_trace([(0, 40), (100, 250), (250, 60), (400, 180)], 600)
    noisy = attrs.evolve(model(), load_skew=0.4, cold_start=ColdStart("lognormal", 20, 0.5), seed=7)
    variants = build_variants(
        [("s", scaler(behavior="CacheAware", maxStepReplicas=1))],
        ["scaleDown.stabilizationWindowSeconds=0,30,60"],
    )
    sequential = simulate_all(variants, trace, noisy, jobs=1)
    parallel = simulate_all(variants, trace, noisy, jobs=3)
    assert len(parallel) == len(variants) == 5
    assert len({r.decisions for r in sequential}) > 1  # the variants do differ
    for a, b in zip(sequential, parallel, strict=True):
        assert attrs.evolve(a, wall_seconds=0.0) == attrs.evolve(b, wall_seconds=0.0)
        assert a.variant.name == b.variant.name
    with pytest.raises(ValueError, match="jobs"):
        simulate_all(variants, trace, noisy, jobs=0)
