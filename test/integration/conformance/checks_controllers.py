"""Controllers: garbage collection, Deployment status, the ReplicaSet's choice of pod on scale-down.

These need the workload tier: kube-controller-manager, kube-scheduler and kwok on the real side,
the workload simulator and the garbage collector on the embedded side.
"""

from __future__ import annotations

from typing import Any

from .framework import (
    APPLY,
    MERGE,
    Server,
    apps_path,
    check,
    core_path,
    deployment,
    wait_for,
)

COST = "controller.kubernetes.io/pod-deletion-cost"
#: Controllers on a busy two-core machine: generous, the checks poll and return early.
SETTLE = 60.0


def cm(name: str, *owners: dict[str, Any], block: bool | None = None) -> dict[str, Any]:
    refs = []
    for o in owners:
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        if block is not None:
            ref["blockOwnerDeletion"] = block
        refs.append(ref)
    meta: dict[str, Any] = {"name": name}
    if refs:
        meta["ownerReferences"] = refs
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def exists(s: Server, path: str) -> bool:
    return s.call("GET", path).code == 200


def refs_of(s: Server, path: str) -> list[str] | None:
    ans = s.call("GET", path)
    if ans.code != 200:
        return None
    return [r["name"] for r in ans.body["metadata"].get("ownerReferences") or []]


def deletion_answer(ans: Any) -> Any:
    """What the DELETE itself answered: code, kind, finalizers, whether deletion started."""
    body = ans.body if isinstance(ans.body, dict) else {}
    meta = body.get("metadata") or {}
    return {
        "code": ans.code,
        "kind": body.get("kind"),
        "finalizers": meta.get("finalizers"),
        "deleting": "deletionTimestamp" in meta,
    }


@check("garbage collection")
def check_gc_background(s: Server, ns: str) -> Any:
    """Background deletion: a dependent whose only owner is gone is deleted; one with a living
    second owner just loses the dangling reference."""
    path = core_path(ns, "configmaps")
    owner = s.ok("POST", path, cm("owner"))
    keeper = s.ok("POST", path, cm("keeper"))
    s.ok("POST", path, cm("dep1", owner))
    s.ok("POST", path, cm("dep2", owner, keeper))
    deleted = s.call("DELETE", path + "/owner")
    wait_for(lambda: not exists(s, path + "/dep1"), timeout=SETTLE, what="dep1 collected")
    wait_for(lambda: refs_of(s, path + "/dep2") == ["keeper"], timeout=SETTLE, what="dep2 refs")
    return {"delete": deletion_answer(deleted), "dep2": refs_of(s, path + "/dep2")}


@check("garbage collection")
def check_gc_foreground(s: Server, ns: str) -> Any:
    """Foreground deletion: the owner waits with the foregroundDeletion finalizer until its
    blocking dependents are gone, then goes too."""
    path = core_path(ns, "configmaps")
    owner = s.ok("POST", path, cm("owner"))
    child = s.ok("POST", path, cm("child", owner, block=True))
    s.ok("POST", path, cm("grandchild", child, block=True))
    deleted = s.call("DELETE", path + "/owner", query={"propagationPolicy": "Foreground"})
    for name in ("grandchild", "child", "owner"):
        wait_for(lambda n=name: not exists(s, f"{path}/{n}"), timeout=SETTLE, what=f"{name} gone")
    return deletion_answer(deleted)


@check("garbage collection")
def check_gc_orphan(s: Server, ns: str) -> Any:
    """Orphan deletion: the dependents stay, without the reference to the deleted owner."""
    path = core_path(ns, "configmaps")
    owner = s.ok("POST", path, cm("owner"))
    s.ok("POST", path, cm("dep", owner, block=True))
    deleted = s.call("DELETE", path + "/owner", query={"propagationPolicy": "Orphan"})
    wait_for(lambda: not exists(s, path + "/owner"), timeout=SETTLE, what="owner gone")
    wait_for(lambda: refs_of(s, path + "/dep") == [], timeout=SETTLE, what="dep orphaned")
    return deletion_answer(deleted)


def ready_pods(s: Server, ns: str, app: str) -> list[dict[str, Any]]:
    pods = s.ok("GET", core_path(ns, "pods"), query={"labelSelector": f"app={app}"})["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return [
        p
        for p in live
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (p.get("status") or {}).get("conditions") or []
        )
    ]


def all_pods(s: Server, ns: str, app: str) -> list[dict[str, Any]]:
    return s.ok("GET", core_path(ns, "pods"), query={"labelSelector": f"app={app}"})["items"]


@check("garbage collection")
def check_gc_deployment_cascade(s: Server, ns: str) -> Any:
    """Deleting a Deployment removes its ReplicaSet and pods; the owner references they carry."""
    s.ok("POST", apps_path(ns, "deployments"), deployment("web", 2))
    wait_for(lambda: len(ready_pods(s, ns, "web")) == 2, timeout=SETTLE, what="2 ready pods")
    rs = s.ok("GET", apps_path(ns, "replicasets"), query={"labelSelector": "app=web"})["items"]
    pod = ready_pods(s, ns, "web")[0]

    def shape(refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in ("uid", "name")} for r in refs]

    refs = {
        "replicaset": shape(rs[0]["metadata"]["ownerReferences"]),
        "pod": shape(pod["metadata"]["ownerReferences"]),
        "pod_name_prefix": pod["metadata"]["name"].startswith(rs[0]["metadata"]["name"] + "-"),
        "generateName": pod["metadata"].get("generateName") == rs[0]["metadata"]["name"] + "-",
    }
    s.ok("DELETE", apps_path(ns, "deployments", "web"))
    wait_for(
        lambda: (
            not s.ok("GET", apps_path(ns, "replicasets"), query={"labelSelector": "app=web"})[
                "items"
            ]
        ),
        timeout=SETTLE,
        what="ReplicaSet collected",
    )
    # Collected means deleted by the garbage collector: terminating or gone. When a
    # terminating pod finally disappears is the kubelet's (kwok's, the simulator's) business.
    wait_for(
        lambda: all(p["metadata"].get("deletionTimestamp") for p in all_pods(s, ns, "web")),
        timeout=SETTLE,
        what="pods collected",
    )
    return refs


@check("Deployment and ReplicaSet")
def check_deployment_status_when_ready(s: Server, ns: str) -> Any:
    """The status of a Deployment and its ReplicaSet once every pod is Ready."""
    s.ok("POST", apps_path(ns, "deployments"), deployment("web", 2))

    def settled() -> dict[str, Any] | None:
        dep = s.ok("GET", apps_path(ns, "deployments", "web"))
        st = dep.get("status") or {}
        conds = {c["type"]: c for c in st.get("conditions") or []}
        progressing = conds.get("Progressing", {}).get("reason") == "NewReplicaSetAvailable"
        if st.get("availableReplicas") == 2 and progressing:
            return dep
        return None

    dep = wait_for(settled, timeout=SETTLE, what="Deployment available")
    rs = s.ok("GET", apps_path(ns, "replicasets"), query={"labelSelector": "app=web"})["items"][0]
    conditions = [
        {k: c.get(k) for k in ("type", "status", "reason")} for c in dep["status"]["conditions"]
    ]
    status = {k: v for k, v in dep["status"].items() if k != "conditions"}
    return {
        "deployment": {**status, "conditions": conditions},
        "revision": dep["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision"),
        "replicaset": rs.get("status"),
        "rs_annotations": sorted(rs["metadata"].get("annotations") or {}),
        "rs_labels": sorted(rs["metadata"].get("labels") or {}),
    }


@check("Deployment and ReplicaSet")
def check_replicaset_victims_by_deletion_cost(s: Server, ns: str) -> Any:
    """llmscaler's cache-aware scale-down: pods marked with pod-deletion-cost, then spec.replicas
    lowered by a forced apply; the ReplicaSet removes the cheapest pods first."""
    s.ok("POST", apps_path(ns, "deployments"), deployment("model", 4))
    wait_for(lambda: len(ready_pods(s, ns, "model")) == 4, timeout=SETTLE, what="4 ready pods")
    pods = sorted(ready_pods(s, ns, "model"), key=lambda p: p["metadata"]["name"])
    cost_of = {}
    for pod, cost in zip(pods, (500, -100, 1000, 0), strict=True):
        name = pod["metadata"]["name"]
        cost_of[name] = cost
        s.ok(
            "PATCH",
            core_path(ns, "pods", name),
            {"metadata": {"annotations": {COST: str(cost)}}},
            content_type=MERGE,
        )
    survivors = []
    for replicas in (2, 1):
        s.ok(
            "PATCH",
            apps_path(ns, "deployments", "model"),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "model", "namespace": ns},
                "spec": {"replicas": replicas},
            },
            query={"fieldManager": "llmscaler", "force": "true"},
            content_type=APPLY,
        )

        def left(n: int = replicas) -> list[int] | None:
            live = [
                p for p in all_pods(s, ns, "model") if not p["metadata"].get("deletionTimestamp")
            ]
            if len(live) != n:
                return None
            return sorted(cost_of.get(p["metadata"]["name"], 9999) for p in live)

        survivors.append(wait_for(left, timeout=SETTLE, what=f"{replicas} pods left"))
    return survivors
