"""promql_lite: the supported subset evaluates like PromQL; everything else is refused."""

from __future__ import annotations

import math

import pytest

from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.testkit.promql_lite import (
    Evaluator,
    PromQLError,
    format_value,
    parse,
    parse_duration,
)
from llmscaler_runtime.testkit.vllm_exporter import Sample, VllmMetricsExporter, render_text


def _exporter_with(pods: dict[str, float]) -> VllmMetricsExporter:
    exporter = VllmMetricsExporter()  # never started: only its data is used
    for pod, kv in pods.items():
        exporter.set_pod("ns", "app", pod, kv=kv)
    return exporter


def test_avg_over_time_uses_only_the_window() -> None:
    clock = FakeClock(wall=1_000_000.0)
    exporter = _exporter_with({"a": 0.0})
    lite = Evaluator(exporter.samples, clock=clock)
    for i, value in enumerate((1.0, 1.0, 0.0, 0.0)):  # one point every 30 s
        if i:
            clock.step(30)
        exporter.set_pod("ns", "app", "a", kv=value)
        lite.record()
    # [1m] covers (t-60, t]: the last two points (0, 0); [2m] covers all four.
    assert lite.evaluate('avg(avg_over_time(vllm:kv_cache_usage_perc{app="app"}[1m]))') == [
        ((), 0.0)
    ]
    assert lite.evaluate("avg(avg_over_time(vllm:kv_cache_usage_perc[2m]))") == [((), 0.5)]
    assert lite.evaluate("max(max_over_time(vllm:kv_cache_usage_perc[2m]))") == [((), 1.0)]


def test_instant_forms() -> None:
    lite = Evaluator(_exporter_with({"a": 0.2, "b": 0.6}).samples)
    assert lite.evaluate('avg(vllm:kv_cache_usage_perc{namespace="ns"})') == [((), 0.4)]
    assert lite.evaluate('avg(vllm:kv_cache_usage_perc{namespace="elsewhere"})') == []
    costs = lite.evaluate('vllm:kv_cache_usage_perc{pod=~"a|b"} * 100')
    assert isinstance(costs, list)
    assert {dict(labels)["pod"]: v for labels, v in costs} == pytest.approx({"a": 20, "b": 60})
    assert all("__name__" not in dict(labels) for labels, _ in costs)
    assert lite.evaluate("sum(vllm:kv_cache_usage_perc) / 2") == [((), 0.4)]
    assert lite.evaluate("2 * 3 + 1") == 7.0
    by_pod = lite.evaluate("max by (pod) (vllm:kv_cache_usage_perc)")
    assert sorted(by_pod) == [((("pod", "a"),), 0.2), ((("pod", "b"),), 0.6)]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "rate(x[1m])",
        "x + y",
        "avg_over_time(x)",
        "x[1m]",
        'x{a~"b"}',
        "sum without (pod) (x)",
        "avg(x",
        'x{a=~"("}',
    ],
)
def test_unsupported_or_malformed_is_refused(query: str) -> None:
    with pytest.raises(PromQLError):
        Evaluator(list).evaluate(query)


def test_helpers() -> None:
    assert parse_duration("1m30s") == 90
    with pytest.raises(PromQLError):
        parse_duration("1x")
    assert [format_value(v) for v in (50.0, 0.25, 1e-7, math.nan, math.inf)] == [
        "50",
        "0.25",
        "0.0000001",
        "NaN",
        "+Inf",
    ]
    assert parse('{__name__="x"}') == parse("x")


def test_exposition_escapes_labels() -> None:
    text = render_text([Sample("m", {"pod": 'a"b\\c'}, 1.5)])
    assert 'm{pod="a\\"b\\\\c"} 1.5' in text
    assert "# TYPE m gauge" in text
