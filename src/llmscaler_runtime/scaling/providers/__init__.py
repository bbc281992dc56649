"""Metric providers: where a scaler's signal comes from (Prometheus or a decision server)."""

from llmscaler_runtime.scaling.providers.base import (
    CostSource,
    MetricError,
    MetricFetcher,
    ProviderFetcher,
)
from llmscaler_runtime.scaling.providers.decision import DecisionProvider, parse_decision
from llmscaler_runtime.scaling.providers.prometheus import (
    PrometheusProvider,
    parse_query_response,
)

__all__ = [
    "CostSource",
    "DecisionProvider",
    "MetricError",
    "MetricFetcher",
    "PrometheusProvider",
    "ProviderFetcher",
    "parse_decision",
    "parse_query_response",
]
