"""Custom provider: strict parsing of the decision server's reply, over a real HTTP server."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient
from llmscaler_runtime.scaling.providers import DecisionProvider, MetricError, parse_decision
from llmscaler_runtime.scaling.providers.base import ProviderFetcher
from llmscaler_runtime.scaling.types import Measurement, MetricReading
from llmscaler_runtime.testkit import FakeClock

from .fakes import scaler_obj
from .httpserver import Reply, ScriptedServer, held, json_reply, together

API = "llmscaling.inference.x-k8s.io/v1alpha1"
HTTP = HttpOptions(timeout=0.5, connect_timeout=0.5, max_attempts=1, coalesce_ttl=0, retry_wait=0)


def doc(*decisions: dict[str, Any], api: str = API) -> dict[str, Any]:
    return {"apiVersion": api, "decisions": list(decisions)}


def decision(active: Any = 3, service: str = "svc", ns: str | None = "team") -> dict[str, Any]:
    d: dict[str, Any] = {"serviceId": service, "replicas": {"active": active}}
    if ns is not None:
        d["namespace"] = ns
    return d


def parse(
    body: bytes | dict[str, Any],
    *,
    ct: str = "application/json",
    status: int = 200,
    ns: str | None = None,
) -> int:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return parse_decision(status, ct, raw, service_id="svc", namespace=ns)


def test_matching_decision_gives_absolute_count() -> None:
    assert parse(doc(decision(15), decision(2, service="other"))) == 15


@pytest.mark.parametrize("active", [3.0, "3", True, False, None, [3], {"n": 3}, -1, 2**31])
def test_replicas_active_must_be_an_int32_json_integer(active: Any) -> None:
    with pytest.raises(MetricError, match=r"replicas\.active"):
        parse(doc(decision(active)))


def test_replicas_active_bounds_are_inclusive() -> None:
    assert parse(doc(decision(0))) == 0
    assert parse(doc(decision(2**31 - 1))) == 2**31 - 1


def test_missing_replicas_active_is_an_error() -> None:
    with pytest.raises(MetricError, match=r"no replicas\.active"):
        parse(doc({"serviceId": "svc", "replicas": {}}))


@pytest.mark.parametrize("api", ["llmscaling.inference.x-k8s.io/v1beta1", "v1", ""])
def test_only_the_v1alpha1_schema_is_understood(api: str) -> None:
    with pytest.raises(MetricError, match="apiVersion"):
        parse(doc(decision(), api=api))


def test_no_matching_service_is_an_error() -> None:
    with pytest.raises(MetricError, match="no decision"):
        parse(doc(decision(service="other")))


def test_two_matches_are_an_error() -> None:
    with pytest.raises(MetricError, match="2 decisions match"):
        parse(doc(decision(1, ns="a"), decision(2, ns="b")))


def test_namespace_narrows_the_match() -> None:
    body = doc(decision(1, ns="a"), decision(2, ns="b"))
    assert parse(body, ns="b") == 2
    with pytest.raises(MetricError):
        parse(body, ns="c")


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps(doc(decision())).encode() + b"x",
        json.dumps(doc(decision())).encode() + b'{"a":1}',
        b"<html>oops</html>",
        b"",
        b'{"apiVersion": "%s", "apiVersion": "%s", "decisions": []}' % (API.encode(), API.encode()),
        b'{"apiVersion": "%s", "decisions": [{"serviceId": "svc", "replicas": {"active": NaN}}]}'
        % API.encode(),
        b"\xff\xfe",
    ],
)
def test_malformed_bodies_are_errors(raw: bytes) -> None:
    with pytest.raises(MetricError):
        parse(raw)


@pytest.mark.parametrize("ct", ["text/html", "text/plain", "", "application/json-seq"])
def test_wrong_content_type_is_an_error(ct: str) -> None:
    with pytest.raises(MetricError, match="content-type"):
        parse(doc(decision()), ct=ct)


def test_content_type_parameters_are_allowed() -> None:
    assert parse(doc(decision(4)), ct="application/json; charset=utf-8") == 4


def test_non_200_is_an_error() -> None:
    with pytest.raises(MetricError, match="HTTP 500"):
        parse(doc(decision()), status=500)


def custom_scaler(url: str, path: str = "/decisions", ns: str | None = "team") -> LLMScaler:
    obj = scaler_obj(provider="Custom")
    obj["spec"]["serverAddress"] = url
    obj["spec"]["serverHeaders"] = {"X-Token": "abc"}
    obj["spec"]["customProvider"] = {"serviceId": "svc", "path": path}
    if ns is not None:
        obj["spec"]["customProvider"]["namespace"] = ns
    return LLMScaler.from_dict(obj)


def test_provider_sends_service_id_and_headers(server: ScriptedServer) -> None:
    server.respond = lambda _r: json_reply(doc(decision(9)))
    m = DecisionProvider(MetricHttpClient(HTTP)).fetch(custom_scaler(server.url, "/v2/d"), 5.0)
    assert (m.decision, m.error) == (9, None)
    seen = server.requests[0]
    assert seen.path == "/v2/d" and seen.query == {"serviceId": ["svc"]}
    assert seen.headers["x-token"] == "abc"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, b"{}"),
        Reply(200, b"<html></html>", "text/html"),
        Reply(200, b"{" * 10, "application/json"),
        Reply(200, b"{}", delay=10),
        Reply(200, b" " * 300_000, content_length=False),
    ],
    ids=["500", "html", "garbage", "no-response", "huge"],
)
def test_any_failure_holds_the_fleet(server: ScriptedServer, reply: Reply) -> None:
    server.respond = lambda _r: reply
    http = MetricHttpClient(
        HttpOptions(timeout=0.5, max_attempts=1, coalesce_ttl=0, max_response_bytes=100_000)
    )
    m = DecisionProvider(http).fetch(custom_scaler(server.url), 5.0)
    assert m.decision is None and m.error and not m.usable


def test_server_down_holds_the_fleet() -> None:
    m = DecisionProvider(MetricHttpClient(HTTP)).fetch(custom_scaler("http://127.0.0.1:9"), 5.0)
    assert m.decision is None and "cannot reach" in (m.error or "")


class _Recording:
    def __init__(self, measurement: Measurement) -> None:
        self.measurement = measurement
        self.asked: list[str] = []

    def fetch(self, scaler: LLMScaler, budget: float) -> Measurement:
        self.asked.append(scaler.name)
        return self.measurement


def test_provider_is_chosen_by_spec_and_never_falls_back() -> None:
    prometheus = _Recording(Measurement("Prometheus", (MetricReading("m", "q", 1.0, value=2.0),)))
    custom = _Recording(Measurement("Custom", error="decision server down"))
    fetcher = ProviderFetcher(prometheus=prometheus, custom=custom)
    # a Custom scaler whose decision server fails is held; Prometheus is not asked instead,
    # even though the scaler also lists metrics (they are unused under Custom)
    obj = scaler_obj(provider="Custom")
    obj["spec"]["metrics"] = [{"name": "m", "query": "q", "target": "1"}]
    m = fetcher.fetch(LLMScaler.from_dict(obj), 5.0)
    assert (m.decision, m.error, custom.asked, prometheus.asked) == (
        None,
        "decision server down",
        ["s"],
        [],
    )
    m = fetcher.fetch(LLMScaler.from_dict(scaler_obj()), 5.0)
    assert m.readings[0].value == 2.0 and custom.asked == ["s"]


def test_empty_namespace_does_not_narrow_the_match() -> None:
    assert parse(doc(decision(6, ns="team")), ns="") == 6


# -- sharing answers within a sync tick ---------------------------------------------------------

NOW = 1_800_000_000.0


def ticking() -> DecisionProvider:
    """A provider whose wall clock stands still: every call falls in the same tick."""
    return DecisionProvider(MetricHttpClient(HTTP), clock=FakeClock(wall=NOW))


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, b"{}"),
        Reply(200, b"<html></html>", "text/html"),
        json_reply(doc(decision(3, service="other"))),
        json_reply(doc(decision(3), api="llmscaling.inference.x-k8s.io/v2")),
    ],
    ids=["500", "html", "no-match", "api-version"],
)
def test_a_failed_decision_is_asked_again_within_the_same_tick(
    server: ScriptedServer, reply: Reply
) -> None:
    server.respond = lambda _r: reply
    provider = ticking()
    assert provider.fetch(custom_scaler(server.url), 5.0).error
    assert provider.fetch(custom_scaler(server.url), 5.0).error
    assert server.hits() == 2


def test_a_good_decision_is_shared_within_the_tick(server: ScriptedServer) -> None:
    server.respond = lambda _r: json_reply(doc(decision(4)))
    provider = ticking()
    assert provider.fetch(custom_scaler(server.url), 5.0).decision == 4
    server.respond = lambda _r: json_reply(doc(decision(8)))
    assert provider.fetch(custom_scaler(server.url), 5.0).decision == 4
    assert server.hits() == 1


def test_a_decision_is_shared_only_with_scalers_that_read_it_alike(server: ScriptedServer) -> None:
    # two scalers ask the same URL; only one of them finds its namespace in the reply
    server.respond = lambda _r: json_reply(doc(decision(4, ns="team")))
    provider = ticking()
    assert provider.fetch(custom_scaler(server.url, ns="team"), 5.0).decision == 4
    other = provider.fetch(custom_scaler(server.url, ns="elsewhere"), 5.0)
    assert other.decision is None and "namespace 'elsewhere'" in (other.error or "")
    assert provider.fetch(custom_scaler(server.url, ns="team"), 5.0).decision == 4
    provider.fetch(custom_scaler(server.url, ns="elsewhere"), 5.0)
    assert server.hits() == 3  # one shared success, two separate failures


def test_concurrent_scalers_share_one_failing_decision(server: ScriptedServer) -> None:
    gate = threading.Event()
    server.respond = held(gate, Reply(500, b"{}"))
    provider = ticking()
    measurements = together(
        4,
        lambda: provider.fetch(custom_scaler(server.url), 5.0),
        joined=lambda: provider.http.callers_joined,
        gate=gate,
    )
    assert all(isinstance(m, Measurement) and "HTTP 500" in (m.error or "") for m in measurements)
    assert server.hits() == 1
    provider.fetch(custom_scaler(server.url), 5.0)
    assert server.hits() == 2
