"""`kubectl apply` of config/ against the embedded API server: the install applies (and
re-applies) cleanly, the samples are accepted with the CRD's defaults filled in, and the
CRD's CEL rules reject what the parser rejects."""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, LLMScaler, ScaleDownBehavior

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
SAMPLES_NS = "llmscaler-samples"
KUBECTL = shutil.which("kubectl")


@attrs.frozen
class Cluster:
    """A fresh API server without the CRD (installing it is under test) and its kubectl."""

    backend: str
    kubeconfig_path: str
    kubectl: str
    server: Any

    def client(self) -> Any:
        return self.server.client()


@pytest.fixture(scope="module", params=["embedded", "controlplane"])
def env(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    # No CRDs preloaded: installing the CRD is part of what is under test.
    if request.param == "controlplane":
        from llmscaler_runtime.envtest.controlplane import ControlPlane, MissingBinaries

        try:
            plane = ControlPlane()
        except MissingBinaries as exc:
            pytest.skip(str(exc))
        with plane:
            yield Cluster(
                "controlplane", plane.kubeconfig_path, str(plane.assets["kubectl"]), plane
            )
        return
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH")
    from llmscaler_runtime.envtest import Environment

    with Environment() as environment:
        yield Cluster("embedded", environment.kubeconfig_path, KUBECTL, environment)


def kubectl(env: Any, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [env.kubectl, "--kubeconfig", env.kubeconfig_path, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def kubectl_ok(env: Any, *args: str) -> str:
    proc = kubectl(env, *args)
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed:\n{proc.stderr}"
    return proc.stdout


def ensure_namespace(env: Any, name: str) -> None:
    # `kubectl apply` rather than `kubectl create namespace`: the latter sends protobuf,
    # which the embedded server does not speak.
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    proc = kubectl(env, "apply", "-f", "-", stdin=manifest)
    assert proc.returncode == 0, proc.stderr


def _built(directory: str) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "kustomize", str(CONFIG / directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_default_install_applies_and_reapplies(env: Any) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "default"))
    client = env.client()
    for doc in _built("default"):
        md = doc["metadata"]
        got = client.get(doc["apiVersion"], doc["kind"], md["name"], md.get("namespace"))
        assert got["metadata"]["name"] == md["name"]
    second = kubectl_ok(env, "apply", "-k", str(CONFIG / "default"))
    lines = [line for line in second.splitlines() if line.strip()]
    assert lines and all(line.endswith("unchanged") for line in lines), second


def test_samples_are_accepted_and_defaulted(env: Any) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "crd"))
    ensure_namespace(env, SAMPLES_NS)
    kubectl_ok(env, "apply", "-n", SAMPLES_NS, "-k", str(CONFIG / "samples"))
    client = env.client()
    prom = client.get(API_VERSION, KIND, "llmscaler-sample", SAMPLES_NS)
    scaler = LLMScaler.from_dict(prom)
    assert scaler.namespace == SAMPLES_NS and scaler.uid and scaler.generation >= 1
    # Filled in by the CRD's defaults, not written in the sample:
    assert prom["spec"]["metricProvider"] == "Prometheus"
    custom = client.get(API_VERSION, KIND, "llmscaler-custom-provider-sample", SAMPLES_NS)
    assert custom["spec"]["syncPeriodSeconds"] == 15
    assert custom["spec"]["retryPeriodSeconds"] == 10
    assert custom["spec"]["scaleDown"]["behavior"] == ScaleDownBehavior.CACHE_AWARE.value
    assert LLMScaler.from_dict(custom).spec.custom_provider is not None


def _bad(name: str, **spec: Any) -> str:
    base: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
        "serverAddress": "http://prometheus:9090",
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [{"name": "kv", "query": "avg(x)", "target": "0.8"}],
    }
    base.update(spec)
    obj = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": base}
    return yaml.safe_dump(obj)


_SECRET_KEY = {"name": "auth", "key": "token"}


def _window(**over: Any) -> dict[str, Any]:
    base = {"name": "w", "timeZone": "Europe/Paris", "start": "08:00", "end": "18:00"}
    return {**base, "minReplicas": 2, **over}


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("min-above-max", {"minReplicas": 4}, "minReplicas must be less than or equal"),
        (
            "percent-target",
            {"metrics": [{"query": "q", "target": "80%"}]},
            "a % suffix is not accepted",
        ),
        ("no-metrics", {"metrics": []}, "metrics must list at least one metric"),
        ("custom-no-provider", {"metricProvider": "Custom"}, "customProvider is required"),
        (
            "header-value-and-value-from",
            {
                "serverHeadersFrom": [
                    {"name": "A", "value": "x", "valueFrom": {"secretKeyRef": _SECRET_KEY}}
                ]
            },
            "exactly one of value and valueFrom must be set",
        ),
        (
            "header-without-value",
            {"serverHeadersFrom": [{"name": "A"}]},
            "exactly one of value and valueFrom must be set",
        ),
        (
            "header-in-both-lists",
            {"serverHeaders": {"A": "x"}, "serverHeadersFrom": [{"name": "A", "value": "two"}]},
            "a header must not be named in both serverHeaders and serverHeadersFrom",
        ),
        (
            "fallback-above-max",
            {"fallback": {"failureThreshold": 3, "replicas": 4}},
            "spec.fallback.replicas: Invalid value: fallback.replicas must lie within",
        ),
        (
            "fallback-below-min",
            {"fallback": {"failureThreshold": 3, "replicas": 0}},
            "fallback.replicas must lie within [minReplicas, maxReplicas]",
        ),
        (
            "fallback-threshold-zero",
            {"fallback": {"failureThreshold": 0, "replicas": 2}},
            "spec.fallback.failureThreshold in body should be greater than or equal to 1",
        ),
        (
            "fallback-unknown-behavior",
            {"fallback": {"failureThreshold": 1, "replicas": 2, "behavior": "CurrentReplicas"}},
            'supported values: "Static", "CurrentReplicasIfHigher"',
        ),
        (
            "schedule-end-before-start",
            {"schedules": [_window(start="22:00", end="06:00")]},
            "spec.schedules[0].end: Invalid value: end must be later than start",
        ),
        (
            "schedule-unknown-zone",
            {"schedules": [_window(timeZone="Mars/Olympus")]},
            'spec.schedules[0].timeZone: Invalid value: "string": unknown time zone Mars/Olympus '
            "evaluating rule: timeZone must be an IANA time zone name",
        ),
        (
            "schedule-directory-zone",
            {"schedules": [_window(timeZone="Europe")]},
            'spec.schedules[0].timeZone: Invalid value: "string": is a directory evaluating rule: '
            "timeZone must be an IANA time zone name",
        ),
        (
            "schedule-local-zone",
            {"schedules": [_window(timeZone="Local")]},
            'spec.schedules[0].timeZone: Invalid value: "Local": timeZone must be an IANA',
        ),
        (
            "schedule-offset-zone",
            {"schedules": [_window(timeZone="+05:00")]},
            "spec.schedules[0].timeZone in body should match",
        ),
        (
            "schedule-without-bounds",
            {"schedules": [{k: v for k, v in _window().items() if k != "minReplicas"}]},
            "a schedule must set minReplicas, maxReplicas or both",
        ),
        (
            "schedule-min-above-max",
            {"schedules": [_window(minReplicas=4)]},
            "each schedule must keep minReplicas <= maxReplicas",
        ),
        (
            "schedule-unknown-day",
            {"schedules": [_window(days=["Monday"])]},
            'spec.schedules[0].days[0]: Unsupported value: "Monday"',
        ),
        (
            "tolerance-one",
            {"scaleUp": {"tolerance": "1"}},
            "tolerance must be a plain decimal number from 0 up to, but not including, 1",
        ),
        (
            "tolerance-percent",
            {"scaleDown": {"tolerance": "10%"}},
            "tolerance must be a plain decimal number from 0 up to, but not including, 1",
        ),
        (
            "activation-threshold-negative",
            {"metrics": [{"query": "q", "target": "1", "activationThreshold": "-1"}]},
            "activationThreshold must be a plain decimal number of at least 0",
        ),
    ],
)
def test_cel_rules_reject_bad_scalers(
    env: Any, name: str, spec: dict[str, Any], message: str
) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "crd"))
    ensure_namespace(env, SAMPLES_NS)
    proc = kubectl(env, "apply", "-n", SAMPLES_NS, "-f", "-", stdin=_bad(name, **spec))
    assert proc.returncode != 0, f"{name} was accepted"
    assert message in proc.stderr, proc.stderr


def test_kubectl_shows_printer_columns_and_explains_fields(env: Any) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "crd"))
    ensure_namespace(env, SAMPLES_NS)
    kubectl_ok(env, "apply", "-n", SAMPLES_NS, "-k", str(CONFIG / "samples"))
    table = kubectl_ok(env, "get", "llms", "-n", SAMPLES_NS, "-o", "wide")
    header = table.splitlines()[0].split()
    assert header == [
        "NAME",
        "TARGET",
        "MINREPLICAS",
        "MAXREPLICAS",
        "CURRENTREPLICAS",
        "DESIREDREPLICAS",
        "LASTSCALE",
        "AGE",
    ]
    row = next(line.split() for line in table.splitlines() if line.startswith("llmscaler-sample"))
    assert row[1:4] == ["vllm-opt-125m", "1", "5"]
    # A real API server publishes a new CRD's OpenAPI a moment after it is Established.
    deadline = time.monotonic() + 30
    while (proc := kubectl(env, "explain", "llmscaler.spec.scaleDown.maxStepReplicas")).returncode:
        assert time.monotonic() < deadline, proc.stderr
        time.sleep(0.2)
    assert "0 means no limit" in proc.stdout
    advisory = kubectl_ok(env, "explain", "llmscaler.spec.advisory")
    assert "nothing is written to the target" in " ".join(advisory.split()), advisory
    tolerance = kubectl_ok(env, "explain", "llmscaler.spec.scaleUp.tolerance")
    assert "KEP-4951" in tolerance, tolerance
    threshold = kubectl_ok(env, "explain", "llmscaler.spec.metrics.activationThreshold")
    assert "KEDA's activationThreshold" in " ".join(threshold.split()), threshold


# --- RBAC: every call the real manager makes is granted by config/rbac ------------------------

MANAGER_NS = "llmscaler-system"
WORKLOAD_NS = "rbac-check"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until(
    what: str, check: Callable[[], bool], timeout: float, proc: subprocess.Popen[bytes], logs: Path
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if check():
            return
        time.sleep(0.1)
    if proc.poll() is not None:
        pytest.fail(
            f"manager exited ({proc.returncode}) before {what}:\n{logs.read_text()[-4000:]}"
        )
    pytest.fail(f"timed out waiting for {what}; manager log:\n{logs.read_text()[-4000:]}")


def _rule_allows(rule: dict[str, Any], group: str, resource: str, verb: str) -> bool:
    return (
        group in rule["apiGroups"]
        and resource in rule["resources"]
        and (verb in rule["verbs"] or "*" in rule["verbs"])
    )


def _workload(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": WORKLOAD_NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:latest"}]},
            },
        },
    }


def test_every_api_call_of_the_manager_is_allowed_by_rbac(tmp_path: Path) -> None:
    """Run the real manager through a scale-up and a cache-aware scale-down, record every
    request it makes, and check each one verb by verb against the built RBAC objects.

    Embedded only: it reads the embedded server's request recorder. On the real control plane
    the RBAC authorizer itself judges the chart's ServiceAccount (test_chart_controlplane.py)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH")
    from llmscaler_runtime.envtest import Environment
    from llmscaler_runtime.testkit.decision_server import DecisionServer

    built = _built("default")
    # every ClusterRole bound to the manager: its own role and the Secret reader
    bound = {
        d["roleRef"]["name"]
        for d in built
        if d["kind"] == "ClusterRoleBinding"
        and {"kind": "ServiceAccount", "name": "llmscaler-controller-manager"}.items()
        <= d["subjects"][0].items()
    }
    assert bound == {"llmscaler-manager-role", "llmscaler-secret-reader-role"}, bound
    cluster_rules = {
        "rules": [
            rule
            for d in built
            if d["kind"] == "ClusterRole" and d["metadata"]["name"] in bound
            for rule in d["rules"]
        ]
    }
    for verb in ("list", "watch"):  # Secrets are only ever read by name
        assert not any(_rule_allows(r, "", "secrets", verb) for r in cluster_rules["rules"])
    ns_rules = next(d for d in built if d["metadata"]["name"] == "llmscaler-leader-election-role")
    assert ns_rules["metadata"]["namespace"] == MANAGER_NS

    with (
        Environment(simulate_workloads=True, pod_startup_seconds=0.2) as env,
        DecisionServer() as decisions,
    ):
        assert KUBECTL is not None
        kubectl_ok(
            Cluster("embedded", env.kubeconfig_path, KUBECTL, env),
            "apply",
            "-k",
            str(CONFIG / "default"),
        )
        client = env.client()
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOAD_NS}})
        client.create(_workload("vllm", 1))
        client.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "decision-auth", "namespace": WORKLOAD_NS},
                "data": {"token": base64.b64encode(b"Bearer rbac-walk").decode()},
            }
        )
        decisions.set_decision("vllm-svc", 3, namespace=WORKLOAD_NS)
        client.create(
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "metadata": {"name": "vllm", "namespace": WORKLOAD_NS},
                "spec": {
                    "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
                    "metricProvider": "Custom",
                    "serverAddress": decisions.url,
                    "customProvider": {"serviceId": "vllm-svc", "namespace": WORKLOAD_NS},
                    "serverHeadersFrom": [
                        {
                            "name": "Authorization",
                            "valueFrom": {
                                "secretKeyRef": {"name": "decision-auth", "key": "token"}
                            },
                        }
                    ],
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "syncPeriodSeconds": 1,
                    "retryPeriodSeconds": 1,
                },
            }
        )
        storage = env.server.storage
        faults = env.server.faults
        faults.clear_requests()  # from here on, only the manager talks to the server

        def replicas() -> tuple[int, int]:
            dep = storage.get("apps/v1", "Deployment", WORKLOAD_NS, "vllm")
            return dep["spec"].get("replicas", 0), dep.get("status", {}).get("readyReplicas", 0)

        logs = tmp_path / "manager.log"
        with logs.open("w") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "llmscaler_manager",
                    "--kubeconfig",
                    env.kubeconfig_path,
                    "--leader-elect",
                    "--leader-election-namespace",
                    MANAGER_NS,
                    "--metrics-bind-address",
                    "0",
                    "--health-probe-bind-address",
                    f"127.0.0.1:{_free_port()}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_until("scale-up to 3 ready", lambda: replicas() == (3, 3), 60, proc, logs)
            decisions.set_decision("vllm-svc", 1, namespace=WORKLOAD_NS)
            _wait_until("scale-down to 1", lambda: replicas()[0] == 1, 60, proc, logs)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

        seen = decisions.requests
        calls = {
            (
                r.verb,
                r.group,
                r.resource + (f"/{r.subresource}" if r.subresource else ""),
                r.namespace,
            )
            for r in faults.requests()
            if r.resource  # discovery and /version are open to every authenticated user
        }

    denied = sorted(
        call
        for call in calls
        if not any(_rule_allows(rule, *call[1:3], call[0]) for rule in cluster_rules["rules"])
        and not (
            call[3] == MANAGER_NS
            and any(_rule_allows(rule, *call[1:3], call[0]) for rule in ns_rules["rules"])
        )
    )
    assert denied == [], f"calls the RBAC objects do not grant: {denied}"
    used = {(verb, resource) for verb, _, resource, _ in calls}
    for needed in [
        # (watches are recorded when they end, which may be after this point; any that
        # were recorded are checked above like every other call)
        ("list", "llmscalers"),
        ("patch", "deployments"),
        ("patch", "pods"),
        ("create", "events"),
        ("create", "leases"),
        ("get", "secrets"),  # the serverHeadersFrom Secret, by name
    ]:
        assert needed in used, f"{needed} never happened, the check proved nothing: {sorted(used)}"
    assert {("patch", "llmscalers/status"), ("update", "llmscalers/status")} & used
    assert {verb for verb, resource in used if resource == "secrets"} == {"get"}
    assert {r.headers.get("authorization") for r in seen} == {"Bearer rbac-walk"}, seen
