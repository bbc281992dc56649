"""Metric transport: timeouts, size cap, bounded retries, TLS options, request coalescing."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import attrs
import pytest

from llmscaler_runtime.scaling.http import FetchError, HttpOptions, HttpResponse, MetricHttpClient
from llmscaler_runtime.testkit import FakeClock

from .httpserver import Reply, ScriptedServer, Seen, held, together

FAST = HttpOptions(connect_timeout=0.5, timeout=0.5, retry_wait=0.0, coalesce_ttl=0.0)


def client(**kw: object) -> MetricHttpClient:
    opts = attrs.evolve(FAST, **kw)  # type: ignore[arg-type]
    return MetricHttpClient(opts)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_defaults_are_connect_2s_total_5s() -> None:
    opts = HttpOptions()
    assert (opts.connect_timeout, opts.timeout, opts.max_response_bytes) == (2.0, 5.0, 4 << 20)


def test_headers_and_params_are_sent(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    resp = client().get(server.url + "/x", params={"q": "a b"}, headers={"Authorization": "t"})
    assert resp.status == 200 and resp.media_type == "application/json"
    seen = server.requests[0]
    assert seen.query == {"q": ["a b"]} and seen.headers["authorization"] == "t"


def test_params_join_a_query_already_in_the_url_and_fragments_stay_local(
    server: ScriptedServer,
) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    http = client()
    resp = http.get(server.url + "/api/v1/query?dedup=true#frag", params={"query": 'up{a="b"}'})
    seen = server.requests[0]
    assert seen.path == "/api/v1/query" and seen.query == {
        "dedup": ["true"],
        "query": ['up{a="b"}'],
    }
    assert resp.url == server.url + "/api/v1/query?dedup=true&query=up%7Ba%3D%22b%22%7D"
    # asking again (the encoded target now comes from the cache) sends the same request
    http.get(server.url + "/api/v1/query?dedup=true#frag", params={"query": 'up{a="b"}'})
    assert server.requests[1] == seen


def test_a_user_agent_names_the_operator(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    client().get(server.url + "/")
    assert server.requests[0].headers["user-agent"].startswith("llmscaler/")


def test_slow_response_times_out_within_total_timeout(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}", delay=10)
    started = time.monotonic()
    with pytest.raises(FetchError, match="timed out"):
        client(max_attempts=1).get(server.url + "/slow")
    assert time.monotonic() - started < 3


def test_body_over_the_cap_is_refused(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"x" * 5000)
    with pytest.raises(FetchError, match="limit"):
        client(max_response_bytes=1000).get(server.url + "/big")


def test_body_over_the_cap_without_content_length_is_refused_while_streaming(
    server: ScriptedServer,
) -> None:
    server.respond = lambda _r: Reply(200, b"x" * 200_000, content_length=False)
    with pytest.raises(FetchError, match="limit"):
        client(max_response_bytes=1000).get(server.url + "/big")


def test_transient_5xx_is_retried(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(503, b"busy") if server.hits() == 1 else Reply(200, b"{}")
    assert client(max_attempts=3).get(server.url + "/flaky").status == 200
    assert server.hits() == 2


def test_retries_are_bounded_by_attempts(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(503, b"busy")
    assert client(max_attempts=3).get(server.url + "/down").status == 503
    assert server.hits() == 3


def test_non_transient_status_is_not_retried(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(400, b"bad")
    assert client(max_attempts=3).get(server.url + "/bad").status == 400
    assert server.hits() == 1


def test_retries_stop_when_another_attempt_would_overrun_the_budget(
    server: ScriptedServer,
) -> None:
    server.respond = lambda _r: Reply(503, b"busy")
    # each attempt may take 0.5 s; after the first, a 0.4 s budget has no room for another
    client(max_attempts=5, timeout=0.5).get(server.url + "/down", budget=0.4)
    assert server.hits() == 1


def test_connection_refused_is_a_fetch_error() -> None:
    with pytest.raises(FetchError):
        client(max_attempts=2).get(f"http://127.0.0.1:{free_port()}/")


def test_identical_requests_within_ttl_are_coalesced(server: ScriptedServer) -> None:
    def slow(_r: Seen) -> Reply:
        return Reply(200, b'{"ok": 1}', delay=0.2)

    server.respond = slow
    http = client(coalesce_ttl=5.0)
    results: list[bytes] = []
    lock = threading.Lock()

    def one() -> None:
        body = http.get(server.url + "/q", params={"query": "up"}, headers={"A": "1"}).body
        with lock:
            results.append(body)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [b'{"ok": 1}'] * 12
    assert server.hits() == 1


def test_coalescing_keys_on_url_query_and_headers(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    http = client(coalesce_ttl=5.0)
    http.get(server.url + "/q", params={"query": "a"})
    http.get(server.url + "/q", params={"query": "a"})
    http.get(server.url + "/q", params={"query": "b"})
    http.get(server.url + "/q", params={"query": "a"}, headers={"Authorization": "x"})
    assert server.hits() == 3


def test_coalesced_answer_expires_after_ttl(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    clock = FakeClock()
    http = MetricHttpClient(HttpOptions(timeout=1, retry_wait=0, coalesce_ttl=1.0), clock=clock)
    http.get(server.url + "/q")
    clock.set(0.9)
    http.get(server.url + "/q")
    assert server.hits() == 1
    clock.set(1.1)
    http.get(server.url + "/q")
    assert server.hits() == 2


TOKEN = (6, 0.25, 300_000_000)  # a scaler's (period, phase, tick), as the providers pass it


@pytest.mark.parametrize("token", [None, TOKEN], ids=["ttl", "token"])
def test_a_failure_is_never_served_to_a_later_caller(token: tuple[int, float, int] | None) -> None:
    clock = FakeClock()
    http = MetricHttpClient(HttpOptions(timeout=0.5, max_attempts=1, coalesce_ttl=1.0), clock=clock)
    url = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(FetchError):
        http.get(url, coalesce=token)
    with pytest.raises(FetchError):  # same instant, same tick: still a new attempt
        http.get(url, coalesce=token)
    assert http.requests_sent == 2


@pytest.mark.parametrize("status", [500, 503, 404, 429])
@pytest.mark.parametrize("token", [None, TOKEN], ids=["ttl", "token"])
def test_an_error_status_is_never_served_to_a_later_caller(
    server: ScriptedServer, status: int, token: tuple[int, float, int] | None
) -> None:
    server.respond = lambda _r: Reply(status, b"{}")
    http = client(max_attempts=1, coalesce_ttl=5.0)
    assert http.get(server.url + "/q", coalesce=token).status == status
    assert http.get(server.url + "/q", coalesce=token).status == status
    assert server.hits() == 2
    server.respond = lambda _r: Reply(200, b"{}")  # recovered: the answer is shared again
    assert http.get(server.url + "/q", coalesce=token).status == 200
    assert http.get(server.url + "/q", coalesce=token).status == 200
    assert server.hits() == 3


def test_concurrent_callers_share_one_failing_attempt_and_no_more(server: ScriptedServer) -> None:
    gate = threading.Event()
    server.respond = held(gate, Reply(500, b"down"))
    http = client(max_attempts=1)
    statuses = together(
        6,
        lambda: http.get(server.url + "/q", coalesce=TOKEN).status,
        joined=lambda: http.callers_joined,
        gate=gate,
    )
    assert statuses == [500] * 6
    assert server.hits() == 1
    # the attempt is over: the next caller of the same tick asks again
    assert http.get(server.url + "/q", coalesce=TOKEN).status == 500
    assert server.hits() == 2


def test_concurrent_callers_share_one_transport_failure(server: ScriptedServer) -> None:
    gate = threading.Event()
    server.respond = held(gate, Reply(200, b"x" * 5000))  # over the cap: a FetchError
    http = client(max_attempts=1, max_response_bytes=1000)
    outcomes = together(
        4,
        lambda: http.get(server.url + "/q", coalesce=TOKEN),
        joined=lambda: http.callers_joined,
        gate=gate,
    )
    assert all(isinstance(o, FetchError) and "limit" in str(o) for o in outcomes), outcomes
    assert len({id(o) for o in outcomes}) == 4  # each caller raises its own copy
    assert server.hits() == 1


def test_concurrent_and_later_callers_share_a_success(server: ScriptedServer) -> None:
    gate = threading.Event()
    server.respond = held(gate, Reply(200, b'{"ok": 1}'))
    http = client(max_attempts=1)
    bodies = together(
        5,
        lambda: http.get(server.url + "/q", coalesce=TOKEN).body,
        joined=lambda: http.callers_joined,
        gate=gate,
    )
    assert bodies == [b'{"ok": 1}'] * 5
    assert http.get(server.url + "/q", coalesce=TOKEN).body == b'{"ok": 1}'
    assert server.hits() == 1


def test_a_read_that_refuses_the_answer_keeps_it_from_later_callers(
    server: ScriptedServer,
) -> None:
    server.respond = lambda _r: Reply(200, b"not json")

    def read(resp: HttpResponse) -> int:
        if not resp.body.startswith(b"{"):
            raise ValueError("unusable")
        return len(resp.body)

    http = client()
    for _ in range(2):
        with pytest.raises(ValueError, match="unusable"):
            http.get_as(read, server.url + "/q", coalesce=TOKEN)
    assert server.hits() == 2
    server.respond = lambda _r: Reply(200, b"{}")
    assert http.get_as(read, server.url + "/q", coalesce=TOKEN) == 2
    assert http.get_as(read, server.url + "/q", coalesce=TOKEN) == 2
    assert server.hits() == 3


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    key, crt = d / "key.pem", d / "crt.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(crt),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return key, crt


@pytest.fixture
def tls_server(cert: tuple[Path, Path]):  # type: ignore[no-untyped-def]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert[1]), str(cert[0]))
    srv = ScriptedServer(tls=ctx)
    srv.respond = lambda _r: Reply(200, b"{}")
    yield srv
    srv.close()


def test_tls_untrusted_certificate_is_refused(tls_server: ScriptedServer) -> None:
    with pytest.raises(FetchError):
        client(max_attempts=1, timeout=2.0).get(tls_server.url + "/")


def test_tls_ca_bundle_trusts_the_server(
    tls_server: ScriptedServer, cert: tuple[Path, Path]
) -> None:
    assert client(timeout=2.0, ca_bundle=str(cert[1])).get(tls_server.url + "/").status == 200


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # opted in
def test_tls_insecure_skip_verify(tls_server: ScriptedServer) -> None:
    assert client(timeout=2.0, insecure_skip_verify=True).get(tls_server.url + "/").status == 200


@pytest.mark.parametrize("url", ["ftp://x/api", "not a url", "http://[::1/"])
def test_malformed_url_is_a_fetch_error_and_not_retried(url: str) -> None:
    http = client(max_attempts=3)
    with pytest.raises(FetchError, match="invalid URL"):
        http.get(url)
    assert http.requests_sent == 1


def test_trickling_body_is_cut_off_at_the_total_timeout(server: ScriptedServer) -> None:
    # every piece arrives well within a read timeout, but the whole body would take 6 s
    server.respond = lambda _r: Reply(200, b"x" * 480, drip=0.2)
    started = time.monotonic()
    with pytest.raises(FetchError, match="longer than"):
        client(max_attempts=1, timeout=0.6).get(server.url + "/drip")
    assert time.monotonic() - started < 2.0


def test_the_pause_before_a_retry_counts_against_the_budget(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(503, b"busy")
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.step(seconds)

    opts = attrs.evolve(FAST, max_attempts=5, timeout=0.5, retry_wait=1.0)
    http = MetricHttpClient(opts, clock=clock, sleep=sleep)
    # an attempt fits (0.5 s) but the 1 s pause before it does not: 1.0 + 0.5 > 1.2
    assert http.get(server.url + "/down", budget=1.2).status == 503
    assert server.hits() == 1 and clock.monotonic() == 0.0
    # with room for pause and attempt, it retries (and stops once the room is gone)
    assert http.get(server.url + "/down2", budget=1.6).status == 503
    assert server.hits() == 3


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_an_oversized_body_is_not_retried(server: ScriptedServer, declared: bool) -> None:
    server.respond = lambda _r: Reply(200, b"x" * 50_000, content_length=declared)
    with pytest.raises(FetchError, match="limit"):
        client(max_attempts=3, max_response_bytes=1000).get(server.url + "/big")
    assert server.hits() == 1


def test_a_coalescing_token_shares_answers_regardless_of_age(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    clock = FakeClock()
    http = MetricHttpClient(HttpOptions(timeout=1, retry_wait=0, coalesce_ttl=1.0), clock=clock)
    http.get(server.url + "/q", coalesce=(15, 7))
    clock.set(12.0)  # far older than the TTL: the same tick still shares it
    http.get(server.url + "/q", coalesce=(15, 7))
    assert server.hits() == 1
    http.get(server.url + "/q", coalesce=(15, 8))  # the next tick fetches afresh
    http.get(server.url + "/q", coalesce=(5, 7))  # so does a scaler with another period
    http.get(server.url + "/q")  # and a caller without a token (nothing younger than the TTL)
    assert server.hits() == 4


def test_no_ttl_and_no_token_always_fetches(server: ScriptedServer) -> None:
    server.respond = lambda _r: Reply(200, b"{}")
    http = client(coalesce_ttl=0.0)
    http.get(server.url + "/q")
    http.get(server.url + "/q")
    assert server.hits() == 2


def _clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_http_proxy_from_the_environment_is_used(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scripted server plays the proxy: a request for another host arriving at it, with
    # that host in its Host header, went through the proxy.
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", server.url)
    server.respond = lambda _r: Reply(200, b"{}")
    resp = client().get("http://prometheus.example.invalid:9090/api/v1/query", params={"q": "1"})
    assert resp.status == 200
    (seen,) = server.requests
    assert seen.headers["host"] == "prometheus.example.invalid:9090"
    assert seen.path == "/api/v1/query" and seen.query == {"q": ["1"]}


def test_no_proxy_hosts_bypass_the_proxy(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", server.url)
    monkeypatch.setenv("NO_PROXY", "example.com,.invalid")
    server.respond = lambda _r: Reply(200, b"{}")
    with pytest.raises(FetchError):  # direct: the name does not resolve
        client(max_attempts=1).get("http://prometheus.monitoring.invalid:9090/api/v1/query")
    assert server.requests == []  # and the proxy never saw it


def test_loopback_is_never_proxied(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")  # nothing listens
    server.respond = lambda _r: Reply(200, b"{}")
    assert client().get(server.url + "/direct").status == 200
    assert [r.path for r in server.requests] == ["/direct"]


def test_an_unreachable_proxy_is_a_fetch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(FetchError):
        client(max_attempts=1).get("http://prometheus.example.invalid/api/v1/query")
