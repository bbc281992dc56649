"""Test kit: real and fake metric sources for the integration suite and the demo.

- :class:`VllmMetricsExporter` serves settable vLLM gauges for many pods from one port.
- :class:`PrometheusServer` runs the real ``prometheus`` binary scraping such endpoints.
- :class:`DecisionServer` fakes the Custom provider's decision server, failure modes included.
- :class:`PromqlLiteServer` is the demo's fallback query endpoint when Prometheus is absent.
- :class:`FakeClock` is the one fake of the runtime's :class:`~llmscaler_runtime.clock.Clock`.
- ``llmscaler_runtime.testkit.pytest_plugin`` exposes them as pytest fixtures.
"""

from llmscaler_runtime.testkit.clock import FakeClock
from llmscaler_runtime.testkit.decision_server import (
    API_VERSION,
    DecisionServer,
    FailureMode,
    RecordedRequest,
)
from llmscaler_runtime.testkit.prometheus import (
    PrometheusError,
    PrometheusServer,
    find_prometheus_binary,
)
from llmscaler_runtime.testkit.promql_lite import Evaluator, PromQLError, PromqlLiteServer
from llmscaler_runtime.testkit.vllm_exporter import PodMetrics, Sample, VllmMetricsExporter

__all__ = [
    "API_VERSION",
    "DecisionServer",
    "Evaluator",
    "FailureMode",
    "FakeClock",
    "PodMetrics",
    "PrometheusError",
    "PrometheusServer",
    "PromQLError",
    "PromqlLiteServer",
    "RecordedRequest",
    "Sample",
    "VllmMetricsExporter",
    "find_prometheus_binary",
]
