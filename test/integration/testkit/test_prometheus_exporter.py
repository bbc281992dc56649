"""Real Prometheus scraping the fake vLLM exporter: the spec's PromQL forms give the values set,
and promql_lite (the demo fallback) agrees with the real engine on each of them.

One Prometheus serves the whole module (a new target takes ~5 s to be picked up by
Prometheus's scrape manager); each test works in its own namespace so series never mix.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator

import httpx
import pytest

from llmscaler_runtime.testkit import PrometheusServer, PromqlLiteServer, VllmMetricsExporter
from llmscaler_runtime.testkit.promql_lite import Evaluator

pytestmark = [pytest.mark.integration, pytest.mark.prometheus]

APP = "vllm-opt-125m"


class Queries:
    """The spec's example queries, scoped to one namespace."""

    def __init__(self, ns: str) -> None:
        sel = f'namespace="{ns}", app="{APP}"'
        self.kv_avg = f"avg(vllm:kv_cache_usage_perc{{{sel}}})"
        self.kv_avg_over_time = f"avg(avg_over_time(vllm:kv_cache_usage_perc{{{sel}}}[1m]))"
        self.queue_sum = f"sum(vllm:num_requests_waiting{{{sel}}})"
        self.queue_max = f"max(vllm:num_requests_waiting{{{sel}}})"
        self.deletion_cost = f"vllm:kv_cache_usage_perc{{{sel}}} * 100"
        self.count_app = f"count(vllm:kv_cache_usage_perc{{{sel}}})"
        self.count_ns = f'count(vllm:kv_cache_usage_perc{{namespace="{ns}"}})'


@pytest.fixture(scope="module")
def shared(prometheus_binary: str) -> Iterator[tuple[VllmMetricsExporter, PrometheusServer]]:
    with (
        VllmMetricsExporter() as exporter,
        PrometheusServer([exporter.target], "1s", prometheus_binary) as prom,
    ):
        yield exporter, prom


@pytest.fixture
def ns() -> str:
    return f"ns-{uuid.uuid4().hex[:8]}"


def _fleet(exporter: VllmMetricsExporter, ns: str) -> None:
    exporter.set_pod(ns, APP, "vllm-a", kv=0.2, waiting=1, running=3)
    exporter.set_pod(ns, APP, "vllm-b", kv=0.5, waiting=4, running=2)
    exporter.set_pod(ns, APP, "vllm-c", kv=0.8, waiting=0, running=1)
    # Same model, other deployment and other namespace: a correctly scoped query ignores them.
    exporter.set_pod(ns, "other-app", "other-a", kv=1.0, waiting=50)
    exporter.set_pod(ns + "-b", APP, "vllm-a", kv=0.99, waiting=70)


def _by_pod(result: list[tuple[dict[str, str], float]]) -> dict[str, float]:
    return {labels["pod"]: value for labels, value in result}


def test_spec_queries_on_real_prometheus(
    shared: tuple[VllmMetricsExporter, PrometheusServer], ns: str
) -> None:
    exporter, prometheus = shared
    q = Queries(ns)
    _fleet(exporter, ns)
    prometheus.wait_for_targets()
    prometheus.wait_for_series(q.count_app, until=lambda r: r[0][1] == 3)

    [(labels, avg)] = prometheus.query_vector(q.kv_avg)
    assert labels == {}
    assert math.isclose(avg, 0.5)
    [(_, over_time)] = prometheus.query_vector(q.kv_avg_over_time)
    assert math.isclose(over_time, 0.5)
    assert prometheus.query_vector(q.queue_sum)[0][1] == 5
    assert prometheus.query_vector(q.queue_max)[0][1] == 4

    costs = prometheus.query_vector(q.deletion_cost)
    assert _by_pod(costs) == pytest.approx({"vllm-a": 20.0, "vllm-b": 50.0, "vllm-c": 80.0})
    for labels, _ in costs:
        assert "__name__" not in labels
        assert labels["namespace"] == ns and labels["app"] == APP

    # A value change shows up on the next scrapes; a removed pod goes stale and drops out.
    exporter.set_pod(ns, APP, "vllm-a", kv=0.9)
    exporter.remove_pod(ns, "vllm-c")
    prometheus.wait_for_series(
        q.deletion_cost, until=lambda r: _by_pod(r) == {"vllm-a": 90.0, "vllm-b": 50.0}
    )
    assert math.isclose(prometheus.query_vector(q.kv_avg)[0][1], 0.7)


def test_promql_lite_agrees_with_prometheus(
    shared: tuple[VllmMetricsExporter, PrometheusServer], ns: str
) -> None:
    exporter, prometheus = shared
    q = Queries(ns)
    _fleet(exporter, ns)
    prometheus.wait_for_series(q.count_ns, until=lambda r: r[0][1] == 4)
    # Every series of this test has been scraped once; the values never changed since.
    lite = Evaluator(lambda: [s for s in exporter.samples() if s.labels["namespace"] == ns])
    lite.record()
    queries = [
        q.kv_avg,
        q.kv_avg_over_time,
        q.queue_sum,
        q.queue_max,
        q.deletion_cost,
        f'min(vllm:kv_cache_usage_perc{{namespace="{ns}", app=~"vllm-.*"}})',
        f'sum by (pod) (vllm:num_requests_running{{namespace="{ns}", app="{APP}"}})',
        f'count(vllm:num_requests_running{{namespace="{ns}", app!="{APP}"}})',
        f"{q.kv_avg} * 100",
        'avg(vllm:kv_cache_usage_perc{namespace="nowhere"})',
    ]
    for query in queries:
        # Prometheus adds the scrape's own instance/job labels; the fallback has no scrape.
        real = sorted(
            (sorted((k, v) for k, v in labels.items() if k not in ("instance", "job")), value)
            for labels, value in prometheus.query_vector(query)
        )
        value = lite.evaluate(query)
        assert isinstance(value, list)
        mine = sorted((sorted(labels), v) for labels, v in value)
        assert [labels for labels, _ in mine] == [labels for labels, _ in real], query
        assert [v for _, v in mine] == pytest.approx([v for _, v in real]), query


def test_targets_can_be_added_with_labels_while_running(
    shared: tuple[VllmMetricsExporter, PrometheusServer], ns: str
) -> None:
    exporter, prometheus = shared
    exporter.set_pod(ns, APP, "vllm-a", kv=0.1)
    with VllmMetricsExporter() as second:
        second.set_pod(ns, "second-app", "second-a", kv=0.6)
        try:
            prometheus.set_targets(
                [exporter.target, second.target], target_labels={second.target: {"cluster": "b"}}
            )
            [(labels, value)] = prometheus.wait_for_series(
                f'vllm:kv_cache_usage_perc{{namespace="{ns}", cluster="b"}}'
            )
            assert labels["pod"] == "second-a" and value == 0.6
            first = prometheus.wait_for_series(f'vllm:kv_cache_usage_perc{{namespace="{ns}"}}')
            assert any(
                labels.get("pod") == "vllm-a" and "cluster" not in labels for labels, _ in first
            )
        finally:
            prometheus.set_targets([exporter.target])


def test_promql_lite_server_speaks_the_query_api(ns: str) -> None:
    """The HTTP surface the operator's Prometheus provider uses: GET and POST form."""
    q = Queries(ns)
    with VllmMetricsExporter() as exporter:
        exporter.set_pod(ns, APP, "vllm-a", kv=0.25)
        with PromqlLiteServer(exporter.samples, sample_interval=0.2) as server:
            get = httpx.get(f"{server.url}/api/v1/query", params={"query": q.kv_avg}).json()
            post = httpx.post(f"{server.url}/api/v1/query", data={"query": q.kv_avg}).json()
            bad = httpx.post(f"{server.url}/api/v1/query", data={"query": "rate(x[1m])"})
            ready = httpx.get(f"{server.url}/-/ready")
    for payload in (get, post):
        assert payload["status"] == "success"
        assert payload["data"]["resultType"] == "vector"
        assert payload["data"]["result"][0]["metric"] == {}
        assert payload["data"]["result"][0]["value"][1] == "0.25"
    assert bad.status_code == 400
    assert bad.json()["errorType"] == "bad_data"
    assert "not supported" in bad.json()["error"]
    assert ready.status_code == 200


def test_plugin_fixtures_scrape_the_exporter(
    vllm_exporter: VllmMetricsExporter, prometheus: PrometheusServer
) -> None:
    """The pytest plugin's `prometheus` fixture is already scraping `vllm_exporter`."""
    vllm_exporter.set_pod("default", APP, "vllm-a", kv=0.4, running=2)
    [(labels, value)] = prometheus.wait_for_series(
        f'vllm:num_requests_running{{namespace="default", app="{APP}"}}'
    )
    assert value == 2 and labels["pod"] == "vllm-a" and labels["model_name"]
