"""Both charts rendered with Helm's engine (text/template + sprig, see conftest.py): the output
is valid Kubernetes, wired together consistently, and reacts to values the way the docs say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from .conftest import Render

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "dist" / "chart"
MOCK_CHART = ROOT / "test" / "charts" / "vllm-mock"
CRD = ROOT / "config" / "crd" / "bases" / "autoscaling.modelsphere.dev_llmscalers.yaml"
K8S_VERSION = "1.30"
NO_SCHEMA = {"ServiceMonitor", "LLMScaler"}  # CRDs: checked on their own below


def _docs(render: Render, chart: Path, *sets: str, **kw: str) -> list[dict[str, Any]]:
    result = render(chart, sets=sets, **kw)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def _kinds(docs: list[dict[str, Any]]) -> list[str]:
    return sorted(d["kind"] for d in docs)


def _validate(docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        if doc["kind"] not in NO_SCHEMA:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_default_render_is_valid_and_consistent(helm_render: Render) -> None:
    docs = _docs(helm_render, CHART, name="llmscaler", namespace="llmscaler-system")
    _validate(docs)
    assert _kinds(docs) == sorted(
        [
            "CustomResourceDefinition",
            "Deployment",
            "Service",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
        ]
    )
    deployment = _one(docs, "Deployment")
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["replicas"] == 2
    assert (
        deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    )
    service = _one(docs, "Service")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    [container] = pod["spec"]["containers"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert container["image"] == f"4pdosc/llm-operator:{chart['appVersion']}"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True

    account = _one(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["spec"]["serviceAccountName"] == account
    manager_role = next(
        d
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("manager-role")
    )
    binding = _one(docs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == manager_role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": "llmscaler-system"}
    ]
    role, role_binding = _one(docs, "Role"), _one(docs, "RoleBinding")
    assert role["metadata"]["namespace"] == "llmscaler-system"
    assert role_binding["roleRef"]["name"] == role["metadata"]["name"]

    cli = pytest.importorskip("llmscaler_manager.cli")
    options = cli.parse_args(container["args"])
    assert options.leader_elect and options.leader_election_namespace == "llmscaler-system"


def test_crd_renders_to_the_config_crd(helm_render: Render) -> None:
    if not CRD.is_file():
        pytest.skip("config/crd/bases has no CRD yet")
    expected = [d for d in yaml.safe_load_all(CRD.read_text()) if d]
    bare = _one(_docs(helm_render, CHART, "crd.keep=false"), "CustomResourceDefinition")
    assert [bare] == expected
    kept = _one(_docs(helm_render, CHART), "CustomResourceDefinition")
    # by default `helm uninstall` must not take the CRD, and every LLMScaler, with it
    assert kept["metadata"].pop("annotations") == {"helm.sh/resource-policy": "keep"}
    assert [kept] == expected
    assert "CustomResourceDefinition" not in _kinds(_docs(helm_render, CHART, "crd.enable=false"))


def test_switches(helm_render: Render) -> None:
    no_rbac = _kinds(_docs(helm_render, CHART, "rbac.enable=false"))
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & set(no_rbac)
    single = _docs(helm_render, CHART, "leaderElection.enabled=false,manager.replicaCount=1")
    args = _one(single, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--leader-elect" not in args and "Role" not in _kinds(single)
    assert _one(single, "Deployment")["spec"]["replicas"] == 1
    mirrored = _docs(
        helm_render,
        CHART,
        "manager.image.repository=mirror.example/llm-operator,manager.image.tag=9.9.9",
    )
    container = _one(mirrored, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "mirror.example/llm-operator:9.9.9"
    no_metrics = _docs(helm_render, CHART, "metrics.enable=false")
    container = _one(no_metrics, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--metrics-bind-address=0" in container["args"] and "Service" not in _kinds(no_metrics)
    watched = _docs(helm_render, CHART, "manager.args.watchNamespace=team-a")
    container = _one(watched, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--watch-namespace=team-a" in container["args"]


def test_servicemonitor_selects_the_metrics_service(helm_render: Render) -> None:
    docs = _docs(helm_render, CHART, "serviceMonitor.enabled=true")
    monitor, service = _one(docs, "ServiceMonitor"), _one(docs, "Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


# -- vllm-mock ---------------------------------------------------------------------------------
def test_vllm_mock_default_render(helm_render: Render) -> None:
    docs = _docs(helm_render, MOCK_CHART, name="vllm-opt-125m", namespace="default")
    _validate(docs)
    deployment = _one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    [vllm] = pod["containers"]
    assert "--shutdown-timeout=30" in vllm["args"]
    pre_stop = vllm["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[:2] == ["python3", "/opt/vllm-mock/drain.py"]
    assert "--endpoint-sync-seconds=5" in pre_stop and "--drain-seconds=30" in pre_stop
    configmap = _one(docs, "ConfigMap")
    assert configmap["data"]["drain.py"] == (MOCK_CHART / "files" / "drain.py").read_text().rstrip(
        "\n"
    )
    assert "LLMScaler" not in _kinds(docs) and "ServiceMonitor" not in _kinds(docs)


def test_vllm_mock_with_scaler_leaves_replicas_alone(helm_render: Render) -> None:
    docs = _docs(
        helm_render,
        MOCK_CHART,
        "llmscaler.enabled=true,metricsMock.enabled=true,serviceMonitor.enabled=true",
        "metricsMock.kvCacheUsage=0.9",
        name="vllm-opt-125m",
        namespace="default",
    )
    _validate(docs)
    deployment = _one(docs, "Deployment")
    assert "replicas" not in deployment["spec"]
    containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert set(containers) == {"vllm", "metrics-mock"}
    values = json.loads(_one(docs, "ConfigMap")["data"]["metrics-mock-values.json"])
    assert values == {"kvCacheUsage": 0.9, "numRequestsWaiting": 0, "numRequestsRunning": 0}
    monitor = _one(docs, "ServiceMonitor")
    assert monitor["spec"]["podTargetLabels"] == ["app"]
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics-mock"
    scaler = _one(docs, "LLMScaler")
    assert scaler["spec"]["targetRef"]["name"] == deployment["metadata"]["name"]
    api = pytest.importorskip("llmscaler_runtime.api.v1alpha1")
    scaler["metadata"]["namespace"] = "default"
    api.LLMScaler.from_dict(scaler)


@pytest.mark.parametrize(
    ("sets", "ok"),
    [
        ("drainSeconds=60", False),
        ("endpointSyncSeconds=20,terminationGracePeriodSeconds=80", True),
        ("endpointSyncSeconds=21,terminationGracePeriodSeconds=80", False),
        ("shutdownTimeout=0,drainSeconds=60", True),
    ],
)
def test_vllm_mock_budget_fail(helm_render: Render, sets: str, ok: bool) -> None:
    result = helm_render(MOCK_CHART, sets=(sets,))
    assert (result.returncode == 0) is ok, result.stderr
    if not ok:
        assert "exceeds terminationGracePeriodSeconds" in result.stderr


def test_manager_pod_matches_config_manager(helm_render: Render) -> None:
    """Helm and kustomize users get the same hardened pod."""
    manifest = ROOT / "config" / "manager" / "manager.yaml"
    if not manifest.is_file():
        pytest.skip("config/manager/manager.yaml not there yet")
    config = next(
        d for d in yaml.safe_load_all(manifest.read_text()) if d and d["kind"] == "Deployment"
    )
    chart = _one(_docs(helm_render, CHART), "Deployment")
    want_pod, got_pod = config["spec"]["template"]["spec"], chart["spec"]["template"]["spec"]
    assert got_pod["securityContext"] == want_pod["securityContext"]
    assert got_pod["terminationGracePeriodSeconds"] == want_pod["terminationGracePeriodSeconds"]
    want, got = want_pod["containers"][0], got_pod["containers"][0]
    for key in ("securityContext", "resources", "livenessProbe", "readinessProbe", "volumeMounts"):
        assert got[key] == want[key], key
    assert set(want["args"]) <= set(got["args"])
    env = {e["name"]: e.get("value") for e in got["env"]}
    assert all(env.get(e["name"]) == e["value"] for e in want["env"])
    assert got_pod["volumes"] == want_pod["volumes"]
