"""Real Prometheus scraping the fake vLLM exporter: the spec's PromQL forms give the values set,
and promql_lite (the demo fallback) agrees with the real engine on each of them."""

from __future__ import annotations

import math

import pytest

from llmscaler_runtime.testkit import (
    PrometheusServer,
    PromqlLiteServer,
    VllmMetricsExporter,
)
from llmscaler_runtime.testkit.promql_lite import Evaluator

pytestmark = [pytest.mark.integration, pytest.mark.prometheus]

NS = "default"
APP = "vllm-opt-125m"
KV_AVG = f'avg(vllm:kv_cache_usage_perc{{namespace="{NS}", app="{APP}"}})'
KV_AVG_OVER_TIME = (
    f'avg(avg_over_time(vllm:kv_cache_usage_perc{{namespace="{NS}", app="{APP}"}}[1m]))'
)
QUEUE_SUM = f'sum(vllm:num_requests_waiting{{namespace="{NS}", app="{APP}"}})'
QUEUE_MAX = f'max(vllm:num_requests_waiting{{namespace="{NS}", app="{APP}"}})'
DELETION_COST = f'vllm:kv_cache_usage_perc{{namespace="{NS}", app="{APP}"}} * 100'


def _fleet(exporter: VllmMetricsExporter) -> None:
    exporter.set_pod(NS, APP, "vllm-a", kv=0.2, waiting=1, running=3)
    exporter.set_pod(NS, APP, "vllm-b", kv=0.5, waiting=4, running=2)
    exporter.set_pod(NS, APP, "vllm-c", kv=0.8, waiting=0, running=1)
    # Same model, other deployment and other namespace: a correctly scoped query ignores them.
    exporter.set_pod(NS, "other-app", "other-a", kv=1.0, waiting=50)
    exporter.set_pod("team-b", APP, "vllm-a", kv=0.99, waiting=70)


def _by_pod(result: list[tuple[dict[str, str], float]]) -> dict[str, float]:
    return {labels["pod"]: value for labels, value in result}


def test_spec_queries_on_real_prometheus(
    vllm_exporter: VllmMetricsExporter, prometheus: PrometheusServer
) -> None:
    _fleet(vllm_exporter)
    prometheus.wait_for_targets()
    assert vllm_exporter.scrape_count >= 1
    prometheus.wait_for_series(
        f'count(vllm:kv_cache_usage_perc{{namespace="{NS}", app="{APP}"}})',
        until=lambda r: r[0][1] == 3,
    )

    [(labels, avg)] = prometheus.query_vector(KV_AVG)
    assert labels == {}
    assert math.isclose(avg, 0.5)
    [(_, over_time)] = prometheus.query_vector(KV_AVG_OVER_TIME)
    assert math.isclose(over_time, 0.5)
    assert prometheus.query_vector(QUEUE_SUM)[0][1] == 5
    assert prometheus.query_vector(QUEUE_MAX)[0][1] == 4

    costs = prometheus.query_vector(DELETION_COST)
    assert _by_pod(costs) == pytest.approx({"vllm-a": 20.0, "vllm-b": 50.0, "vllm-c": 80.0})
    for labels, _ in costs:
        assert "__name__" not in labels
        assert labels["namespace"] == NS and labels["app"] == APP

    # A value change shows up on the next scrapes; a removed pod goes stale and drops out.
    vllm_exporter.set_pod(NS, APP, "vllm-a", kv=0.9)
    vllm_exporter.remove_pod(NS, "vllm-c")
    prometheus.wait_for_series(
        DELETION_COST, until=lambda r: _by_pod(r) == {"vllm-a": 90.0, "vllm-b": 50.0}
    )
    assert math.isclose(prometheus.query_vector(KV_AVG)[0][1], 0.7)


def test_promql_lite_agrees_with_prometheus(
    vllm_exporter: VllmMetricsExporter, prometheus: PrometheusServer
) -> None:
    _fleet(vllm_exporter)
    prometheus.wait_for_series(
        f'count(vllm:kv_cache_usage_perc{{namespace="{NS}"}})', until=lambda r: r[0][1] == 4
    )
    lite = Evaluator(vllm_exporter.samples)
    lite.record()
    queries = [
        KV_AVG,
        KV_AVG_OVER_TIME,
        QUEUE_SUM,
        QUEUE_MAX,
        DELETION_COST,
        f'min(vllm:kv_cache_usage_perc{{namespace="{NS}", app=~"vllm-.*"}})',
        f'sum by (pod) (vllm:num_requests_running{{namespace="{NS}", app="{APP}"}})',
        f'count(vllm:num_requests_running{{namespace="{NS}", app!="{APP}"}})',
        f'avg(vllm:kv_cache_usage_perc{{namespace="{NS}", app="{APP}"}}) * 100',
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


def test_promql_lite_server_speaks_the_query_api(vllm_exporter: VllmMetricsExporter) -> None:
    """The HTTP surface the operator's Prometheus provider uses: GET and POST form."""
    import httpx

    vllm_exporter.set_pod(NS, APP, "vllm-a", kv=0.25)
    with PromqlLiteServer(vllm_exporter.samples, sample_interval=0.2) as server:
        get = httpx.get(f"{server.url}/api/v1/query", params={"query": KV_AVG}).json()
        post = httpx.post(f"{server.url}/api/v1/query", data={"query": KV_AVG}).json()
        bad = httpx.post(f"{server.url}/api/v1/query", data={"query": "rate(x[1m])"})
    for payload in (get, post):
        assert payload["status"] == "success"
        assert payload["data"]["resultType"] == "vector"
        assert payload["data"]["result"][0]["metric"] == {}
        assert payload["data"]["result"][0]["value"][1] == "0.25"
    assert bad.status_code == 400
    assert bad.json()["errorType"] == "bad_data"
    assert "not supported" in bad.json()["error"]


def test_targets_can_be_added_with_labels_while_running(
    vllm_exporter: VllmMetricsExporter, prometheus: PrometheusServer
) -> None:
    vllm_exporter.set_pod(NS, APP, "vllm-a", kv=0.1)
    with VllmMetricsExporter() as second:
        second.set_pod(NS, "second-app", "second-a", kv=0.6)
        prometheus.set_targets(
            [vllm_exporter.target, second.target],
            target_labels={second.target: {"cluster": "b"}},
        )
        [(labels, value)] = prometheus.wait_for_series('vllm:kv_cache_usage_perc{cluster="b"}')
        assert labels["pod"] == "second-a" and value == 0.6
        first = prometheus.wait_for_series('vllm:kv_cache_usage_perc{pod="vllm-a"}')
        assert "cluster" not in first[0][0]
