"""Prometheus provider against a real HTTP server speaking the /api/v1/query JSON shapes."""

from __future__ import annotations

import threading

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient
from llmscaler_runtime.scaling.providers import MetricError, PrometheusProvider
from llmscaler_runtime.scaling.providers.prometheus import parse_query_response, query_url
from llmscaler_runtime.scaling.types import MetricReading
from llmscaler_runtime.testkit import FakeClock

from .fakes import scaler_obj
from .httpserver import Reply, ScriptedServer, held, json_reply, prom_vector, together

HTTP = HttpOptions(timeout=0.5, connect_timeout=0.5, max_attempts=1, coalesce_ttl=0, retry_wait=0)


def scaler(url: str, metrics: list[dict[str, str]] | None = None, **kw: object) -> LLMScaler:
    obj = scaler_obj(**kw)  # type: ignore[arg-type]
    obj["spec"]["serverAddress"] = url
    obj["spec"]["serverHeaders"] = {"Authorization": "Bearer t"}
    if metrics is not None:
        obj["spec"]["metrics"] = metrics
    return LLMScaler.from_dict(obj)


@pytest.fixture
def provider() -> PrometheusProvider:
    return PrometheusProvider(MetricHttpClient(HTTP))


def fetch_one(provider: PrometheusProvider, server: ScriptedServer, reply: Reply):  # type: ignore[no-untyped-def]
    server.respond = lambda _r: reply
    m = provider.fetch(scaler(server.url), 5.0)
    assert len(m.readings) == 1
    return m.readings[0]


def test_single_series_gives_its_value(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    r = fetch_one(provider, server, prom_vector(({"app": "web"}, "0.42")))
    assert (r.value, r.error, r.target) == (0.42, None, 1.0)
    seen = server.requests[0]
    assert seen.path == "/api/v1/query" and seen.query == {"query": ["q"]}
    assert seen.headers["authorization"] == "Bearer t"


def test_scalar_result_is_accepted(provider: PrometheusProvider, server: ScriptedServer) -> None:
    reply = json_reply({"status": "success", "data": {"resultType": "scalar", "result": [1, "3"]}})
    assert fetch_one(provider, server, reply).value == 3.0


def test_empty_vector_is_skipped_not_zero(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    r = fetch_one(provider, server, prom_vector())
    assert r.value is None and "no series" in (r.error or "")


def test_two_series_are_rejected_naming_the_first_two_label_sets(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    reply = prom_vector(({"pod": "a"}, "1"), ({"pod": "b"}, "2"), ({"pod": "c"}, "3"))
    r = fetch_one(provider, server, reply)
    assert r.value is None
    assert '{pod="a"}' in (r.error or "") and '{pod="b"}' in (r.error or "")
    assert 'pod="c"' not in (r.error or "")


@pytest.mark.parametrize("raw", ["NaN", "+Inf", "-Inf"])
def test_non_finite_values_are_skipped(
    provider: PrometheusProvider, server: ScriptedServer, raw: str
) -> None:
    r = fetch_one(provider, server, prom_vector(({}, raw)))
    assert r.value is None and r.error


def test_prometheus_error_status_is_reported(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    reply = json_reply(
        {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}, 400
    )
    r = fetch_one(provider, server, reply)
    assert r.value is None and "parse error at char 4" in (r.error or "")


def test_html_body_is_skipped(provider: PrometheusProvider, server: ScriptedServer) -> None:
    reply = Reply(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
    r = fetch_one(provider, server, reply)
    assert r.value is None and "text/html" in (r.error or "")


def test_huge_body_is_skipped(server: ScriptedServer) -> None:
    provider = PrometheusProvider(
        MetricHttpClient(
            HttpOptions(timeout=2, max_attempts=1, coalesce_ttl=0, max_response_bytes=64 * 1024)
        )
    )
    r = fetch_one(provider, server, Reply(200, b"[" + b"1," * 100_000 + b"1]"))
    assert r.value is None and "limit" in (r.error or "")


def test_no_response_is_skipped(provider: PrometheusProvider, server: ScriptedServer) -> None:
    r = fetch_one(provider, server, Reply(200, b"{}", delay=10))
    assert r.value is None and "timed out" in (r.error or "")


def test_one_failing_metric_does_not_hide_the_others(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    server.respond = lambda req: (
        prom_vector(({}, "2")) if req.query["query"] == ["good"] else prom_vector()
    )
    s = scaler(
        server.url,
        [
            {"name": "guard", "query": "bad", "target": "1"},
            {"name": "load", "query": "good", "target": "0.5"},
        ],
    )
    m = provider.fetch(s, 5.0)
    assert [(r.name, r.value) for r in m.readings] == [("guard", None), ("load", 2.0)]
    assert m.usable and len(m.errors) == 1


def test_each_reading_carries_its_metrics_activation_threshold(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    server.respond = lambda _r: prom_vector(({}, "0.3"))
    s = scaler(
        server.url,
        [
            {"name": "gated", "query": "a", "target": "1", "activationThreshold": "0.5"},
            {"name": "plain", "query": "b", "target": "1"},
        ],
    )
    m = provider.fetch(s, 5.0)
    assert [(r.name, r.activation_threshold) for r in m.readings] == [
        ("gated", 0.5),
        ("plain", None),
    ]


def test_range_vector_result_is_refused() -> None:
    body = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
    with pytest.raises(MetricError, match="matrix"):
        parse_query_response(200, "application/json", body)


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}',
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}',
        b'{"status":"success"}',
        b"[]",
    ],
)
def test_malformed_replies_are_errors(body: bytes) -> None:
    with pytest.raises(MetricError):
        parse_query_response(200, "application/json", body)


def test_query_url_tolerates_trailing_slash() -> None:
    assert query_url("http://p:9090/") == "http://p:9090/api/v1/query"
    assert query_url("http://p/prom") == "http://p/prom/api/v1/query"


def test_pod_costs_by_pod_label_rounded_and_clamped(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    server.respond = lambda _r: prom_vector(
        ({"pod": "a"}, "12.5"),
        ({"pod": "b"}, "1e12"),
        ({"pod": "c"}, "NaN"),
        ({}, "4"),
    )
    s = scaler(server.url, deletion_cost_query="kv * 100")
    assert provider.pod_costs(s, 5.0) == {"a": 13, "b": 2**31 - 1}
    assert server.requests[0].query == {"query": ["kv * 100"]}


def test_pod_costs_fail_on_duplicate_pods(
    provider: PrometheusProvider, server: ScriptedServer
) -> None:
    server.respond = lambda _r: prom_vector(({"pod": "a"}, "1"), ({"pod": "a"}, "2"))
    with pytest.raises(MetricError, match="more than once"):
        provider.pod_costs(scaler(server.url, deletion_cost_query="x"), 5.0)


def test_pod_costs_fail_when_server_down(provider: PrometheusProvider) -> None:
    with pytest.raises(MetricError):
        provider.pod_costs(scaler("http://127.0.0.1:9", deletion_cost_query="x"), 5.0)


# -- sharing answers within a sync tick ---------------------------------------------------------
# Scalers asking the same query in one tick share its answer, but only a usable one: a failure
# reaches the callers that waited for that very attempt and no one after it, so a retry
# (retryPeriodSeconds later, still inside the tick) asks Prometheus again.

NOW = 1_800_000_000.0


def ticking() -> PrometheusProvider:
    """A provider whose wall clock stands still: every call falls in the same tick."""
    return PrometheusProvider(MetricHttpClient(HTTP), clock=FakeClock(wall=NOW))


@pytest.mark.parametrize(
    "reply",
    [
        json_reply({"status": "error", "errorType": "internal", "error": "boom"}, 500),
        Reply(503, b"busy"),
        Reply(200, b"<html>proxy</html>", "text/html"),
        prom_vector(),
        prom_vector(({"pod": "a"}, "1"), ({"pod": "b"}, "2")),
        prom_vector(({}, "NaN")),
    ],
    ids=["500", "503", "html", "empty", "two-series", "nan"],
)
def test_a_failed_metric_is_asked_again_within_the_same_tick(
    server: ScriptedServer, reply: Reply
) -> None:
    provider = ticking()
    assert fetch_one(provider, server, reply).error
    assert fetch_one(provider, server, reply).error
    assert server.hits() == 2


def test_a_good_metric_is_shared_within_the_tick(server: ScriptedServer) -> None:
    provider = ticking()
    assert fetch_one(provider, server, prom_vector(({}, "0.5"))).value == 0.5
    assert fetch_one(provider, server, prom_vector(({}, "0.9"))).value == 0.5  # the shared one
    assert server.hits() == 1


def test_concurrent_scalers_share_one_failing_query(server: ScriptedServer) -> None:
    gate = threading.Event()
    server.respond = held(
        gate, json_reply({"status": "error", "errorType": "internal", "error": "boom"}, 500)
    )
    provider = ticking()
    readings = together(
        5,
        lambda: provider.fetch(scaler(server.url), 5.0).readings[0],
        joined=lambda: provider.http.callers_joined,
        gate=gate,
    )
    assert all(isinstance(r, MetricReading) and "boom" in (r.error or "") for r in readings)
    assert server.hits() == 1
    provider.fetch(scaler(server.url), 5.0)  # after the attempt: a new one
    assert server.hits() == 2


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, b"{}"),
        prom_vector(({"pod": "a"}, "1"), ({"pod": "a"}, "2")),
        prom_vector(({}, "4")),
    ],
    ids=["500", "duplicate-pod", "no-pod-label"],
)
def test_a_failed_deletion_cost_query_is_asked_again_within_the_same_tick(
    server: ScriptedServer, reply: Reply
) -> None:
    server.respond = lambda _r: reply
    provider = ticking()
    s = scaler(server.url, deletion_cost_query="kv")
    for _ in range(2):
        with pytest.raises(MetricError):
            provider.pod_costs(s, 5.0)
    assert server.hits() == 2


def test_good_deletion_costs_are_shared_within_the_tick(server: ScriptedServer) -> None:
    server.respond = lambda _r: prom_vector(({"pod": "a"}, "7"))
    provider = ticking()
    s = scaler(server.url, deletion_cost_query="kv")
    assert provider.pod_costs(s, 5.0) == provider.pod_costs(s, 5.0) == {"a": 7}
    assert server.hits() == 1


def test_concurrent_scale_downs_share_one_failing_cost_query(server: ScriptedServer) -> None:
    gate = threading.Event()
    server.respond = held(gate, Reply(500, b"{}"))
    provider = ticking()
    s = scaler(server.url, deletion_cost_query="kv")
    outcomes = together(
        3,
        lambda: provider.pod_costs(s, 5.0),
        joined=lambda: provider.http.callers_joined,
        gate=gate,
    )
    assert all(isinstance(o, MetricError) for o in outcomes), outcomes
    assert server.hits() == 1
