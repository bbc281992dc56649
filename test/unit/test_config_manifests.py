"""config/: every manifest is schema-valid, kustomize builds the install, the manager runs
locked down, RBAC is exactly least privilege, and the samples are accepted LLMScalers."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pytest
import yaml
from celpy.adapter import json_to_cel

from llmscaler_runtime.api.v1alpha1 import (
    LLMScaler,
    MetricProvider,
    ScaleDownBehavior,
)
from llmscaler_runtime.api.v1alpha1.crd import crd_manifest, iter_rules

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
K8S_VERSION = "1.32"
NAMESPACE = "llmscaler-system"
IMAGE = "4pdosc/llm-operator:0.1.0"
#: Kinds defined by CRDs, which kubernetes-validate has no schema for; checked separately.
CRD_KINDS = {
    "LLMScaler": "checked by test_samples_*",
    "ServiceMonitor": "Prometheus Operator CRD",
    "PrometheusRule": "Prometheus Operator CRD; checked with promtool by test_prometheus_rules",
}


def _manifest_docs() -> Iterator[tuple[str, int, dict[str, Any]]]:
    for path in sorted(CONFIG.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc is not None:
                yield str(path.relative_to(CONFIG)), i, doc


MANIFESTS = list(_manifest_docs())


def test_config_has_the_kubebuilder_layout() -> None:
    for sub in ("crd", "rbac", "manager", "default", "prometheus", "network-policy", "samples"):
        assert (CONFIG / sub / "kustomization.yaml").is_file(), sub


@pytest.mark.parametrize(
    ("path", "index", "doc"), MANIFESTS, ids=[f"{p}#{i}" for p, i, _ in MANIFESTS]
)
def test_manifest_validates_against_kubernetes_schemas(
    path: str, index: int, doc: dict[str, Any]
) -> None:
    kind = doc.get("kind", "")
    if kind in CRD_KINDS:
        pytest.skip(f"{kind}: no schema in kubernetes-validate ({CRD_KINDS[kind]})")
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    "kustomization", sorted(CONFIG.rglob("kustomization.yaml")), ids=lambda p: p.parent.name
)
def test_kustomization_resources_exist(kustomization: Path) -> None:
    data = yaml.safe_load(kustomization.read_text())
    assert data["kind"] == "Kustomization"
    for res in data["resources"]:
        assert (kustomization.parent / res).exists(), f"{kustomization}: {res} missing"


# --- the kustomize build ----------------------------------------------------------------------


@cache
def _build(directory: str) -> tuple[dict[str, Any], ...]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run(
        [kubectl, "kustomize", str(CONFIG / directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def _one(docs: tuple[dict[str, Any], ...], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def test_default_builds_the_whole_install() -> None:
    docs = _build("default")
    got = {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in docs}
    assert got == {
        ("Namespace", NAMESPACE, None),
        ("CustomResourceDefinition", "llmscalers.autoscaling.modelsphere.dev", None),
        ("ServiceAccount", "llmscaler-controller-manager", NAMESPACE),
        ("ClusterRole", "llmscaler-manager-role", None),
        ("ClusterRoleBinding", "llmscaler-manager-rolebinding", None),
        ("ClusterRole", "llmscaler-secret-reader-role", None),
        ("ClusterRoleBinding", "llmscaler-secret-reader-rolebinding", None),
        ("Role", "llmscaler-leader-election-role", NAMESPACE),
        ("RoleBinding", "llmscaler-leader-election-rolebinding", NAMESPACE),
        ("ClusterRole", "llmscaler-admin-role", None),
        ("ClusterRole", "llmscaler-editor-role", None),
        ("ClusterRole", "llmscaler-viewer-role", None),
        ("Service", "llmscaler-controller-manager-metrics-service", NAMESPACE),
        ("Deployment", "llmscaler-controller-manager", NAMESPACE),
    }
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_built_crd_is_the_generated_one() -> None:
    crd = _one(
        _build("default"), "CustomResourceDefinition", "llmscalers.autoscaling.modelsphere.dev"
    )
    assert crd["spec"] == crd_manifest()["spec"]


def test_bindings_point_at_the_built_roles_and_service_account() -> None:
    docs = _build("default")
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        for binding in (d for d in docs if d["kind"] == kind):
            _one(docs, role_kind, binding["roleRef"]["name"])
            assert binding["subjects"] == [
                {
                    "kind": "ServiceAccount",
                    "name": "llmscaler-controller-manager",
                    "namespace": NAMESPACE,
                }
            ]
    deployment = _one(docs, "Deployment", "llmscaler-controller-manager")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == (
        "llmscaler-controller-manager"
    )


def _grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _expand(groups: str, resources: list[str], verbs: list[str]) -> set[tuple[str, str, str]]:
    return {(groups, r, v) for r in resources for v in verbs}


def test_manager_cluster_role_is_exactly_least_privilege() -> None:
    role = _one(_build("default"), "ClusterRole", "llmscaler-manager-role")
    watch = ["get", "list", "watch"]
    expected = (
        _expand("autoscaling.modelsphere.dev", ["llmscalers"], watch)
        | _expand("autoscaling.modelsphere.dev", ["llmscalers/status"], ["get", "update", "patch"])
        | _expand("apps", ["deployments", "statefulsets"], [*watch, "patch"])
        | _expand("leaderworkerset.x-k8s.io", ["leaderworkersets"], [*watch, "patch"])
        | _expand("", ["pods"], [*watch, "patch"])
        | _expand("", ["events"], ["create", "patch"])
        | _expand("events.k8s.io", ["events"], ["create", "patch"])
    )
    assert _grants(role) == expected


def test_secrets_are_only_ever_read_by_name() -> None:
    """serverHeadersFrom needs get on Secrets; nothing in the install grants list or watch
    (which would copy every Secret of the cluster into the manager) or any write."""
    docs = _build("default")
    role = _one(docs, "ClusterRole", "llmscaler-secret-reader-role")
    assert _grants(role) == {("", "secrets", "get")}
    for other in (d for d in docs if d["kind"] in ("ClusterRole", "Role") and d is not role):
        assert not any(r in ("secrets", "*") for _, r, _ in _grants(other)), other["metadata"]


def test_leases_are_only_granted_in_the_manager_namespace() -> None:
    docs = _build("default")
    role = _one(docs, "Role", "llmscaler-leader-election-role")
    assert role["metadata"]["namespace"] == NAMESPACE
    lease_verbs = ["get", "list", "watch", "create", "update", "patch", "delete"]
    assert _grants(role) == (
        _expand("coordination.k8s.io", ["leases"], lease_verbs)
        | _expand("", ["events"], ["create", "patch"])
    )
    for cluster_role in (d for d in docs if d["kind"] == "ClusterRole"):
        assert not any(g == "coordination.k8s.io" for g, _, _ in _grants(cluster_role))


def test_user_roles_aggregate_into_the_builtin_roles() -> None:
    docs = _build("default")
    cases = {
        "llmscaler-admin-role": ("admin", {"*"}),
        "llmscaler-editor-role": (
            "edit",
            {"create", "delete", "get", "list", "patch", "update", "watch"},
        ),
        "llmscaler-viewer-role": ("view", {"get", "list", "watch"}),
    }
    for name, (builtin, verbs) in cases.items():
        role = _one(docs, "ClusterRole", name)
        labels = role["metadata"]["labels"]
        assert labels[f"rbac.authorization.k8s.io/aggregate-to-{builtin}"] == "true"
        grants = _grants(role)
        assert {v for g, r, v in grants if r == "llmscalers"} == verbs
        assert {v for g, r, v in grants if r == "llmscalers/status"} == {"get"}
        assert {g for g, _, _ in grants} == {"autoscaling.modelsphere.dev"}


def _manager_pod() -> dict[str, Any]:
    deployment = _one(_build("default"), "Deployment", "llmscaler-controller-manager")
    pod: dict[str, Any] = deployment["spec"]["template"]
    return pod


def test_manager_container_runs_the_published_image_with_probes_and_limits() -> None:
    (container,) = _manager_pod()["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["args"] == [
        "--leader-elect",
        "--health-probe-bind-address=:8081",
        "--metrics-bind-address=:8080",
    ]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}


def test_manager_security_context_is_restrictive() -> None:
    pod = _manager_pod()["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 65532
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "privileged" not in sc
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"/tmp"}, "the only writable path is an emptyDir /tmp"
    namespace = _one(_build("default"), "Namespace", NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_metrics_service_monitor_and_network_policy_agree_on_the_port() -> None:
    docs = _build("default")
    service = _one(docs, "Service", "llmscaler-controller-manager-metrics-service")
    pod_labels = _manager_pod()["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (port,) = service["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("metrics", 8080, "metrics")

    monitor = _one(_build("prometheus"), "ServiceMonitor", "controller-manager-metrics-monitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    service_labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service_labels.items()

    (policy,) = _build("network-policy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}]
    assert rule["ports"] == [{"port": 8080, "protocol": "TCP"}]


# --- samples ----------------------------------------------------------------------------------

SAMPLES = CONFIG / "samples"
_CEL = celpy.Environment()


def _cel_violations(obj: dict[str, Any]) -> list[str]:
    """Evaluate every CEL rule of the CRD on ``obj`` the way the API server would."""
    schema = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    failures = []
    for path, entry in iter_rules(schema):
        program = _CEL.program(_CEL.compile(entry["rule"]))
        for value in _select(obj, path.lstrip(".").split(".")):
            if not bool(program.evaluate({"self": json_to_cel(value)})):
                failures.append(f"{path}: {entry['message']}")
    return failures


def _select(value: Any, parts: list[str]) -> Iterator[Any]:
    if not parts:
        yield value
        return
    head, rest = parts[0], parts[1:]
    many = head.endswith("[]")
    key = head.removesuffix("[]")
    if not isinstance(value, dict) or key not in value:
        return
    if many:
        for item in value[key]:
            yield from _select(item, rest)
    else:
        yield from _select(value[key], rest)


def test_samples_kustomization_lists_both_samples() -> None:
    docs = _build("samples")
    assert sorted(d["metadata"]["name"] for d in docs) == [
        "llmscaler-custom-provider-sample",
        "llmscaler-sample",
    ]


def test_secret_headers_sample_is_accepted_and_refers_to_its_secret() -> None:
    path = SAMPLES / "autoscaling_v1alpha1_llmscaler_secretheaders.yaml"
    secret, obj = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert secret["kind"] == "Secret" and obj["kind"] == "LLMScaler"
    kubernetes_validate.validate(secret, K8S_VERSION, strict=True)
    assert _cel_violations(obj) == []
    spec = LLMScaler.from_dict(obj).spec
    assert not spec.server_headers, "the point of the sample: no credential in the scaler"
    (auth,) = spec.secret_headers
    assert auth.value_from is not None
    ref = auth.value_from.secret_key_ref
    assert ref.name == secret["metadata"]["name"] and ref.key in secret["stringData"]


def test_samples_prometheus_sample_is_accepted_and_matches_the_example() -> None:
    obj = yaml.safe_load((SAMPLES / "autoscaling_v1alpha1_llmscaler.yaml").read_text())
    assert _cel_violations(obj) == []
    scaler = LLMScaler.from_dict(obj)
    spec = scaler.spec
    assert scaler.name == "llmscaler-sample"
    assert (spec.target_ref.kind, spec.target_ref.name) == ("Deployment", "vllm-opt-125m")
    assert spec.metric_provider is MetricProvider.PROMETHEUS
    assert (spec.min_replicas, spec.max_replicas) == (1, 5)
    assert (spec.sync_period_seconds, spec.retry_period_seconds) == (15, 10)
    (metric,) = spec.metrics
    assert metric.target_value == 0.8
    assert 'app="vllm-opt-125m"' in metric.query and "[2m]" in metric.query
    assert spec.scale_down.stabilization_window_seconds == 180
    assert spec.scale_down.max_step_replicas == 1
    assert spec.scale_down.behavior is ScaleDownBehavior.CACHE_AWARE
    assert spec.scale_down.deletion_cost_query is not None


def test_samples_custom_provider_sample_is_accepted_and_matches_the_example() -> None:
    path = SAMPLES / "autoscaling_v1alpha1_llmscaler_customprovider.yaml"
    obj = yaml.safe_load(path.read_text())
    assert _cel_violations(obj) == []
    spec = LLMScaler.from_dict(obj).spec
    assert spec.metric_provider is MetricProvider.CUSTOM
    assert spec.custom_provider is not None
    assert spec.custom_provider.service_id == "fallback-modelforge-01"
    assert spec.custom_provider.namespace == "modelforge"
    assert spec.custom_provider.path == "/decisions"
    assert spec.metrics == ()
    assert (spec.min_replicas, spec.max_replicas) == (1, 20)
    assert spec.scale_down.behavior is ScaleDownBehavior.CACHE_AWARE


def test_cel_check_of_samples_can_fail() -> None:
    obj = yaml.safe_load((SAMPLES / "autoscaling_v1alpha1_llmscaler.yaml").read_text())
    obj["spec"]["minReplicas"] = 9
    obj["spec"]["metrics"][0]["target"] = "80%"
    assert len(_cel_violations(obj)) == 2
