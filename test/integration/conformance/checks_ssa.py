"""Server-side apply: managedFields as recorded, conflicts, force, shared ownership, and the
ownership of spec.replicas alone (llmscaler's write)."""

from __future__ import annotations

from typing import Any

from .framework import (
    APPLY,
    LLMS_API,
    MERGE,
    SAMPLES,
    Server,
    apps_path,
    check,
    deployment,
    llms_path,
    managed,
    scaler,
    strip_meta,
)

#: Managers a check writes as; controllers' own entries (status, revision) are left out.
MANAGERS = ("ops", "gitops", "llmscaler", "editor", "kubectl", "kubectl-client-side-apply")


def mine(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in managed(obj) if e["manager"] in MANAGERS]


def spec_only(obj: dict[str, Any]) -> dict[str, Any]:
    out = strip_meta(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    meta.pop("managedFields", None)
    meta.pop("generation", None)
    annotations = meta.get("annotations") or {}
    annotations.pop("deployment.kubernetes.io/revision", None)
    if not annotations:
        meta.pop("annotations", None)
    return out


def apply(server: Server, path: str, body: Any, manager: str, force: bool = False) -> Any:
    query: dict[str, Any] = {"fieldManager": manager}
    if force:
        query["force"] = "true"
    return server.call("PATCH", path, body, query=query, content_type=APPLY)


@check("server-side apply")
def check_ssa_kubectl_apply_sample(s: Server, ns: str) -> Any:
    """kubectl apply --server-side of the shipped sample: managedFields and the stored spec."""
    proc = s.kubectl(
        "apply",
        "--server-side",
        "-n",
        ns,
        "-f",
        str(SAMPLES / "autoscaling_v1alpha1_llmscaler.yaml"),
    )
    obj = s.ok("GET", llms_path(ns, "llmscaler-sample"))
    return {"out": proc.out, "rc": proc.rc, "managed": mine(obj), "object": spec_only(obj)}


@check("server-side apply")
def check_ssa_create_deployment(s: Server, ns: str) -> Any:
    """Apply creates a Deployment: 201, the defaulted object, one Apply entry."""
    ans = apply(s, apps_path(ns, "deployments", "web"), deployment("web", 2), "ops")
    obj = s.ok("GET", apps_path(ns, "deployments", "web"))
    return {"code": ans.code, "managed": mine(obj), "object": spec_only(obj)}


@check("server-side apply")
def check_ssa_conflict(s: Server, ns: str) -> Any:
    """A second manager setting spec.replicas to another value conflicts (409, message, causes)."""
    path = apps_path(ns, "deployments", "web")
    apply(s, path, deployment("web", 2), "ops")
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    body["spec"] = {"replicas": 3}
    return apply(s, path, body, "llmscaler").status()


@check("server-side apply")
def check_ssa_conflict_several_fields(s: Server, ns: str) -> Any:
    """Conflicts on several fields and with two managers are all listed."""
    path = llms_path(ns, "a")
    apply(s, path, scaler("a"), "ops")
    apply(
        s, path, {**scaler("a"), "spec": {**scaler("a")["spec"], "maxReplicas": 9}}, "gitops", True
    )
    other = scaler("a", minReplicas=2, maxReplicas=8, serverAddress="http://other:9090")
    # The causes come in map order on kube-apiserver; the message is sorted by manager.
    return apply(s, path, other, "llmscaler").invalid()


@check("server-side apply")
def check_ssa_same_value_shares_ownership(s: Server, ns: str) -> Any:
    """Applying the value another manager set is no conflict: both own the field."""
    path = apps_path(ns, "deployments", "web")
    apply(s, path, deployment("web", 2), "ops")
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    body["spec"] = {"replicas": 2}
    ans = apply(s, path, body, "llmscaler")
    return {"code": ans.code, "managed": mine(ans.body)}


@check("server-side apply")
def check_ssa_force_takes_ownership(s: Server, ns: str) -> Any:
    """force=true moves a conflicting field to the applier; the loser's entry shrinks."""
    path = apps_path(ns, "deployments", "web")
    apply(s, path, deployment("web", 2), "ops")
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    body["spec"] = {"replicas": 5}
    ans = apply(s, path, body, "llmscaler", force=True)
    return {"code": ans.code, "replicas": ans.body["spec"]["replicas"], "managed": mine(ans.body)}


@check("server-side apply")
def check_ssa_replicas_only_survives_gitops(s: Server, ns: str) -> Any:
    """llmscaler's write: a forced apply of spec.replicas alone, then the GitOps manifest
    re-applied without replicas leaves the count with llmscaler (what the operator relies on)."""
    path = apps_path(ns, "deployments", "web")
    apply(s, path, deployment("web", 1), "gitops")
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 3},
    }
    first = apply(s, path, body, "llmscaler", force=True)
    manifest = deployment("web")
    del manifest["spec"]["replicas"]
    manifest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    second = apply(s, path, manifest, "gitops")
    return {
        "codes": [first.code, second.code],
        "replicas": second.body["spec"]["replicas"],
        "image": second.body["spec"]["template"]["spec"]["containers"][0]["image"],
        "managed": mine(second.body),
    }


@check("server-side apply")
def check_ssa_conflict_with_update_manager(s: Server, ns: str) -> Any:
    """A Deployment made by kubectl create: an unforced apply of replicas conflicts with the
    Update manager, a forced one takes the field."""
    s.kubectl("create", "deployment", "web", "-n", ns, "--image=nginx:1.25", "--replicas=2")
    path = apps_path(ns, "deployments", "web")
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    body["spec"] = {"replicas": 4}
    refused = apply(s, path, body, "llmscaler").status()
    forced = apply(s, path, body, "llmscaler", force=True)
    entries = [e for e in managed(forced.body) if e["manager"] in ("llmscaler", "kubectl-create")]
    return {"refused": refused, "forced": forced.code, "managed": entries}


@check("server-side apply")
def check_ssa_removing_a_field_deletes_it(s: Server, ns: str) -> Any:
    """A field the applier stops sending (and nobody else owns) is removed."""
    path = llms_path(ns, "a")
    first = scaler("a", serverHeaders={"X-A": "1", "X-B": "2"})
    first["metadata"]["labels"] = {"team": "ml", "tier": "gold"}
    apply(s, path, first, "ops")
    second = scaler("a", serverHeaders={"X-A": "1"})
    second["metadata"]["labels"] = {"team": "ml"}
    ans = apply(s, path, second, "ops")
    return {
        "labels": ans.body["metadata"].get("labels"),
        "headers": ans.body["spec"].get("serverHeaders"),
        "managed": mine(ans.body),
    }


@check("server-side apply")
def check_ssa_shared_field_survives_one_owner(s: Server, ns: str) -> Any:
    """A field two appliers own stays when one of them drops it."""
    path = llms_path(ns, "a")
    apply(s, path, scaler("a", serverHeaders={"X-A": "1"}), "ops")
    apply(s, path, scaler("a", serverHeaders={"X-A": "1"}), "gitops")
    ans = apply(s, path, scaler("a"), "ops")
    return {"headers": ans.body["spec"].get("serverHeaders"), "managed": mine(ans.body)}


@check("server-side apply")
def check_ssa_merge_patch_takes_field(s: Server, ns: str) -> Any:
    """A merge patch (Update) of an applied field moves it to the patcher, and a later
    unforced apply of the old value conflicts with it."""
    path = llms_path(ns, "a")
    apply(s, path, scaler("a"), "ops")
    patched = s.call(
        "PATCH",
        path,
        {"spec": {"maxReplicas": 7}},
        query={"fieldManager": "editor"},
        content_type=MERGE,
    )
    again = apply(s, path, scaler("a"), "ops")
    return {"patched": mine(patched.body), "again": again.status()}


@check("server-side apply")
def check_ssa_status_merge_patch_entry(s: Server, ns: str) -> Any:
    """llmscaler's status write: a merge patch of /status records an Update entry with
    subresource status (conditions keyed by type)."""
    path = llms_path(ns, "a")
    apply(s, path, scaler("a"), "ops")
    status = {
        "status": {
            "observedGeneration": 1,
            "currentReplicas": 1,
            "desiredReplicas": 2,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Synced",
                    "message": "ok",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    }
    ans = s.call(
        "PATCH", path + "/status", status, query={"fieldManager": "llmscaler"}, content_type=MERGE
    )
    return {"code": ans.code, "managed": mine(ans.body), "status": ans.body.get("status")}


@check("server-side apply")
def check_ssa_apply_status_subresource(s: Server, ns: str) -> Any:
    """Apply on /status owns only status fields; the conditions list is a map keyed by type."""
    path = llms_path(ns, "a")
    apply(s, path, scaler("a"), "ops")
    body = {
        "apiVersion": LLMS_API,
        "kind": "LLMScaler",
        "metadata": {"name": "a"},
        "spec": {"minReplicas": 3},
        "status": {
            "desiredReplicas": 3,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "Waiting",
                    "message": "m",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }
    ans = apply(s, path + "/status", body, "llmscaler")
    return {
        "code": ans.code,
        "minReplicas": ans.body["spec"]["minReplicas"],
        "managed": mine(ans.body),
    }


@check("server-side apply")
def check_ssa_update_entry_of_kubectl_create(s: Server, ns: str) -> Any:
    """The Update entry kubectl create records for an LLMScaler (``.`` markers and all)."""
    s.kubectl("create", "-n", ns, "-f", "-", input=_yaml(scaler("a", serverHeaders={"X": "1"})))
    obj = s.ok("GET", llms_path(ns, "a"))
    return [e for e in managed(obj) if e["manager"].startswith("kubectl")]


@check("server-side apply")
def check_ssa_update_entry_of_deployment(s: Server, ns: str) -> Any:
    """The Update entries of a Deployment created through the API, then patched: new maps and
    lists are marked, the typed skeleton (spec, spec.template ...) is not, selectors are atomic."""
    path = apps_path(ns, "deployments")
    dep = deployment("web", 0)
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]
    container["env"] = [{"name": "A", "value": "1"}]
    container["resources"] = {"limits": {"cpu": "1"}}
    s.call("POST", path, dep, query={"fieldManager": "ops"})
    patch = {
        "spec": {
            "strategy": {"type": "Recreate", "rollingUpdate": None},
            "template": {"spec": {"nodeSelector": {"disk": "ssd"}}},
        }
    }
    ans = s.call(
        "PATCH", path + "/web", patch, query={"fieldManager": "editor"}, content_type=MERGE
    )
    return mine(ans.body)


@check("server-side apply")
def check_ssa_update_entry_of_lease(s: Server, ns: str) -> Any:
    """Update entries on a kind no controller touches: a new annotations map is marked."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "labels": {"a": "1"}},
        "spec": {"holderIdentity": "p1"},
    }
    s.call("POST", path, body, query={"fieldManager": "ops"})
    patch = {
        "metadata": {"annotations": {"x": "1"}, "labels": {"b": "2"}},
        "spec": {"leaseDurationSeconds": 5},
    }
    ans = s.call("PATCH", path + "/l", patch, query={"fieldManager": "editor"}, content_type=MERGE)
    return mine(ans.body)


@check("server-side apply")
def check_ssa_errors(s: Server, ns: str) -> Any:
    """Apply without a field manager, with a mismatched kind, or without apiVersion."""
    path = llms_path(ns, "a")
    no_manager = s.call("PATCH", path, scaler("a"), content_type=APPLY).status()
    wrong_kind = apply(s, path, {**scaler("a"), "kind": "Other"}, "ops").status()
    missing = {k: v for k, v in scaler("a").items() if k != "apiVersion"}
    no_version = apply(s, path, missing, "ops").status()
    return {"no_manager": no_manager, "wrong_kind": wrong_kind, "no_version": no_version}


def _yaml(obj: Any) -> str:
    import yaml

    return str(yaml.safe_dump(obj))
