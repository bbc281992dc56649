"""Failures the property and fuzz tests found, shrunk to minimal examples and kept as tests."""

from __future__ import annotations

import pytest

from llmscaler_runtime.scaling.providers.base import MetricError
from llmscaler_runtime.scaling.providers.decision import parse_decision
from llmscaler_runtime.scaling.providers.prometheus import parse_query_response

DEEP = b"[" * 10_000 + b"]" * 10_000


def test_prometheus_reply_nested_10000_deep_is_a_metric_error() -> None:
    # json.loads raised RecursionError, which escaped the parser (and the reconciler's
    # MetricError handling) instead of skipping the metric
    with pytest.raises(MetricError, match="not a Prometheus JSON reply"):
        parse_query_response(200, "application/json", DEEP)


def test_decision_reply_nested_10000_deep_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="not valid JSON"):
        parse_decision(200, "application/json", DEEP, service_id="svc")
