"""The real manager process, the embedded API server with its workload simulator, a real
Prometheus scraping a vLLM exporter, and a fake decision server: the product end to end.

Every test waits on what the cluster shows (replicas, pods, status, Events) with a deadline.
"Nothing happened" is asserted only after evidence that the manager really evaluated the scaler
several times (its aggregated Warning Event count), never after a bare sleep.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer, FailureMode
from llmscaler_runtime.testkit.prometheus import PrometheusServer
from llmscaler_runtime.testkit.vllm_exporter import VllmMetricsExporter
from test.integration.e2e.conftest import LLMSCALER, decided_scaler, deployment, scaler
from test.integration.e2e.feeder import PodMetricsFeeder
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.prometheus]

FIELD_MANAGER = "llmscaler-operator"


@pytest.fixture(scope="module")
def exporter() -> Iterator[VllmMetricsExporter]:
    with VllmMetricsExporter() as exp:
        yield exp


@pytest.fixture(scope="module")
def prom(prometheus_binary: str, exporter: VllmMetricsExporter) -> Iterator[PrometheusServer]:
    with PrometheusServer([exporter.target], "1s", prometheus_binary) as server:
        server.wait_ready(timeout=30)
        yield server


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _deploy(kube: Any, ns: str, name: str, replicas: int) -> None:
    kube.create(deployment(name, ns, replicas))
    wait_for(
        lambda: _dep(kube, ns, name).get("status", {}).get("readyReplicas") == replicas,
        timeout=30,
        what=f"deployment {name} to have {replicas} ready replicas",
    )


def _dep(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get("apps/v1", "Deployment", name, ns)  # type: ignore[no-any-return]


def _scaler(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get(LLMSCALER, "LLMScaler", name, ns)  # type: ignore[no-any-return]


def _condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c  # type: ignore[no-any-return]
    return None


def _events(kube: Any, ns: str, involved: str, reason: str) -> list[dict[str, Any]]:
    items = kube.list("v1", "Event", ns)["items"]
    return [
        e
        for e in items
        if e.get("involvedObject", {}).get("name") == involved and e.get("reason") == reason
    ]


def _event_count(kube: Any, ns: str, involved: str, reason: str) -> int:
    return sum(int(e.get("count") or 1) for e in _events(kube, ns, involved, reason))


def _selector(ns: str, app: str) -> str:
    return f'namespace="{ns}", app="{app}"'


def test_scales_up_on_kv_cache_and_owns_replicas_through_server_side_apply(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    prom: PrometheusServer,
    exporter: VllmMetricsExporter,
) -> None:
    """A hot KV-cache on one replica scales the Deployment up to maxReplicas, written by SSA."""
    ns, app = namespace, "hot"
    _deploy(kube, ns, app, 1)
    with PodMetricsFeeder(kube, exporter, ns, app, kv=lambda _pod: 0.9):
        kube.create(
            scaler(
                "hot-scaler",
                ns,
                app,
                prom.url,
                min_replicas=1,
                max_replicas=4,
                metrics=[
                    {
                        "name": "kv",
                        "query": f"avg(vllm:kv_cache_usage_perc{{{_selector(ns, app)}}})",
                        "target": "0.3",
                    }
                ],
            )
        )
        wait_for(
            lambda: _dep(kube, ns, app)["spec"]["replicas"] == 4,
            timeout=45,
            what="scale-up to maxReplicas=4",
            diagnostics=manager.logs,
        )

    dep = _dep(kube, ns, app)
    owners = [
        m for m in dep["metadata"].get("managedFields", []) if m.get("manager") == FIELD_MANAGER
    ]
    assert owners, (
        f"no managedFields entry for {FIELD_MANAGER}: {dep['metadata'].get('managedFields')}"
    )
    assert owners[0]["operation"] == "Apply"
    assert "f:replicas" in owners[0]["fieldsV1"]["f:spec"]
    # The apply set is spec.replicas alone: the operator owns nothing else of the Deployment.
    assert set(owners[0]["fieldsV1"]["f:spec"]) == {"f:replicas"}

    def status_settled() -> bool:
        st = _scaler(kube, ns, "hot-scaler").get("status", {})
        return st.get("desiredReplicas") == 4 and st.get("currentReplicas") == 4

    wait_for(status_settled, timeout=30, what="status current=desired=4")
    limited = _condition(_scaler(kube, ns, "hot-scaler"), "ScalingLimited")
    assert limited is not None and limited["status"] == "True", limited
    assert _events(kube, ns, "hot-scaler", "SuccessfulRescale"), "no SuccessfulRescale Event"


def test_cache_aware_scale_down_removes_the_coldest_pod(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    prom: PrometheusServer,
    exporter: VllmMetricsExporter,
) -> None:
    """deletionCostQuery ranks pods by KV-cache; the cold pod is the one the ReplicaSet deletes."""
    ns, app = namespace, "cool"
    _deploy(kube, ns, app, 3)
    pods = PodMetricsFeeder(kube, exporter, ns, app, kv=lambda _p: 0.0).ready_pods()
    assert len(pods) == 3
    cold = pods[1]  # not chosen by age: the newest-first heuristic would be a coin toss here
    values = {p: (0.05 if p == cold else 0.6 + 0.1 * i) for i, p in enumerate(pods)}
    with PodMetricsFeeder(kube, exporter, ns, app, kv=lambda p: values.get(p, 0.65)):
        kube.create(
            scaler(
                "cool-scaler",
                ns,
                app,
                prom.url,
                min_replicas=1,
                max_replicas=5,
                metrics=[
                    {
                        "name": "kv",
                        "query": f"avg(vllm:kv_cache_usage_perc{{{_selector(ns, app)}}})",
                        "target": "0.8",
                    }
                ],
                scale_down={
                    "stabilizationWindowSeconds": 0,
                    "maxStepReplicas": 1,
                    "behavior": "CacheAware",
                    "deletionCostQuery": f"vllm:kv_cache_usage_perc{{{_selector(ns, app)}}} * 100",
                },
            )
        )
        wait_for(
            lambda: _dep(kube, ns, app)["spec"]["replicas"] == 2,
            timeout=45,
            what="scale-down by one step",
            diagnostics=manager.logs,
        )

        def cold_pod_gone() -> bool:
            names = {p["metadata"]["name"] for p in kube.list("v1", "Pod", ns)["items"]}
            return cold not in names and len(names) == 2

        wait_for(cold_pod_gone, timeout=30, what=f"the cold pod {cold} to be deleted")
        remaining = kube.list("v1", "Pod", ns)["items"]
        costs = {
            p["metadata"]["name"]: p["metadata"]
            .get("annotations", {})
            .get("controller.kubernetes.io/pod-deletion-cost")
            for p in remaining
        }
        # The warm pods carry their KV-cache percentage as their cost (60 and 80 -> kept).
        assert sorted(costs.values()) == sorted(str(round(values[p] * 100)) for p in costs), costs


def test_custom_provider_follows_the_decision_server_and_holds_on_failure(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
) -> None:
    """replicas.active is an absolute count; a broken decision server holds the fleet."""
    ns, app = namespace, "decided"
    _deploy(kube, ns, app, 1)
    kube.create(
        decided_scaler(
            decisions,
            "decided-scaler",
            ns,
            app,
            3,
            service_id="svc-" + ns,
            min_replicas=1,
            max_replicas=6,
        )
    )
    wait_for(
        lambda: _dep(kube, ns, app)["spec"]["replicas"] == 3,
        timeout=30,
        what="replicas to follow the decision (3)",
        diagnostics=manager.logs,
    )
    asked = [r for r in decisions.requests if r.service_id == "svc-" + ns]
    assert asked and asked[-1].path == "/decisions"

    decisions.set_mode(FailureMode.GARBAGE)
    wait_for(
        lambda: _event_count(kube, ns, "decided-scaler", "FailedGetDecision") >= 3,
        timeout=30,
        what="three failed decision fetches",
    )
    assert _dep(kube, ns, app)["spec"]["replicas"] == 3, "a failing decision server moved the fleet"
    active = _condition(_scaler(kube, ns, "decided-scaler"), "ScalingActive")
    assert active is not None and active["status"] == "False", active

    decisions.set_mode(FailureMode.NONE)
    decisions.set_decision("svc-" + ns, 0, namespace=ns)  # clamps up to minReplicas
    wait_for(
        lambda: _dep(kube, ns, app)["spec"]["replicas"] == 1,
        timeout=30,
        what="decision 0 clamped to minReplicas 1",
    )


class _GarbageHandler(http.server.BaseHTTPRequestHandler):
    """A metric source gone wrong; the first path segment picks how."""

    def do_GET(self) -> None:
        mode = self.path.strip("/").split("/", 1)[0]
        if mode == "close":  # accept, then hang up without a word
            self.close_connection = True
            return
        if mode == "hang":  # answer nothing until the client gives up
            self.server_stop.wait(30)  # type: ignore[attr-defined]
            return
        if mode == "huge":  # a valid-looking JSON answer far above the response cap
            body = (
                b'{"status":"success","data":{"resultType":"vector","result":['
                + (b" " * (16 * 1024 * 1024))
                + b"]}}"
            )
            ctype = "application/json"
        else:
            body = b"<html><body>502 Bad Gateway</body></html>"
            ctype = "text/html"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def garbage_server() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GarbageHandler)
    srv.daemon_threads = True
    srv.server_stop = threading.Event()  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.server_stop.set()  # type: ignore[attr-defined]
    srv.shutdown()
    srv.server_close()


def test_bad_scalers_get_conditions_and_events_and_never_affect_others(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    prom: PrometheusServer,
    exporter: VllmMetricsExporter,
    garbage_server: str,
) -> None:
    """Missing target, unreachable server, bad PromQL, an HTML answer, a huge body and a dropped
    connection each surface on their own scaler, are retried at retryPeriodSeconds, and leave
    every fleet where it is, while a healthy scaler next to them keeps scaling."""
    ns = namespace
    for app in ("unreachable", "badquery", "html", "huge", "close", "good"):
        _deploy(kube, ns, app, 2)
    query = "avg(vllm:kv_cache_usage_perc{{{}}})"
    kube.create(
        scaler(
            "ghost",
            ns,
            "does-not-exist",
            prom.url,
            metrics=[{"name": "kv", "query": query.format(_selector(ns, "x")), "target": "0.5"}],
        )
    )
    kube.create(
        scaler(
            "unreachable",
            ns,
            "unreachable",
            "http://127.0.0.1:1",
            metrics=[{"name": "kv", "query": "vector(0)", "target": "0.5"}],
        )
    )
    kube.create(
        scaler(
            "badquery",
            ns,
            "badquery",
            prom.url,
            metrics=[{"name": "kv", "query": "avg(", "target": "0.5"}],
        )
    )
    for mode in ("html", "huge", "close"):
        kube.create(
            scaler(
                mode,
                ns,
                mode,
                f"{garbage_server}/{mode}",
                metrics=[{"name": "kv", "query": "vector(0)", "target": "0.5"}],
            )
        )
    with PodMetricsFeeder(kube, exporter, ns, "good", kv=lambda _p: 0.9):
        kube.create(
            scaler(
                "good",
                ns,
                "good",
                prom.url,
                max_replicas=3,
                metrics=[
                    {"name": "kv", "query": query.format(_selector(ns, "good")), "target": "0.5"}
                ],
            )
        )
        wait_for(
            lambda: _dep(kube, ns, "good")["spec"]["replicas"] == 3,
            timeout=45,
            what="the healthy scaler to scale up",
            diagnostics=manager.logs,
        )

    # Retried at retryPeriodSeconds (1 s): the aggregated Warning counts keep climbing.
    wait_for(
        lambda: _event_count(kube, ns, "ghost", "FailedGetTarget") >= 3,
        timeout=30,
        what="missing target retried three times",
    )
    for name in ("unreachable", "badquery", "html", "huge", "close"):
        wait_for(
            lambda n=name: _event_count(kube, ns, n, "FailedGetMetrics") >= 3,
            timeout=30,
            what=f"{name}: three failed metric fetches",
            diagnostics=manager.logs,
        )
        assert _dep(kube, ns, name)["spec"]["replicas"] == 2, f"{name}: fleet moved on bad input"
        active = _condition(_scaler(kube, ns, name), "ScalingActive")
        assert active is not None and active["status"] == "False", (name, active)
        assert active["message"], "a condition must say what is wrong"
    ghost = _condition(_scaler(kube, ns, "ghost"), "AbleToScale")
    assert ghost is not None and ghost["reason"] == "TargetNotFound", ghost
    assert "does-not-exist" in ghost["message"]
    # One Event object per failure kind, its count raised on repeats (aggregation).
    assert len(_events(kube, ns, "ghost", "FailedGetTarget")) == 1


def test_missing_target_is_scaled_once_it_appears(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
) -> None:
    ns, app = namespace, "late"
    kube.create(
        decided_scaler(
            decisions,
            "late-scaler",
            ns,
            app,
            2,
            service_id="late-" + ns,
        )
    )
    wait_for(
        lambda: _event_count(kube, ns, "late-scaler", "FailedGetTarget") >= 1,
        timeout=30,
        what="the scaler to notice its target is missing",
    )
    _deploy(kube, ns, app, 1)
    wait_for(
        lambda: _dep(kube, ns, app)["spec"]["replicas"] == 2,
        timeout=30,
        what="scale once the target exists",
    )


def test_two_scalers_on_one_target_the_older_keeps_control(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
) -> None:
    ns, app = namespace, "shared"
    _deploy(kube, ns, app, 1)
    decisions.set_mode(FailureMode.NONE)
    decisions.set_decision("first-" + ns, 2, namespace=ns)
    decisions.set_decision("second-" + ns, 5, namespace=ns)
    kube.create(
        scaler(
            "first",
            ns,
            app,
            decisions.url,
            metricProvider="Custom",
            max_replicas=6,
            customProvider={"serviceId": "first-" + ns, "namespace": ns},
        )
    )
    wait_for(
        lambda: _dep(kube, ns, app)["spec"]["replicas"] == 2,
        timeout=30,
        what="first scaler in control",
    )
    kube.create(
        scaler(
            "second",
            ns,
            app,
            decisions.url,
            metricProvider="Custom",
            max_replicas=6,
            customProvider={"serviceId": "second-" + ns, "namespace": ns},
        )
    )

    def second_refused() -> bool:
        cond = _condition(_scaler(kube, ns, "second"), "ScalingActive")
        return bool(cond and cond["status"] == "False" and "first" in cond["message"])

    wait_for(second_refused, timeout=30, what="the younger scaler to report the conflict")
    wait_for(
        lambda: _event_count(kube, ns, "second", "TargetOwnedByAnotherScaler") >= 2,
        timeout=30,
        what="the conflict to be re-evaluated",
    )
    assert _dep(kube, ns, app)["spec"]["replicas"] == 2, "the younger scaler wrote replicas"


def test_steady_state_sync_makes_no_api_writes(
    envtest: Any,
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
) -> None:
    """Once the fleet matches the decision, syncs read from the cache and write nothing.

    The requests are counted by the embedded server's recorder, or from kube-apiserver's
    audit log on the real control plane."""
    ns, app = namespace, "steady"
    _deploy(kube, ns, app, 1)
    kube.create(
        decided_scaler(
            decisions,
            "steady",
            ns,
            app,
            2,
            service_id="steady-" + ns,
        )
    )

    def settled() -> bool:
        st = _scaler(kube, ns, "steady").get("status", {})
        return st.get("currentReplicas") == 2 and st.get("desiredReplicas") == 2

    wait_for(settled, timeout=30, what="the scaler to settle at 2")
    writes_before = len(_manager_writes(envtest, ns))
    before = len([r for r in decisions.requests if r.service_id == "steady-" + ns])
    wait_for(
        lambda: (
            len([r for r in decisions.requests if r.service_id == "steady-" + ns]) >= before + 4
        ),
        timeout=30,
        what="four more evaluations of the steady scaler",
    )
    writes = _manager_writes(envtest, ns)[writes_before:]
    assert writes == [], f"steady-state syncs wrote to the API: {writes}"


def _manager_writes(envtest: Any, ns: str) -> list[str]:
    """Every write the manager (User-Agent llmscaler) made in ``ns`` so far, oldest first."""
    if envtest.embedded:
        return [
            f"{r.method} {r.path}"
            for r in envtest.server.faults.requests()
            if r.user_agent.startswith("llmscaler")
            and r.namespace == ns
            and r.method in {"POST", "PUT", "PATCH", "DELETE"}
        ]
    return [
        f"{e['verb']} {e['requestURI']}"
        for e in envtest.controlplane.audit_events()
        if (e.get("userAgent") or "").startswith("llmscaler")
        and (e.get("objectRef") or {}).get("namespace") == ns
        and e.get("verb") in {"create", "update", "patch", "delete", "deletecollection"}
    ]
