"""pytest fixtures for the test kit (registered by the root conftest).

``prometheus_binary`` skips a test with the reason when no binary exists; ``make test`` installs
one first (hack/ensure-prometheus.sh), so in CI these tests run rather than skip. Under
``CI=true`` a missing binary is a failure, not a skip: a green CI must mean Prometheus ran.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from llmscaler_runtime.testkit.prometheus import PrometheusServer, find_prometheus_binary
from llmscaler_runtime.testkit.vllm_exporter import VllmMetricsExporter


@pytest.fixture(scope="session")
def prometheus_binary() -> str:
    binary = find_prometheus_binary()
    if binary is None:
        reason = (
            "no prometheus binary (PROMETHEUS_BINARY, PATH, /usr/bin, /usr/local/bin); "
            "run 'make prometheus' or 'apt-get install -y --no-install-recommends prometheus'"
        )
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


@pytest.fixture
def vllm_exporter() -> Iterator[VllmMetricsExporter]:
    with VllmMetricsExporter() as exporter:
        yield exporter


@pytest.fixture
def prometheus(
    prometheus_binary: str, vllm_exporter: VllmMetricsExporter
) -> Iterator[PrometheusServer]:
    """A real Prometheus scraping ``vllm_exporter`` every second, ready to query."""
    with PrometheusServer([vllm_exporter.target], "1s", prometheus_binary) as server:
        yield server


@pytest.fixture
def decision_server() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server
