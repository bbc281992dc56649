"""Security of the metric path (issue 12 part 4): the address policy, header values from
Secrets (cache, errors, redaction), and error text that never echoes what a server sent."""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import structlog

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, HeaderSource, LLMScaler
from llmscaler_runtime.api.v1alpha1.types import HeaderValueSource, SecretKeySelector
from llmscaler_runtime.controller.types import Request, Result
from llmscaler_runtime.kube.errors import Forbidden, NotFound
from llmscaler_runtime.scaling import LLMScalerReconciler, Steps
from llmscaler_runtime.scaling import reconciler as reconciler_module
from llmscaler_runtime.scaling.addresses import (
    AddressNotAllowed,
    AddressPolicy,
    parse_address_policy,
)
from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient
from llmscaler_runtime.scaling.providers import DecisionProvider, PrometheusProvider
from llmscaler_runtime.scaling.secrets import (
    FAILED_GET_SECRET,
    SECRET_FORBIDDEN,
    Redacted,
    SecretHeaderError,
    SecretHeaderResolver,
)
from llmscaler_runtime.scaling.types import Measurement, MetricReading
from llmscaler_runtime.testkit._http import LocalHTTPServer

from .fakes import FakeCache, FakeClient, FakeClock, FakeCluster, FakeRecorder, deployment
from .fakes import scaler_obj as base_scaler_obj
from .httpserver import Reply, ScriptedServer, json_reply

CANARY = "canary-7f3a9c-token"  # the secret value: must never show outside the request
BODY_CANARY = "body-canary-51e0"  # what a hostile server puts in its replies


# -- the address policy ------------------------------------------------------------------------


def fake_dns(table: dict[str, list[str]]) -> Any:
    calls: list[str] = []

    def resolve(host: str, port: int | None) -> list[str]:
        calls.append(host)
        if host not in table:
            raise OSError("Name or service not known")
        return table[host]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def policy(text: str, dns: dict[str, list[str]] | None = None, **kw: Any) -> AddressPolicy:
    return parse_address_policy(text, resolver=fake_dns(dns or {}), **kw)


def allowed(p: AddressPolicy, url: str) -> bool:
    try:
        p.check(url)
    except AddressNotAllowed:
        return False
    return True


def test_the_default_policy_allows_everything_without_resolving() -> None:
    p = AddressPolicy(resolver=lambda h, port: pytest.fail("resolved"))  # type: ignore[arg-type,return-value]
    assert p.allow_all
    for url in ("http://169.254.169.254/latest/meta-data", "ftp://x", "https://a.b:1"):
        p.check(url)


def test_schemes_restrict_the_scheme_only() -> None:
    p = policy("https")
    assert allowed(p, "https://anything.example:9090")
    assert not allowed(p, "http://prometheus:9090")
    assert policy("https:").entries == ("https:",) and allowed(policy("https://"), "https://x")


def test_cidrs_check_literal_ips_and_every_resolved_address() -> None:
    dns = {
        "prom.svc": ["10.0.0.5"],
        "mixed.svc": ["10.0.0.6", "192.168.0.1"],
        "v6.svc": ["fd00::1"],
    }
    p = policy("10.0.0.0/8, fd00::/8", dns)
    assert allowed(p, "http://10.1.2.3:9090")
    assert not allowed(p, "http://169.254.169.254/")
    assert allowed(p, "http://prom.svc:9090")
    assert allowed(p, "http://[fd00::2]:80/") and allowed(p, "http://v6.svc")
    with pytest.raises(AddressNotAllowed, match=re.escape("192.168.0.1")):
        p.check("http://mixed.svc:9090")  # one address outside is enough to refuse
    with pytest.raises(AddressNotAllowed, match="cannot be resolved"):
        p.check("http://nowhere.svc")
    # an IPv4-mapped IPv6 literal is the IPv4 address it maps
    assert not allowed(policy("!169.254.0.0/16"), "http://[::ffff:169.254.169.254]/")


def test_host_names_and_suffixes_match_by_name() -> None:
    p = policy("prometheus.monitoring.svc,*.svc.cluster.local")
    assert allowed(p, "http://prometheus.monitoring.svc:9090")
    assert allowed(p, "http://PROM.monitoring.svc.cluster.local.:9090")
    assert not allowed(p, "http://svc.cluster.local")  # the suffix itself is not below it
    assert not allowed(p, "http://evil.example")
    assert not allowed(p, "http://10.0.0.1")


def test_deny_entries_win_even_for_names_allowed_by_name() -> None:
    """DNS cannot smuggle the metadata endpoint in under a friendly, allowed name."""
    dns = {"rebind.svc.cluster.local": ["169.254.169.254"], "ok.svc.cluster.local": ["10.0.0.1"]}
    p = policy("*.svc.cluster.local,!169.254.0.0/16,!metadata.google.internal", dns)
    assert allowed(p, "http://ok.svc.cluster.local")
    with pytest.raises(AddressNotAllowed, match=re.escape("169.254.169.254, which is denied")):
        p.check("http://rebind.svc.cluster.local")
    assert not allowed(p, "http://metadata.google.internal")
    everything_but = policy("*,!169.254.0.0/16", {"x.example": ["1.2.3.4"]})
    assert allowed(everything_but, "http://x.example") and allowed(everything_but, "http://9.9.9.9")
    assert not allowed(everything_but, "http://169.254.169.254")


def test_resolutions_are_cached_for_the_ttl() -> None:
    clock = FakeClock()
    resolver = fake_dns({"prom.svc": ["10.0.0.5"]})
    p = parse_address_policy("10.0.0.0/8", resolver=resolver, clock=clock)
    for _ in range(5):
        p.check("http://prom.svc:9090")
    assert resolver.calls == ["prom.svc"]
    clock.set(31.0)
    p.check("http://prom.svc:9090")
    assert resolver.calls == ["prom.svc", "prom.svc"]


@pytest.mark.parametrize(
    "bad", ["http://x.example", "10.0.0.0/33", "host:9090", "!https", "!*", "*.", "a b", "x/y"]
)
def test_bad_entries_are_refused_at_start_up(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_address_policy(f"https,{bad}")


def test_the_flag_parses_into_entries() -> None:
    from llmscaler_manager.cli import parse_args

    opts = parse_args(["--allowed-server-addresses", "https, *.svc.cluster.local,!169.254.0.0/16"])
    assert opts.allowed_server_addresses == ("https", "*.svc.cluster.local", "!169.254.0.0/16")
    assert parse_args([]).allowed_server_addresses == ()
    with pytest.raises(SystemExit) as exc:
        parse_args(["--allowed-server-addresses", "http://x"])
    assert exc.value.code == 2


# -- Secrets -----------------------------------------------------------------------------------


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Getter:
    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], dict[str, Any]] = {}
        self.forbidden = False
        self.gets: list[tuple[str, str]] = []

    def put(self, ns: str, name: str, rv: str = "1", **data: str) -> None:
        self.secrets[(ns, name)] = {
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
            "data": {k: b64(v) for k, v in data.items()},
        }

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        assert (api_version, kind) == ("v1", "Secret")
        self.gets.append((namespace or "", name))
        if self.forbidden:
            raise Forbidden(403, "Forbidden", f'secrets "{name}" is forbidden')
        try:
            return self.secrets[(namespace or "", name)]
        except KeyError:
            raise NotFound(404, "NotFound", f'secrets "{name}" not found') from None


def from_secret(header: str, name: str, key: str) -> HeaderSource:
    return HeaderSource(header, value_from=HeaderValueSource(SecretKeySelector(name, key)))


@pytest.fixture
def getter() -> Getter:
    return Getter()


def test_values_are_read_once_per_ttl_and_merged_with_literal_headers(getter: Getter) -> None:
    clock = FakeClock()
    getter.put("ns", "auth", token=f"Bearer {CANARY}\n")  # a file's trailing newline is dropped
    r = SecretHeaderResolver(getter, clock=clock)
    sources = [from_secret("Authorization", "auth", "token"), HeaderSource("X-Org", value="a")]
    for _ in range(10):
        headers = r.headers("ns", sources, {"X-Plain": "p"})
    assert dict(headers) == {
        "X-Plain": "p",
        "Authorization": f"Bearer {CANARY}",
        "X-Org": "a",
    }
    assert getter.gets == [("ns", "auth")], "one GET per Secret and TTL, not per sync"
    clock.set(29.0)
    r.headers("ns", sources)
    assert len(getter.gets) == 1
    getter.put("ns", "auth", rv="2", token="Bearer rotated")
    clock.set(31.0)
    assert r.headers("ns", sources)["Authorization"] == "Bearer rotated"
    assert len(getter.gets) == 2


def test_values_are_redacted_in_every_repr(getter: Getter) -> None:
    getter.put("ns", "auth", token=CANARY)
    headers = SecretHeaderResolver(getter).headers("ns", [from_secret("A", "auth", "token")])
    assert headers["A"] == CANARY and isinstance(headers["A"], Redacted)
    assert CANARY not in repr(headers) and CANARY not in repr(dict(headers))
    assert CANARY not in repr(list(headers.items()))


def test_secrets_are_read_in_the_scalers_namespace_only(getter: Getter) -> None:
    getter.put("other", "auth", token=CANARY)
    with pytest.raises(SecretHeaderError) as err:
        SecretHeaderResolver(getter).headers("ns", [from_secret("A", "auth", "token")])
    assert err.value.reason == FAILED_GET_SECRET
    assert "Secret 'auth' in namespace 'ns' not found" in str(err.value)
    assert getter.gets == [("ns", "auth")]


def test_missing_key_names_the_keys_but_no_value(getter: Getter) -> None:
    getter.put("ns", "auth", password=CANARY)
    with pytest.raises(SecretHeaderError, match="has no key 'token'") as err:
        SecretHeaderResolver(getter).headers("ns", [from_secret("A", "auth", "token")])
    assert "'password'" in str(err.value) and CANARY not in str(err.value)


@pytest.mark.parametrize("value", [f"a\r\nX-Injected: {CANARY}", f"{CANARY}\x00", f"é{CANARY}", ""])
def test_values_that_cannot_be_a_header_are_refused_without_echo(
    getter: Getter, value: str
) -> None:
    getter.put("ns", "auth", token=value)
    with pytest.raises(SecretHeaderError) as err:
        SecretHeaderResolver(getter).headers("ns", [from_secret("A", "auth", "token")])
    assert err.value.reason == FAILED_GET_SECRET and CANARY not in str(err.value)


def test_forbidden_is_its_own_reason_and_errors_are_cached_briefly(getter: Getter) -> None:
    clock = FakeClock()
    getter.put("ns", "auth", token=CANARY)
    getter.forbidden = True
    r = SecretHeaderResolver(getter, clock=clock)
    for _ in range(3):
        with pytest.raises(SecretHeaderError) as err:
            r.headers("ns", [from_secret("A", "auth", "token")])
        assert err.value.reason == SECRET_FORBIDDEN and "rbac.secretHeaders" in str(err.value)
    assert len(getter.gets) == 1
    getter.forbidden = False
    clock.set(6.0)  # error_ttl (5 s) later the Secret is asked for again
    assert r.headers("ns", [from_secret("A", "auth", "token")])["A"] == CANARY


# -- the reconciler ----------------------------------------------------------------------------


class RecordingFetcher:
    """Records the headers each fetch would send; answers one usable value."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    def fetch(self, scaler: LLMScaler, budget: float) -> Measurement:
        self.seen.append(dict(scaler.spec.server_headers))
        return Measurement("Prometheus", (MetricReading("m", "q", 1.0, value=1.0),))


def scaler_obj(name: str = "s", **spec: Any) -> dict[str, Any]:
    obj = base_scaler_obj(name)
    obj["spec"]["targetRef"]["name"] = f"web-{name}"
    obj["spec"].update(spec)
    return obj


def secret(name: str, rv: str = "1", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        "data": {k: b64(v) for k, v in data.items()},
    }


AUTH_FROM_SECRET = [
    {"name": "Authorization", "valueFrom": {"secretKeyRef": {"name": "auth", "key": "token"}}}
]


class World:
    def __init__(self, **kw: Any) -> None:
        self.cluster = FakeCluster()
        self.recorder = FakeRecorder()
        self.fetcher = RecordingFetcher()
        self.reconciler = LLMScalerReconciler(
            FakeClient(self.cluster),
            FakeCache(self.cluster),
            self.recorder,
            steps=Steps(fetcher=self.fetcher),
            clock=FakeClock(),
            align_syncs=False,
            **kw,
        )

    def add(self, name: str, replicas: int = 2, **spec: Any) -> None:
        self.cluster.put(scaler_obj(name, **spec))
        self.cluster.put(deployment(f"web-{name}", replicas=replicas))

    def sync(self, name: str = "s") -> Result:
        return self.reconciler.reconcile(Request("ns", name))

    def condition(self, type_: str, name: str = "s") -> dict[str, Any]:
        status = self.cluster.obj(API_VERSION, KIND, "ns", name).get("status") or {}
        return next(c for c in status.get("conditions", []) if c["type"] == type_)

    def replicas(self, name: str) -> int:
        return int(
            self.cluster.obj("apps/v1", "Deployment", "ns", f"web-{name}")["spec"]["replicas"]
        )

    def everything_written(self) -> str:
        """Status, Events and every API write, as text."""
        return json.dumps(
            {
                "objects": [o for k, o in self.cluster.objects.items() if k[1] != "Secret"],
                "calls": [repr(c) for c in self.cluster.calls],
                "events": self.recorder.events,
            },
            default=repr,
        )


@pytest.fixture
def captured_logs() -> Iterator[list[str]]:
    """Every log line at debug level, structlog and stdlib, as rendered text."""
    lines: list[str] = []

    def keep(_logger: Any, _name: str, event: dict[str, Any]) -> str:
        lines.append(repr(event))
        raise structlog.DropEvent

    old = structlog.get_config()
    structlog.configure(processors=[structlog.processors.format_exc_info, keep])

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Handler(logging.DEBUG)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        structlog.configure(**old)


def test_a_secret_header_reaches_the_fetch_and_nothing_else(captured_logs: list[str]) -> None:
    w = World()
    w.cluster.put(secret("auth", token=f"Bearer {CANARY}"))
    w.add("s", serverHeaders={"X-Plain": "p"}, serverHeadersFrom=AUTH_FROM_SECRET)
    for _ in range(3):
        w.sync()
    assert w.fetcher.seen[-1] == {"X-Plain": "p", "Authorization": f"Bearer {CANARY}"}
    assert w.condition("Ready")["status"] == "True"
    assert CANARY not in w.everything_written()
    assert not [line for line in captured_logs if CANARY in line]


def test_a_missing_secret_holds_the_fleet_and_others_keep_working() -> None:
    w = World()
    w.add("s", replicas=4, serverHeadersFrom=AUTH_FROM_SECRET)
    w.add("other", replicas=4)
    assert w.sync("s") == Result(requeue_after=10.0)
    assert w.fetcher.seen == [], "nothing is fetched without the header"
    active = w.condition("ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "FailedGetSecret")
    assert "Secret 'auth' in namespace 'ns' not found" in active["message"]
    assert w.condition("Ready")["reason"] == "FailedGetSecret"
    assert w.condition("AbleToScale")["reason"] == "HoldingReplicas"
    assert w.replicas("s") == 4, "never scaled down"
    assert ("Warning", "FailedGetSecret") in [(t, r) for t, r, _ in w.recorder.events]
    w.sync("other")
    assert w.replicas("other") == 4 and w.condition("Ready", "other")["status"] == "True"
    # the Secret appears (with the wrong key first): reported, then used
    w.cluster.put(secret("auth", password=CANARY))
    # a fresh cache, instead of waiting out error_ttl
    w.reconciler.secret_headers = SecretHeaderResolver(w.reconciler.client)
    w.sync("s")
    assert "has no key 'token'" in w.condition("ScalingActive")["message"]
    assert CANARY not in w.everything_written()


def test_without_rbac_the_scaler_reports_forbidden() -> None:
    class Refusing(Getter):
        def __init__(self) -> None:
            super().__init__()
            self.forbidden = True

    w = World(secret_headers=SecretHeaderResolver(Refusing()))
    w.add("s", serverHeadersFrom=AUTH_FROM_SECRET)
    w.sync()
    assert w.condition("ScalingActive")["reason"] == "SecretForbidden"
    assert ("Warning", "SecretForbidden") in [(t, r) for t, r, _ in w.recorder.events]


def test_a_disallowed_address_sends_nothing_and_reads_no_secret() -> None:
    w = World(address_policy=policy("10.0.0.0/8"))
    w.cluster.put(secret("auth", token=CANARY))
    w.add(
        "s", replicas=3, serverAddress="http://169.254.169.254", serverHeadersFrom=AUTH_FROM_SECRET
    )
    w.add("ok", replicas=3, serverAddress="http://10.0.0.9:9090")
    reads = w.cluster.reads
    w.sync("s")
    assert w.fetcher.seen == [] and w.cluster.reads == reads, "no request, no Secret read"
    active = w.condition("ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "ServerAddressNotAllowed")
    assert "169.254.169.254" in active["message"] and "no request was sent" in active["message"]
    assert w.condition("Ready")["reason"] == "ServerAddressNotAllowed"
    assert ("Warning", "ServerAddressNotAllowed") in [(t, r) for t, r, _ in w.recorder.events]
    assert w.replicas("s") == 3
    w.sync("ok")
    assert len(w.fetcher.seen) == 1 and w.condition("Ready", "ok")["status"] == "True"


def test_scalers_without_secret_headers_skip_the_request_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default policy and a spec without serverHeadersFrom cost nothing per sync: the
    fetch gets the parsed scaler itself, and the checks are never entered."""
    w = World()
    w.add("s", serverHeaders={"Authorization": "Bearer plain"})

    def entered(*_a: Any) -> LLMScaler:
        raise AssertionError("requestable ran for a scaler that needs none of it")

    monkeypatch.setattr(reconciler_module, "requestable", entered)
    seen: list[LLMScaler] = []
    original = w.fetcher.fetch
    w.fetcher.fetch = lambda scaler, budget: seen.append(scaler) or original(scaler, budget)  # type: ignore[method-assign,func-returns-value]
    for _ in range(3):
        w.sync()
    assert seen[-1] is w.reconciler.memory._parsed["uid-s"][1]


def test_the_effective_scaler_is_reused_while_nothing_changes() -> None:
    w = World()
    w.cluster.put(secret("auth", token=CANARY))
    w.add("s", serverHeadersFrom=AUTH_FROM_SECRET)
    seen: list[LLMScaler] = []
    original = w.fetcher.fetch

    def fetch(scaler: LLMScaler, budget: float) -> Measurement:
        seen.append(scaler)
        return original(scaler, budget)

    w.fetcher.fetch = fetch  # type: ignore[method-assign]
    for _ in range(4):
        w.sync()
    # the first sync writes the status (a new resourceVersion, parsed anew); then steady
    assert seen[1] is seen[2] is seen[3]
    assert CANARY not in repr(seen[3]), "a repr of the effective scaler shows no secret"


# -- what servers send never reaches Events or status -------------------------------------------

HTTP = HttpOptions(timeout=0.5, connect_timeout=0.5, max_attempts=1, coalesce_ttl=0, retry_wait=0)


def _scaler(url: str, **spec: Any) -> LLMScaler:
    obj = base_scaler_obj()
    obj["spec"]["serverAddress"] = url
    obj["spec"].update(spec)
    return LLMScaler.from_dict(obj)


HOSTILE_PROMETHEUS = [
    Reply(200, f"<html>{BODY_CANARY}</html>".encode(), "text/html"),
    Reply(502, f"bad gateway {BODY_CANARY}".encode(), "text/plain"),
    json_reply({"status": "success", "data": {"resultType": "vector", "result": [BODY_CANARY]}}),
    json_reply(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": BODY_CANARY, "value": [1, "1"]}],
            },
        }
    ),
    json_reply(
        {"status": "success", "data": {"resultType": "vector", "result": [{"value": BODY_CANARY}]}}
    ),
    json_reply(
        {"status": "success", "data": {"resultType": "scalar", "result": [1, BODY_CANARY * 50]}}
    ),
]


def _check_error_text(error: str, reply: Reply) -> None:
    """A body that is not the JSON the protocol asks for is never quoted (its size and type
    are named instead); from a JSON reply only a short excerpt of the offending field is."""
    assert len(error) < 400, error
    if reply.content_type != "application/json" or not reply.body.startswith(b"{"):
        assert BODY_CANARY not in error, error
    assert reply.body.decode() not in error


@pytest.mark.parametrize("reply", HOSTILE_PROMETHEUS)
def test_prometheus_errors_never_quote_the_body(server: ScriptedServer, reply: Reply) -> None:
    server.respond = lambda _r: reply
    m = PrometheusProvider(MetricHttpClient(HTTP)).fetch(_scaler(server.url), 5.0)
    (reading,) = m.readings
    assert reading.value is None and reading.error
    _check_error_text(reading.error, reply)


HOSTILE_DECISIONS = [
    Reply(200, f"not json {BODY_CANARY}".encode()),
    Reply(500, f"<html>{BODY_CANARY}</html>".encode(), "text/html"),
    json_reply(
        {"apiVersion": "llmscaling.inference.x-k8s.io/v1alpha1", "decisions": [BODY_CANARY]}
    ),
    json_reply({"apiVersion": BODY_CANARY * 100, "decisions": []}),
]


@pytest.mark.parametrize("reply", HOSTILE_DECISIONS)
def test_decision_errors_never_quote_the_body(server: ScriptedServer, reply: Reply) -> None:
    server.respond = lambda _r: reply
    scaler = _scaler(server.url, metricProvider="Custom", customProvider={"serviceId": "svc"})
    m = DecisionProvider(MetricHttpClient(HTTP)).fetch(scaler, 5.0)
    assert m.decision is None and m.error
    _check_error_text(m.error, reply)


def test_redirects_are_never_followed() -> None:
    """A redirect would let a metric source send the manager (with its headers) elsewhere."""
    seen: list[str] = []

    def handle(request: BaseHTTPRequestHandler) -> None:
        seen.append(request.path)
        request.send_response(302)
        request.send_header("Location", "http://169.254.169.254/latest/meta-data/")
        request.send_header("Content-Length", "0")
        request.end_headers()

    with LocalHTTPServer(handle) as redirecting:
        client = MetricHttpClient(HTTP)
        url = f"http://127.0.0.1:{redirecting.port}/api/v1/query"
        resp = client.get(url, headers={"Authorization": CANARY})
        assert resp.status == 302
        assert seen == ["/api/v1/query"]
        m = PrometheusProvider(client).fetch(_scaler(url.removesuffix("/api/v1/query")), 5.0)
        assert m.readings[0].value is None and "302" in str(m.readings[0].error)
        assert seen == ["/api/v1/query", "/api/v1/query?query=q"]


def test_secret_headers_do_not_reach_debug_logs_of_http_requests(
    server: ScriptedServer, captured_logs: list[str]
) -> None:
    server.respond = lambda _r: json_reply(
        {"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}
    )
    logging.getLogger("urllib3").setLevel(logging.DEBUG)
    scaler = _scaler(server.url, serverHeaders={"Authorization": Redacted(CANARY)})
    m = PrometheusProvider(MetricHttpClient(HTTP)).fetch(scaler, 5.0)
    assert m.readings[0].value == 2.0
    assert server.requests[0].headers["authorization"] == CANARY
    assert any("GET /api/v1/query" in line for line in captured_logs), captured_logs
    assert not [line for line in captured_logs if CANARY in line]


def test_the_deletion_cost_query_is_asked_with_the_secret_header_too() -> None:
    """Every request to serverAddress carries the headers: the cost query of a scale-down too."""
    from .fakes import StaticCostSource, StaticFetcher, pod

    cluster, asked = FakeCluster(), []

    class Costs(StaticCostSource):
        def pod_costs(self, scaler: Any, budget: float) -> Any:
            asked.append(dict(scaler.spec.server_headers))
            return super().pod_costs(scaler, budget)

    fetcher = StaticFetcher()
    fetcher.set_value(0.5)  # 4 -> 2
    reconciler = LLMScalerReconciler(
        FakeClient(cluster),
        FakeCache(cluster),
        FakeRecorder(),
        steps=Steps(fetcher=fetcher, cost_source=Costs({"p1": 1, "p2": 2, "p3": 3, "p4": 4})),
        clock=FakeClock(),
        align_syncs=False,
    )
    obj = base_scaler_obj(deletion_cost_query="kv * 100")
    obj["spec"]["serverHeadersFrom"] = AUTH_FROM_SECRET
    cluster.put(obj)
    cluster.put(secret("auth", token=CANARY))
    cluster.put(deployment(replicas=4))
    for i, name in enumerate(["p1", "p2", "p3", "p4"]):
        cluster.put(pod(name, f"2026-01-01T00:00:0{i}Z"))
    reconciler.reconcile(Request("ns", "s"))
    assert asked == [{"Authorization": CANARY}]
    assert cluster.obj("apps/v1", "Deployment", "ns", "web")["spec"]["replicas"] == 2
