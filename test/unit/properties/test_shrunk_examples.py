"""Failures the property and fuzz tests found, shrunk to minimal examples and kept as tests."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import (
    CustomProvider,
    LLMScaler,
    LLMScalerSpec,
    MetricProvider,
    ScaleDown,
    SpecError,
    TargetRef,
)
from llmscaler_runtime.scaling.providers.base import MetricError
from llmscaler_runtime.scaling.providers.decision import parse_decision
from llmscaler_runtime.scaling.providers.prometheus import parse_query_response

from ..scaling.fakes import scaler_obj
from .pipeline import Step
from .test_pipeline_properties import check_run
from .test_reconciler_properties import RETRY, SYNC, check_reconciler_run

DEEP = b"[" * 10_000 + b"]" * 10_000


def test_prometheus_reply_nested_10000_deep_is_a_metric_error() -> None:
    # json.loads raised RecursionError, which escaped the parser (and the reconciler's
    # MetricError handling) instead of skipping the metric
    with pytest.raises(MetricError, match="not a Prometheus JSON reply"):
        parse_query_response(200, "application/json", DEEP)


def test_decision_reply_nested_10000_deep_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="not valid JSON"):
        parse_decision(200, "application/json", DEEP, service_id="svc")


def _scaler(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "serverAddress": "http://p",
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [{"query": "q", "target": "1"}],
    }
    return {"metadata": {"name": "s"}, "spec": {**base, **spec}}


def test_spec_value_nested_10000_deep_is_a_spec_error() -> None:
    # the problem message quoted the value with repr(), which raised RecursionError: the
    # reconciler only catches SpecError from the parse, so the scaler went to the workqueue's
    # exponential backoff instead of reporting InvalidSpec
    deep: Any = 0
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(SpecError, match=r"spec.metricProvider: must be one of .*\[\[\["):
        LLMScaler.from_dict(_scaler(metricProvider=deep))


def test_spec_problem_quotes_a_long_value_briefly() -> None:
    with pytest.raises(SpecError) as err:
        LLMScaler.from_dict(_scaler(maxReplicas="x" * 1_000_000, minReplicas=10**4000))
    assert len(str(err.value)) < 300


def test_decision_with_a_4000_digit_count_is_refused_in_a_short_message() -> None:
    body = b'{"apiVersion": "llmscaling.inference.x-k8s.io/v1alpha1", "decisions": '
    body += b'[{"serviceId": "svc", "replicas": {"active": 1' + b"0" * 4000 + b"}}]}"
    with pytest.raises(MetricError, match=r"outside \[0, 2147483647\]") as err:
        parse_decision(200, "application/json", body, service_id="svc")
    assert len(str(err.value)) < 100


def test_a_header_source_named_by_a_list_is_a_spec_error() -> None:
    # the serverHeaders/serverHeadersFrom overlap rule looked the name up in serverHeaders
    # before the name was known to be a string: TypeError (unhashable type: 'list')
    obj = _scaler(serverHeaders={"X": "1"}, serverHeadersFrom=[{"name": [], "value": "v"}])
    with pytest.raises(SpecError, match=r"serverHeadersFrom\[0\]\.name: must be a string"):
        LLMScaler.from_dict(obj)


# --- pipeline runs: what the property tests caught in deliberately broken pacers ------------


def _custom(window: int, cap: int, lo: int, hi: int) -> LLMScalerSpec:
    return LLMScalerSpec(
        TargetRef("apps/v1", "Deployment", "web"),
        "http://decisions",
        lo,
        hi,
        metric_provider=MetricProvider.CUSTOM,
        custom_provider=CustomProvider("svc"),
        scale_down=ScaleDown(stabilization_window_seconds=window, max_step_replicas=cap),
    )


def _syncs(*decisions: int | None, dt: float = 1.0, **kw: Any) -> list[Step]:
    return [Step(dt=dt, decision=d, values=(None, None), **kw) for d in decisions]


def test_run_each_step_of_a_walk_down_waits_a_full_window_after_the_last_write() -> None:
    # killed a pacer that kept the old samples after a scale-down write instead of the count
    # written: it took the second step one second after the first
    plan = [*_syncs(0), *_syncs(0, dt=15.0), *_syncs(0, 0)]
    check_run(_custom(window=15, cap=1, lo=0, hi=2), 2, plan)


def test_run_a_failed_scale_down_write_does_not_arm_the_settle_guard() -> None:
    # killed a reconciler that stored history_if_written after a failed write: the retry, on a
    # fleet with a pod not ready, was held by the settle guard instead of writing again
    obj = scaler_obj(min_replicas=0, max_replicas=10, provider="Custom", sync=SYNC, retry=RETRY)
    plan = [*_syncs(2, write_fails=True), *_syncs(2, ready_lag=1)]
    check_reconciler_run(obj, 5, plan)
