"""Conformance tests driving the embedded API server with the real kubectl binary."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
import yaml

from llmscaler_runtime.envtest import Environment

from .conftest import Kubectl, deployment

pytestmark = [
    pytest.mark.integration,
    pytest.mark.envtest_embedded(
        "these tests pin the emulator itself against kubectl; "
        "test/integration/conformance compares it with kube-apiserver"
    ),
]


def _yaml(obj: dict) -> str:
    return yaml.safe_dump(obj)


def test_api_resources_lists_builtin_and_crd_kinds(kubectl: Kubectl) -> None:
    """Discovery: /api, /apis and group-version resource lists drive `kubectl api-resources`."""
    out = kubectl.run("api-resources", "-o", "wide").stdout
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "deploy" in lines["deployments"] and "apps/v1" in lines["deployments"]
    assert "widgets" in lines and "wdg" in lines["widgets"]
    assert "leases" in lines and "customresourcedefinitions" in lines
    assert "update" in lines["deployments"] and "watch" in lines["deployments"]


def test_apply_creates_then_reports_unchanged(kubectl: Kubectl, ns: str) -> None:
    """Client-side apply: create, then a no-op apply sends a patch that changes nothing."""
    doc = _yaml(deployment("web"))
    assert "created" in kubectl.run("apply", "-n", ns, "-f", "-", input=doc).stdout
    before = kubectl.json("get", "deploy", "web", "-n", ns)
    assert "unchanged" in kubectl.run("apply", "-n", ns, "-f", "-", input=doc).stdout
    after = kubectl.json("get", "deploy", "web", "-n", ns)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "25%"  # defaulted


def test_get_table_prints_columns(kubectl: Kubectl, ns: str) -> None:
    """`kubectl get` asks for a server-side Table and prints its column definitions."""
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(deployment("tbl", replicas=3)))
    out = kubectl.run("get", "deploy", "-n", ns).stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert out[1].split()[:2] == ["tbl", "0/3"]


def test_apply_change_bumps_generation_and_merges_containers(kubectl: Kubectl, ns: str) -> None:
    """Strategic merge (kubectl apply): containers merge by name; spec change bumps generation."""
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(deployment("gen")))
    changed = deployment("gen", image="nginx:1.26")
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(changed))
    got = kubectl.json("get", "deploy", "gen", "-n", ns)
    assert got["metadata"]["generation"] == 2
    assert [c["image"] for c in got["spec"]["template"]["spec"]["containers"]] == ["nginx:1.26"]


def test_scale_uses_scale_subresource(kubectl: Kubectl, ns: str, env: Environment) -> None:
    """`kubectl scale` writes spec.replicas via /scale; the writer owns it as subresource scale."""
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(deployment("sc")))
    env.server.faults.clear_requests()
    kubectl.run("scale", "deploy/sc", "-n", ns, "--replicas=4")
    got = kubectl.json("get", "deploy", "sc", "-n", ns, "--show-managed-fields")
    assert got["spec"]["replicas"] == 4
    entry = [m for m in got["metadata"]["managedFields"] if m.get("subresource") == "scale"]
    assert entry and entry[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert any(r.subresource == "scale" and r.verb == "patch" for r in env.server.faults.requests())


def test_server_side_apply_conflict_and_force(kubectl: Kubectl, ns: str) -> None:
    """SSA: applying a field owned by another manager with a different value is a 409 naming the
    manager and the field; --force-conflicts takes ownership."""
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(deployment("ssa", replicas=2)))
    other = deployment("ssa", replicas=5)
    proc = kubectl.run(
        "apply",
        "--server-side",
        "--field-manager=llmscaler",
        "-n",
        ns,
        "-f",
        "-",
        input=_yaml(other),
        check=False,
    )
    assert proc.returncode != 0
    assert 'conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas' in proc.stderr
    kubectl.run(
        "apply",
        "--server-side",
        "--field-manager=llmscaler",
        "--force-conflicts",
        "-n",
        ns,
        "-f",
        "-",
        input=_yaml(other),
    )
    got = kubectl.json("get", "deploy", "ssa", "-n", ns, "--show-managed-fields")
    assert got["spec"]["replicas"] == 5
    owners = {m["manager"]: m for m in got["metadata"]["managedFields"]}
    assert owners["llmscaler"]["operation"] == "Apply"
    assert "f:replicas" in owners["llmscaler"]["fieldsV1"]["f:spec"]
    others = [m for name, m in owners.items() if name != "llmscaler"]
    assert all("f:replicas" not in m["fieldsV1"].get("f:spec", {}) for m in others)


def test_patch_types(kubectl: Kubectl, ns: str) -> None:
    """PATCH: merge patch, strategic merge (env merged by name) and JSON patch all apply."""
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(deployment("pt")))
    kubectl.run(
        "patch",
        "deploy",
        "pt",
        "-n",
        ns,
        "--type",
        "merge",
        "-p",
        '{"metadata":{"labels":{"tier":"gold"}}}',
    )
    smp = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]}
            }
        }
    }
    kubectl.run("patch", "deploy", "pt", "-n", ns, "--type", "strategic", "-p", json.dumps(smp))
    kubectl.run(
        "patch",
        "deploy",
        "pt",
        "-n",
        ns,
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":7}]',
    )
    got = kubectl.json("get", "deploy", "pt", "-n", ns)
    container = got["spec"]["template"]["spec"]["containers"][0]
    assert got["metadata"]["labels"]["tier"] == "gold"
    assert container["image"] == "nginx:1.25" and container["env"] == [{"name": "A", "value": "1"}]
    assert got["spec"]["replicas"] == 7


def test_get_watch_streams_changes(kubectl: Kubectl, ns: str, env: Environment) -> None:
    """Watch: `kubectl get -w` receives the initial object then MODIFIED events, chunked JSON."""
    env.storage.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": ns},
            "data": {"v": "0"},
        }
    )
    proc = subprocess.Popen(
        [
            "kubectl",
            "--kubeconfig",
            kubectl.kubeconfig,
            "get",
            "cm",
            "cm",
            "-n",
            ns,
            "-w",
            "-o",
            'jsonpath={.data.v}{"\\n"}',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "0"
        deadline = time.monotonic() + 10
        while env.storage.watcher_count == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        env.storage.patch_merge("v1", "ConfigMap", ns, "cm", {"data": {"v": "1"}})
        assert proc.stdout.readline().strip() == "1"
    finally:
        proc.kill()
        proc.wait(timeout=5)


def test_delete_and_not_found(kubectl: Kubectl, ns: str) -> None:
    """DELETE removes the object; a later GET is NotFound with the real wording."""
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(deployment("gone")))
    kubectl.run("delete", "deploy", "gone", "-n", ns)
    proc = kubectl.run("get", "deploy", "gone", "-n", ns, check=False)
    assert proc.returncode == 1
    assert 'deployments.apps "gone" not found' in proc.stderr


def test_explain_crd_field(kubectl: Kubectl) -> None:
    """OpenAPI v3 built from the CRD schema feeds `kubectl explain` with field descriptions."""
    out = kubectl.run("explain", "widget.spec.scaleDown").stdout
    assert "ScaleDown controls how replicas are removed." in out
    assert "stabilizationSeconds\t<integer>" in out
    assert "Seconds the recommendation must hold" in out


def test_crd_rejection_message(kubectl: Kubectl, ns: str) -> None:
    """CRD validation: every failing field in one 422, worded as kube-apiserver words it."""
    bad = {
        "apiVersion": "test.envtest.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "bad"},
        "spec": {"minReplicas": -1},
    }
    proc = kubectl.run("create", "-n", ns, "-f", "-", input=_yaml(bad), check=False)
    assert proc.returncode == 1
    assert 'The Widget "bad" is invalid: ' in proc.stderr
    assert (
        "* spec.minReplicas: Invalid value: -1: spec.minReplicas in body should be greater "
        "than or equal to 0"
    ) in proc.stderr
    assert "* spec.targetRef: Required value" in proc.stderr


def test_strict_field_validation_rejects_unknown_field(kubectl: Kubectl, ns: str) -> None:
    """fieldValidation=Strict (kubectl default): an unknown CR field is a 400 naming the field."""
    doc = {
        "apiVersion": "test.envtest.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "u"},
        "spec": {"targetRef": {"name": "x"}, "foo": 1},
    }
    proc = kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(doc), check=False)
    assert proc.returncode == 1
    assert 'strict decoding error: unknown field "spec.foo"' in proc.stderr
    kubectl.run("apply", "--validate=false", "-n", ns, "-f", "-", input=_yaml(doc))
    got = kubectl.json("get", "widget", "u", "-n", ns)
    assert "foo" not in got["spec"]  # pruned


def test_dry_run_server_does_not_persist(kubectl: Kubectl, ns: str) -> None:
    """?dryRun=All returns the would-be object but stores nothing."""
    out = kubectl.run(
        "create",
        "-n",
        ns,
        "--dry-run=server",
        "-o",
        "json",
        "-f",
        "-",
        input=_yaml(deployment("dry")),
    ).stdout
    assert json.loads(out)["spec"]["replicas"] == 2
    assert kubectl.run("get", "deploy", "dry", "-n", ns, check=False).returncode == 1


def test_crd_scale_and_printer_columns(kubectl: Kubectl, ns: str) -> None:
    """A CRD declaring subresources.scale is scalable with kubectl; printer columns are shown."""
    doc = {
        "apiVersion": "test.envtest.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "s"},
        "spec": {"targetRef": {"name": "x"}},
    }
    kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(doc))
    kubectl.run("scale", "widget/s", "-n", ns, "--replicas=3")
    assert kubectl.json("get", "widget", "s", "-n", ns)["spec"]["minReplicas"] == 3
    header = kubectl.run("get", "wdg", "-n", ns).stdout.splitlines()[0].split()
    assert header == ["NAME", "MIN"]  # declared columns only: no Age unless the CRD has one


def test_kustomize_rbac_kinds_are_stored(kubectl: Kubectl, ns: str) -> None:
    """RBAC kinds are stored (not enforced) so manifests containing them apply cleanly."""
    docs = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{ns}-role"},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}],
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": ns}},
    ]
    out = kubectl.run("apply", "-f", "-", input=yaml.safe_dump_all(docs)).stdout
    assert "clusterrole.rbac.authorization.k8s.io" in out and "serviceaccount/op created" in out


def test_strict_validation_of_builtin_kind_and_warn(kubectl: Kubectl, ns: str) -> None:
    """Built-in kinds: an unknown spec field is a strict decoding error; with
    --validate=warn the server answers with a warning and drops the field."""
    doc = deployment("strict")
    doc["spec"]["replicaz"] = 3
    proc = kubectl.run("apply", "-n", ns, "-f", "-", input=_yaml(doc), check=False)
    assert proc.returncode == 1
    assert 'strict decoding error: unknown field "spec.replicaz"' in proc.stderr
    proc = kubectl.run("apply", "--validate=warn", "-n", ns, "-f", "-", input=_yaml(doc))
    assert 'unknown field "spec.replicaz"' in proc.stderr
    assert "replicaz" not in kubectl.json("get", "deploy", "strict", "-n", ns)["spec"]


def test_explain_builtin_and_protected_namespace(kubectl: Kubectl) -> None:
    """Built-in kinds have OpenAPI v3 schemas for explain; default may not be deleted (403)."""
    out = kubectl.run("explain", "deployment.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in out and "Number of desired pods" in out
    proc = kubectl.run("delete", "namespace", "default", check=False)
    assert proc.returncode == 1
    assert 'namespaces "default" is forbidden: this namespace may not be deleted' in proc.stderr


def test_typed_kubectl_create_commands_send_protobuf(kubectl: Kubectl, ns: str) -> None:
    """kubectl's typed create commands post application/vnd.kubernetes.protobuf; the server
    decodes the envelope for the kinds they create."""
    kubectl.run(
        "create", "deployment", "pb", "-n", ns, "--image=nginx:1.25", "--replicas=0", "--port=80"
    )
    kubectl.run("create", "configmap", "pbc", "-n", ns, "--from-literal=k=v")
    kubectl.run("run", "pbp", "-n", ns, "--image=busybox", "--env=X=1", "--", "sleep", "1")
    d = kubectl.json("get", "deploy", "pb", "-n", ns)
    container = d["spec"]["template"]["spec"]["containers"][0]
    assert d["spec"]["replicas"] == 0  # a pointer field's zero value survives
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert kubectl.json("get", "cm", "pbc", "-n", ns)["data"] == {"k": "v"}
    pod = kubectl.json("get", "pod", "pbp", "-n", ns)["spec"]["containers"][0]
    assert pod["args"] == ["sleep", "1"] and pod["env"] == [{"name": "X", "value": "1"}]
