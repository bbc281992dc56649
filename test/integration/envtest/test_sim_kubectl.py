"""The workload simulator seen through kubectl, as a user of the embedded server sees it.

Each test names the Kubernetes behaviour it pins. On the real control plane the same tests run
against the real controllers, with the kubectl built for it (Debian's kubectl on PATH serves the
embedded server); that the two agree is what keeps the simulator honest.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.integration


#: kubeconfig path -> the kubectl to use with it (the matching one on the real control plane).
_KUBECTL: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _matching_kubectl(envtest: Any) -> None:
    if envtest.backend == "controlplane":
        _KUBECTL[envtest.kubeconfig_path] = str(envtest.controlplane.assets["kubectl"])


def kubectl(kubeconfig: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [_KUBECTL.get(kubeconfig, "kubectl"), "--kubeconfig", kubeconfig, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
    return proc


def get_json(kubeconfig: str, *args: str) -> Any:
    return json.loads(kubectl(kubeconfig, "get", *args, "-o", "json").stdout)


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last probe: {last!r}")


def apply(kubeconfig: str, namespace: str, doc: dict[str, Any]) -> None:
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "apply", "-f", "-"],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "server", "image": "registry.k8s.io/pause:3.9"}],
                },
            },
        },
    }


def ready_pods(kubeconfig: str, namespace: str, selector: str) -> list[str]:
    pods = get_json(kubeconfig, "pods", "-n", namespace, "-l", selector)["items"]
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions", [])
        )
    )


def test_kubectl_scale_creates_pods_that_become_ready(kubeconfig_path: str, namespace: str) -> None:
    """ReplicaSet controller + kubelet: spec.replicas pods exist and turn Ready."""
    apply(kubeconfig_path, namespace, deployment("web", 1))
    wait_for("1 ready pod", lambda: len(ready_pods(kubeconfig_path, namespace, "app=web")) == 1)
    kubectl(kubeconfig_path, "-n", namespace, "scale", "deployment", "web", "--replicas=3")
    names = wait_for(
        "3 ready pods",
        lambda: (p := ready_pods(kubeconfig_path, namespace, "app=web")) and len(p) == 3 and p,
    )
    (rs,) = get_json(kubeconfig_path, "rs", "-n", namespace, "-l", "app=web")["items"]
    assert all(n.startswith(rs["metadata"]["name"] + "-") for n in names)

    def settled() -> Any:
        st = get_json(kubeconfig_path, "deployment", "web", "-n", namespace)["status"]
        return st.get("readyReplicas") == 3 and st.get("availableReplicas") == 3 and st

    status = wait_for("deployment status readyReplicas=3", settled)
    assert status["updatedReplicas"] == 3 and status["replicas"] == 3
    rollout = kubectl(
        kubeconfig_path, "-n", namespace, "rollout", "status", "deployment/web", "--timeout=30s"
    )
    assert "successfully rolled out" in rollout.stdout


def test_kubectl_delete_deployment_collects_replicasets_and_pods(
    kubeconfig_path: str, namespace: str
) -> None:
    """Garbage collection: Deployment -> ReplicaSet -> Pod cascade (background propagation)."""
    apply(kubeconfig_path, namespace, deployment("gone", 2))
    wait_for("2 ready pods", lambda: len(ready_pods(kubeconfig_path, namespace, "app=gone")) == 2)
    kubectl(kubeconfig_path, "-n", namespace, "delete", "deployment", "gone", "--wait=false")

    def collected() -> bool:
        rss = get_json(kubeconfig_path, "rs", "-n", namespace, "-l", "app=gone")["items"]
        pods = get_json(kubeconfig_path, "pods", "-n", namespace, "-l", "app=gone")["items"]
        return not rss and not pods

    wait_for("replicasets and pods to be collected", collected)


def test_scale_down_reports_terminating_replicas_then_clears(
    kubeconfig_path: str, namespace: str
) -> None:
    """apps/v1 status.terminatingReplicas (1.33): pods in their grace period are counted."""
    shrink = deployment("shrink", 3)
    template = shrink["spec"]["template"]
    template["spec"]["terminationGracePeriodSeconds"] = 5
    # kwok (the real control plane's kubelet stand-in) removes a terminating pod after this.
    template["metadata"]["annotations"] = {"pod-delete.stage.kwok.x-k8s.io/delay": "3s"}
    apply(kubeconfig_path, namespace, shrink)
    wait_for("3 ready pods", lambda: len(ready_pods(kubeconfig_path, namespace, "app=shrink")) == 3)
    kubectl(kubeconfig_path, "-n", namespace, "scale", "deployment", "shrink", "--replicas=1")

    def status() -> dict[str, Any]:
        st: dict[str, Any] = get_json(kubeconfig_path, "deployment", "shrink", "-n", namespace)[
            "status"
        ]
        return st

    seen = wait_for("terminatingReplicas=2", lambda: status().get("terminatingReplicas") == 2)
    assert seen
    final = wait_for(
        "terminatingReplicas back to 0",
        lambda: (st := status()).get("terminatingReplicas") == 0 and st,
    )
    assert final["replicas"] == 1 and final["readyReplicas"] == 1


def test_statefulset_pods_get_ordinal_names(kubeconfig_path: str, namespace: str) -> None:
    """StatefulSet controller: pods <name>-0..N-1, created in order."""
    apply(
        kubeconfig_path,
        namespace,
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "db", "image": "registry.k8s.io/pause:3.9"}],
                    },
                },
            },
        },
    )
    names = wait_for(
        "db-0 and db-1 ready",
        lambda: (p := ready_pods(kubeconfig_path, namespace, "app=db")) == ["db-0", "db-1"] and p,
    )
    assert names == ["db-0", "db-1"]
    st = wait_for(
        "statefulset status",
        lambda: (
            (s := get_json(kubeconfig_path, "statefulset", "db", "-n", namespace)["status"]).get(
                "readyReplicas"
            )
            == 2
            and s
        ),
    )
    assert st["replicas"] == 2


def test_scale_down_deletes_the_pod_with_the_lowest_deletion_cost(
    kubeconfig_path: str, namespace: str
) -> None:
    """ReplicaSet victim order: controller.kubernetes.io/pod-deletion-cost, lower goes first."""
    apply(kubeconfig_path, namespace, deployment("cost", 3))
    pods = wait_for(
        "3 ready pods",
        lambda: (p := ready_pods(kubeconfig_path, namespace, "app=cost")) and len(p) == 3 and p,
    )
    keep, victim = pods[:2], pods[2]
    for name in keep:
        kubectl(
            kubeconfig_path,
            "-n",
            namespace,
            "annotate",
            "pod",
            name,
            "controller.kubernetes.io/pod-deletion-cost=100",
        )
    kubectl(kubeconfig_path, "-n", namespace, "scale", "deployment", "cost", "--replicas=2")

    def victim_terminating_or_gone() -> bool:
        items = get_json(kubeconfig_path, "pods", "-n", namespace, "-l", "app=cost")["items"]
        live = {p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp")}
        return live == set(keep)

    wait_for(f"{victim} to be the one deleted", victim_terminating_or_gone)


def test_template_change_rolls_out_to_the_new_image(kubeconfig_path: str, namespace: str) -> None:
    """Deployment RollingUpdate: a new ReplicaSet takes over; rollout status completes."""
    apply(kubeconfig_path, namespace, deployment("roll", 2))
    wait_for("2 ready pods", lambda: len(ready_pods(kubeconfig_path, namespace, "app=roll")) == 2)
    kubectl(
        kubeconfig_path,
        "-n",
        namespace,
        "set",
        "image",
        "deployment/roll",
        "server=registry.k8s.io/pause:3.10",
    )
    out = kubectl(
        kubeconfig_path, "-n", namespace, "rollout", "status", "deployment/roll", "--timeout=60s"
    )
    assert "successfully rolled out" in out.stdout
    d = get_json(kubeconfig_path, "deployment", "roll", "-n", namespace)
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert d["status"]["observedGeneration"] == d["metadata"]["generation"]
    rss = get_json(kubeconfig_path, "rs", "-n", namespace, "-l", "app=roll")["items"]
    replicas = sorted(
        (r["spec"]["template"]["spec"]["containers"][0]["image"], r["spec"]["replicas"])
        for r in rss
    )
    assert replicas == [("registry.k8s.io/pause:3.10", 2), ("registry.k8s.io/pause:3.9", 0)]
