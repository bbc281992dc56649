"""Both charts rendered and linted by the real helm (see helm.py): the output is valid
Kubernetes for the control plane's version, wired together consistently, and reacts to values
the way the docs say."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from llmscaler_runtime.testkit import VllmMetricsExporter

from .helm import Helm

pytestmark = pytest.mark.helm

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "dist" / "chart"
MOCK_CHART = ROOT / "test" / "charts" / "vllm-mock"
CRD = ROOT / "config" / "crd" / "bases" / "autoscaling.modelsphere.dev_llmscalers.yaml"
#: The control plane's minor, which is also the built helm's offline Kubernetes version.
K8S_VERSION = "1.36"
NO_SCHEMA = {"ServiceMonitor", "LLMScaler"}  # CRDs: checked on their own below

#: Value sets a user is likely to choose; each must lint cleanly with --strict.
CHART_VALUE_SETS = [
    (),
    ("serviceMonitor.enabled=true,crd.enable=false",),
    ("rbac.enable=false,serviceAccount.create=false",),
    ("leaderElection.enabled=false,manager.replicaCount=1,metrics.enable=false",),
    ("manager.args.watchNamespace=team-a,crd.keep=false,rbac.userRoles=false",),
]
MOCK_VALUE_SETS = [
    (),
    ("llmscaler.enabled=true,metricsMock.enabled=true,serviceMonitor.enabled=true",),
]


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


def _container(docs: list[dict[str, Any]], name: str | None = None) -> dict[str, Any]:
    containers = _one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    if name is None:
        [container] = containers
        return container  # type: ignore[no-any-return]
    return next(c for c in containers if c["name"] == name)


# -- helm lint --------------------------------------------------------------------------------
@pytest.mark.parametrize("sets", CHART_VALUE_SETS, ids=lambda s: ",".join(s) or "defaults")
def test_chart_lints_strict(helm: Helm, sets: tuple[str, ...]) -> None:
    result = helm.lint(CHART, sets=sets)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("sets", MOCK_VALUE_SETS, ids=lambda s: ",".join(s) or "defaults")
def test_vllm_mock_lints_strict(helm: Helm, sets: tuple[str, ...]) -> None:
    result = helm.lint(MOCK_CHART, sets=sets)
    assert result.returncode == 0, result.stdout + result.stderr


def test_strict_lint_can_fail(helm: Helm, tmp_path: Path) -> None:
    """--strict matters: a warning (here an invalid object name) fails the lint only with it.

    A ``.Values`` key that does not exist is not a lint warning, even with --strict (helm
    3.21 renders it as empty); test_chart.py's static scan of every branch covers that.
    """
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "broken.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\n"
    )
    assert helm.lint(chart, strict=False).returncode == 0
    strict = helm.lint(chart)
    assert strict.returncode != 0 and "Not_A_Name" in strict.stdout, strict.stdout


# -- dist/chart -------------------------------------------------------------------------------
def test_default_render_is_valid_and_consistent(helm: Helm) -> None:
    docs = helm.render(CHART, name="llmscaler", namespace="llmscaler-system")
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
            "ClusterRole",
            "ClusterRoleBinding",
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
    labelled = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
    assert {d["metadata"]["labels"]["app.kubernetes.io/managed-by"] for d in labelled} == {"Helm"}

    account = _one(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["spec"]["serviceAccountName"] == account
    manager_role = next(
        d
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("manager-role")
    )
    bindings = {d["roleRef"]["name"]: d for d in docs if d["kind"] == "ClusterRoleBinding"}
    secret_role = next(
        d
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("secret-reader-role")
    )
    assert secret_role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    assert set(bindings) == {manager_role["metadata"]["name"], secret_role["metadata"]["name"]}
    for binding in bindings.values():
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": "llmscaler-system"}
        ]
    role, role_binding = _one(docs, "Role"), _one(docs, "RoleBinding")
    assert role["metadata"]["namespace"] == "llmscaler-system"
    assert role_binding["roleRef"]["name"] == role["metadata"]["name"]

    cli = pytest.importorskip("llmscaler_manager.cli")
    options = cli.parse_args(container["args"])
    assert options.leader_elect and options.leader_election_namespace == "llmscaler-system"


def test_manager_accepts_every_flag_the_chart_passes(helm: Helm) -> None:
    cli = pytest.importorskip("llmscaler_manager.cli")
    docs = helm.render(
        CHART,
        name="llmscaler",
        namespace="llmscaler-system",
        sets=["manager.args.watchNamespace=team-a,manager.extraArgs={--metrics-timeout=7}"],
    )
    container = _container(docs)
    args = container["args"]
    assert "--leader-elect" in args
    assert "--health-probe-bind-address=:8081" in args
    assert "--metrics-bind-address=:8080" in args
    options = cli.parse_args(args)
    assert options.leader_elect is True
    assert options.watch_namespace == "team-a"
    assert options.leader_election_namespace == "llmscaler-system"
    assert options.metrics_timeout == 7.0, "extraArgs come last and win"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_crd_renders_to_the_config_crd(helm: Helm) -> None:
    if not CRD.is_file():
        pytest.skip("config/crd/bases has no CRD yet")
    expected = [d for d in yaml.safe_load_all(CRD.read_text()) if d]
    bare = _one(helm.render(CHART, sets=["crd.keep=false"]), "CustomResourceDefinition")
    assert [bare] == expected
    kept = _one(helm.render(CHART), "CustomResourceDefinition")
    # by default `helm uninstall` must not take the CRD, and every LLMScaler, with it
    assert kept["metadata"].pop("annotations") == {"helm.sh/resource-policy": "keep"}
    assert [kept] == expected
    assert "CustomResourceDefinition" not in _kinds(helm.render(CHART, sets=["crd.enable=false"]))


def test_switches(helm: Helm) -> None:
    no_rbac = _kinds(helm.render(CHART, sets=["rbac.enable=false"]))
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & set(no_rbac)
    no_user_roles = helm.render(CHART, sets=["rbac.userRoles=false"])
    assert [d["metadata"]["name"] for d in no_user_roles if d["kind"] == "ClusterRole"] == [
        "rel-llmscaler-manager-role",
        "rel-llmscaler-secret-reader-role",
    ]
    no_secrets = helm.render(CHART, sets=["rbac.secretHeaders=false"])
    assert not any("secret" in d["metadata"]["name"] for d in no_secrets), _kinds(no_secrets)
    assert [d["kind"] for d in no_secrets].count("ClusterRoleBinding") == 1
    restricted = helm.render(
        CHART, sets=["manager.args.allowedServerAddresses=https\\,*.svc.cluster.local"]
    )
    args = _container(restricted)["args"]
    assert "--allowed-server-addresses=https,*.svc.cluster.local" in args, args
    cli = pytest.importorskip("llmscaler_manager.cli")
    assert cli.parse_args(args).allowed_server_addresses == ("https", "*.svc.cluster.local")
    assert not any(a.startswith("--allowed") for a in _container(helm.render(CHART))["args"])
    assert "--advisory" not in _container(helm.render(CHART))["args"]
    advisory = _container(helm.render(CHART, sets=["manager.args.advisory=true"]))["args"]
    assert "--advisory" in advisory and cli.parse_args(advisory).advisory is True
    single = helm.render(CHART, sets=["leaderElection.enabled=false,manager.replicaCount=1"])
    assert "--leader-elect" not in _container(single)["args"] and "Role" not in _kinds(single)
    assert _one(single, "Deployment")["spec"]["replicas"] == 1
    mirrored = helm.render(
        CHART, sets=["manager.image.repository=mirror.example/llm-operator,manager.image.tag=9.9.9"]
    )
    assert _container(mirrored)["image"] == "mirror.example/llm-operator:9.9.9"
    no_metrics = helm.render(CHART, sets=["metrics.enable=false"])
    assert "--metrics-bind-address=0" in _container(no_metrics)["args"]
    assert "Service" not in _kinds(no_metrics)
    watched = helm.render(CHART, sets=["manager.args.watchNamespace=team-a"])
    assert "--watch-namespace=team-a" in _container(watched)["args"]
    named = helm.render(CHART, sets=["serviceAccount.create=false,serviceAccount.name=ops"])
    assert "ServiceAccount" not in _kinds(named)
    assert _one(named, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "ops"
    assert {d["subjects"][0]["name"] for d in named if d["kind"] == "ClusterRoleBinding"} == {"ops"}


def test_servicemonitor_selects_the_metrics_service(helm: Helm) -> None:
    docs = helm.render(CHART, sets=["serviceMonitor.enabled=true"])
    monitor, service = _one(docs, "ServiceMonitor"), _one(docs, "Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


def test_manager_pod_matches_config_manager(helm: Helm) -> None:
    """Helm and kustomize users get the same hardened pod."""
    manifest = ROOT / "config" / "manager" / "manager.yaml"
    if not manifest.is_file():
        pytest.skip("config/manager/manager.yaml not there yet")
    config = next(
        d for d in yaml.safe_load_all(manifest.read_text()) if d and d["kind"] == "Deployment"
    )
    chart = _one(helm.render(CHART), "Deployment")
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


# -- vllm-mock --------------------------------------------------------------------------------
def test_vllm_mock_default_render(helm: Helm) -> None:
    docs = helm.render(MOCK_CHART, name="vllm-opt-125m", namespace="default")
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


def test_vllm_mock_with_scaler_leaves_replicas_alone(helm: Helm) -> None:
    docs = helm.render(
        MOCK_CHART,
        name="vllm-opt-125m",
        namespace="default",
        sets=[
            "llmscaler.enabled=true,metricsMock.enabled=true,serviceMonitor.enabled=true",
            "metricsMock.kvCacheUsage=0.9",
        ],
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


def test_vllm_mock_llmscaler_is_accepted_by_the_operator(helm: Helm) -> None:
    docs = helm.render(
        MOCK_CHART, name="vllm-opt-125m", namespace="default", sets=["llmscaler.enabled=true"]
    )
    scaler, deployment = _one(docs, "LLMScaler"), _one(docs, "Deployment")
    spec = scaler["spec"]
    assert spec["targetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert spec["metrics"][0]["query"] == (
        'avg(avg_over_time(vllm:kv_cache_usage_perc{namespace="default", app="vllm-opt-125m"}[2m]))'
    )
    assert spec["scaleDown"]["deletionCostQuery"] == (
        'vllm:kv_cache_usage_perc{namespace="default", app="vllm-opt-125m"} * 100'
    )
    api = pytest.importorskip("llmscaler_runtime.api.v1alpha1")
    scaler["metadata"]["namespace"] = "default"
    api.LLMScaler.from_dict(scaler)  # raises SpecError listing every problem


def test_vllm_mock_prestop_command_drains_an_idle_pod(helm: Helm) -> None:
    """The preStop command exactly as helm renders it, run against an idle pod's metrics."""
    docs = helm.render(MOCK_CHART, name="r", sets=["endpointSyncSeconds=0,drainSeconds=5"])
    command = _container(docs, "vllm")["lifecycle"]["preStop"]["exec"]["command"]
    assert command[:2] == ["python3", "/opt/vllm-mock/drain.py"]
    with VllmMetricsExporter() as pod:
        pod.set_pod("ns", "r", "r-0", running=0, waiting=0)
        args = [a for a in command[2:] if not a.startswith("--url=")] + [f"--url={pod.url}"]
        run = subprocess.run(
            [sys.executable, str(MOCK_CHART / "files" / "drain.py"), *args],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert run.returncode == 0 and "idle" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize(
    ("sets", "ok"),
    [
        ("drainSeconds=60", False),
        ("endpointSyncSeconds=20,terminationGracePeriodSeconds=80", True),
        ("endpointSyncSeconds=21,terminationGracePeriodSeconds=80", False),
        ("shutdownTimeout=0,drainSeconds=60", True),
    ],
)
def test_vllm_mock_budget_fail(helm: Helm, sets: str, ok: bool) -> None:
    """The template's `fail` refuses an overcommitted drain budget.

    Only rendering enforces it: `helm lint` runs templates in lint mode, where `fail` is
    reported as [INFO] and the lint still passes, so the check goes through `helm template`.
    """
    result = helm.template(MOCK_CHART, sets=[sets])
    assert (result.returncode == 0) is ok, result.stderr
    if not ok:
        assert "exceeds terminationGracePeriodSeconds" in result.stderr
