"""Subresources, generation, CRD defaulting and pruning, schema and CEL errors, tables, explain."""

from __future__ import annotations

import re
from typing import Any

import yaml

from .framework import (
    APPLY,
    GROUP,
    JSON_PATCH,
    LLMS_API,
    MERGE,
    STRATEGIC,
    Server,
    apps_path,
    check,
    core_path,
    deployment,
    drop_times,
    llms_path,
    managed,
    scaler,
    sorted_lines,
    strip_meta,
    wait_for,
)


def create(s: Server, path: str, body: Any, **query: Any) -> Any:
    return s.call("POST", path, body, query=query or None)


def rejected(s: Server, ns: str, body: dict[str, Any]) -> Any:
    """Create an invalid LLMScaler: the Status a client sees."""
    return create(s, llms_path(ns), body).invalid()


# ---- status and scale subresources -----------------------------------------------------------


@check("status and scale")
def check_status_put_ignores_spec(s: Server, ns: str) -> Any:
    """PUT /status changes status only, keeps the generation, records a status entry."""
    obj = create(s, llms_path(ns), scaler("a")).body
    obj["spec"]["maxReplicas"] = 9
    obj["status"] = {"desiredReplicas": 2}
    ans = s.call("PUT", llms_path(ns, "a", "status"), obj, query={"fieldManager": "ctl"})
    body = ans.body
    return {
        "code": ans.code,
        "maxReplicas": body["spec"]["maxReplicas"],
        "status": body.get("status"),
        "generation": body["metadata"]["generation"],
        "managed": managed(body),
    }


@check("status and scale")
def check_main_put_ignores_status(s: Server, ns: str) -> Any:
    """PUT on the main resource drops status (the status subresource is enabled)."""
    obj = create(s, llms_path(ns), scaler("a")).body
    obj["status"] = {"desiredReplicas": 2}
    obj["spec"]["maxReplicas"] = 6
    body = s.ok("PUT", llms_path(ns, "a"), obj)
    return {"status": body.get("status"), "generation": body["metadata"]["generation"]}


@check("status and scale")
def check_create_drops_status(s: Server, ns: str) -> Any:
    """Status sent on create is dropped, for a custom resource and for a Deployment."""
    body = scaler("a")
    body["status"] = {"desiredReplicas": 2}
    crd = create(s, llms_path(ns), body).body
    dep = deployment("web", 0)
    dep["status"] = {"replicas": 7}
    made = create(s, apps_path(ns, "deployments"), dep).body
    return {"llms": crd.get("status"), "deployment": made.get("status")}


@check("status and scale")
def check_scale_get_deployment(s: Server, ns: str) -> Any:
    """GET /scale of a Deployment: an autoscaling/v1 Scale with the selector."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0))
    return strip_meta(s.ok("GET", apps_path(ns, "deployments", "web", "scale")))


@check("status and scale")
def check_scale_patch_deployment(s: Server, ns: str) -> Any:
    """A merge patch of /scale sets spec.replicas, bumps the generation, records a scale entry."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0), fieldManager="ops")
    ans = s.call(
        "PATCH",
        apps_path(ns, "deployments", "web", "scale"),
        {"spec": {"replicas": 2}, "metadata": {"labels": {"ignored": "x"}}},
        query={"fieldManager": "hpa"},
        content_type=MERGE,
    )
    dep = s.ok("GET", apps_path(ns, "deployments", "web"))
    return {
        "scale": {"code": ans.code, "spec": ans.body["spec"]},
        "replicas": dep["spec"]["replicas"],
        "generation": dep["metadata"]["generation"],
        "labels": dep["metadata"].get("labels"),
        "managed": [e for e in managed(dep) if e["manager"] in ("hpa", "ops")],
    }


@check("status and scale")
def check_scale_apply_deployment(s: Server, ns: str) -> Any:
    """Server-side apply on /scale: an Apply entry owning spec.replicas with subresource scale."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0), fieldManager="ops")
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}}
    body["spec"] = {"replicas": 0}
    ans = s.call(
        "PATCH",
        apps_path(ns, "deployments", "web", "scale"),
        body,
        query={"fieldManager": "hpa", "force": "true"},
        content_type=APPLY,
    )
    dep = s.ok("GET", apps_path(ns, "deployments", "web"))
    return {
        "code": ans.code,
        "managed": [e for e in managed(dep) if e["manager"] in ("hpa", "ops")],
    }


@check("status and scale")
def check_scale_put_errors(s: Server, ns: str) -> Any:
    """PUT /scale with a negative count or a stale resourceVersion."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0))
    path = apps_path(ns, "deployments", "web", "scale")
    scale = s.ok("GET", path)
    negative = dict(scale, spec={"replicas": -1})
    stale = dict(scale, spec={"replicas": 1})
    stale["metadata"] = dict(scale["metadata"], resourceVersion="1")
    return {
        "negative": s.call("PUT", path, negative).status(),
        "stale": s.call("PUT", path, stale).status(),
    }


@check("status and scale")
def check_scale_absent_on_crd(s: Server, ns: str) -> Any:
    """The LLMScaler CRD has no scale subresource: 404 on it, kubectl scale refused."""
    create(s, llms_path(ns), scaler("a"))
    proc = s.kubectl("scale", "-n", ns, "llmscaler/a", "--replicas=2")
    return {
        "get": s.call("GET", llms_path(ns, "a", "scale")).status(),
        "kubectl": [proc.rc, proc.err],
    }


@check("status and scale")
def check_kubectl_scale_deployment(s: Server, ns: str) -> Any:
    """kubectl scale with --current-replicas, right and wrong."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0))
    wrong = s.kubectl("scale", "-n", ns, "deployment/web", "--current-replicas=3", "--replicas=1")
    right = s.kubectl("scale", "-n", ns, "deployment/web", "--current-replicas=0", "--replicas=0")
    return {"wrong": [wrong.rc, wrong.out, wrong.err], "right": [right.rc, right.out, right.err]}


# ---- generation ------------------------------------------------------------------------------


@check("generation")
def check_generation_custom_resource(s: Server, ns: str) -> Any:
    """metadata.generation: 1 on create, unchanged by metadata and status, +1 per spec change."""
    seen = [create(s, llms_path(ns), scaler("a")).body["metadata"]["generation"]]
    path = llms_path(ns, "a")
    for patch, sub in (
        ({"metadata": {"labels": {"x": "1"}}}, ""),
        ({"status": {"desiredReplicas": 1}}, "/status"),
        ({"spec": {"maxReplicas": 5}}, ""),
        ({"spec": {"maxReplicas": 5}}, ""),
        ({"spec": {"scaleDown": {"maxStepReplicas": 1}}}, ""),
    ):
        seen.append(s.ok("PATCH", path + sub, patch, content_type=MERGE)["metadata"]["generation"])
    return seen


@check("generation")
def check_generation_deployment(s: Server, ns: str) -> Any:
    """The rules for a Deployment: annotations count (they are copied to ReplicaSets), labels
    and status do not. Paused, so that no controller writes meanwhile."""
    dep = deployment("web", 0)
    dep["spec"]["paused"] = True
    seen = [create(s, apps_path(ns, "deployments"), dep).body["metadata"]["generation"]]
    path = apps_path(ns, "deployments", "web")
    for patch in (
        {"metadata": {"annotations": {"x": "1"}}},
        {"metadata": {"labels": {"y": "1"}}},
        {"spec": {"replicas": 0}},
        {"spec": {"minReadySeconds": 5}},
        {"spec": {"template": {"metadata": {"annotations": {"r": "2"}}}}},
    ):
        seen.append(s.ok("PATCH", path, patch, content_type=MERGE)["metadata"]["generation"])
    return seen


@check("generation")
def check_generation_absent_on_configmap(s: Server, ns: str) -> Any:
    """Kinds without a spec strategy carry no generation."""
    made = create(
        s,
        core_path(ns, "configmaps"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}},
    ).body
    changed = s.ok(
        "PATCH", core_path(ns, "configmaps", "c"), {"data": {"a": "2"}}, content_type=MERGE
    )
    return [made["metadata"].get("generation"), changed["metadata"].get("generation")]


@check("generation")
def check_generation_on_deletion_with_finalizer(s: Server, ns: str) -> Any:
    """Deleting an object held by a finalizer sets deletionTimestamp (and bumps generation)."""
    body = scaler("a")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    create(s, llms_path(ns), body)
    deleted = s.call("DELETE", llms_path(ns, "a"))
    obj = s.ok("GET", llms_path(ns, "a"))
    late = s.call(
        "PATCH",
        llms_path(ns, "a"),
        {"metadata": {"finalizers": ["example.com/hold", "x/y"]}},
        content_type=MERGE,
    )
    s.ok("PATCH", llms_path(ns, "a"), {"metadata": {"finalizers": None}}, content_type=MERGE)
    gone = s.call("GET", llms_path(ns, "a")).code
    return {
        "delete_code": deleted.code,
        "generation": obj["metadata"]["generation"],
        "deletionTimestamp": "deletionTimestamp" in obj["metadata"],
        "grace": obj["metadata"].get("deletionGracePeriodSeconds"),
        "late_finalizer": late.status(),
        "after_release": gone,
    }


# ---- CRD defaulting and pruning ----------------------------------------------------------------


@check("CRD defaulting")
def check_defaults_on_create(s: Server, ns: str) -> Any:
    """A minimal LLMScaler comes back with every schema default filled in."""
    return create(s, llms_path(ns), scaler("a")).body["spec"]


@check("CRD defaulting")
def check_defaults_nested(s: Server, ns: str) -> Any:
    """Defaults inside an object the client sent (customProvider.path, preemption.enable)."""
    body = scaler("a", metricProvider="Custom", customProvider={"serviceId": "svc"}, preemption={})
    del body["spec"]["metrics"]
    body["spec"]["scaleDown"] = {"behavior": "None"}
    return create(s, llms_path(ns), body).body["spec"]


@check("CRD defaulting")
def check_defaults_replace_null(s: Server, ns: str) -> Any:
    """A null for a defaulted field is replaced by the default; other nulls are dropped."""
    body = scaler("a", syncPeriodSeconds=None, serverHeaders=None)
    ans = create(s, llms_path(ns), body)
    return {"code": ans.code, "spec": ans.body.get("spec") if ans.code < 300 else ans.status()}


@check("CRD defaulting")
def check_defaults_on_update_and_dry_run(s: Server, ns: str) -> Any:
    """Removing a defaulted field brings the default back; dry-run shows the defaults and
    stores nothing."""
    dry = create(s, llms_path(ns), scaler("a"), dryRun="All")
    after_dry = s.call("GET", llms_path(ns, "a")).code
    create(s, llms_path(ns), scaler("b", syncPeriodSeconds=30))
    patched = s.ok(
        "PATCH", llms_path(ns, "b"), {"spec": {"syncPeriodSeconds": None}}, content_type=MERGE
    )
    return {
        "dry": [dry.code, dry.body["spec"].get("syncPeriodSeconds"), "uid" in dry.body["metadata"]],
        "after_dry": after_dry,
        "patched": patched["spec"]["syncPeriodSeconds"],
    }


@check("CRD pruning")
def check_prune_unknown_fields_ignore(s: Server, ns: str) -> Any:
    """fieldValidation=Ignore: unknown fields are pruned silently, at every depth."""
    body = scaler("a", bogus=1, scaleDown={"behavior": "None", "extra": True})
    body["extraTop"] = {"x": 1}
    body["metadata"]["bogusMeta"] = "x"
    ans = create(s, llms_path(ns), body, fieldValidation="Ignore")
    return {"code": ans.code, "warnings": ans.warnings, "object": strip_meta(ans.body)}


@check("CRD pruning")
def check_prune_unknown_fields_warn(s: Server, ns: str) -> Any:
    """fieldValidation=Warn: pruned, and one Warning per unknown field."""
    body = scaler("a", bogus=1, scaleDown={"behavior": "None", "extra": True})
    ans = create(s, llms_path(ns), body, fieldValidation="Warn")
    return {"code": ans.code, "warnings": sorted(ans.warnings), "spec": ans.body["spec"]}


@check("CRD pruning")
def check_prune_unknown_fields_strict(s: Server, ns: str) -> Any:
    """fieldValidation=Strict: 400 naming the unknown fields."""
    body = scaler("a", bogus=1, scaleDown={"behavior": "None", "extra": True})
    return create(s, llms_path(ns), body, fieldValidation="Strict").status()


@check("CRD pruning")
def check_prune_strict_builtin(s: Server, ns: str) -> Any:
    """fieldValidation=Strict on a Deployment and a ConfigMap."""
    dep = deployment("web", 0)
    dep["spec"]["bogus"] = 1
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "datax": {}}
    return {
        "deployment": create(
            s, apps_path(ns, "deployments"), dep, fieldValidation="Strict"
        ).status(),
        "configmap": create(s, core_path(ns, "configmaps"), cm, fieldValidation="Strict").status(),
    }


@check("CRD pruning")
def check_kubectl_apply_unknown_field(s: Server, ns: str) -> Any:
    """kubectl apply (client-side, strict by default) of a manifest with a typo."""
    body = scaler("a", maxReplica=3)
    proc = s.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(body))
    return [proc.rc, proc.out, proc.err]


# ---- schema and CEL rejections -----------------------------------------------------------------


@check("schema and CEL")
def check_schema_minimum_and_format(s: Server, ns: str) -> Any:
    return rejected(s, ns, scaler("a", minReplicas=-1, maxReplicas=2**31, syncPeriodSeconds=0))


@check("schema and CEL")
def check_schema_enum(s: Server, ns: str) -> Any:
    return rejected(s, ns, scaler("a", metricProvider="Datadog", scaleDown={"behavior": "Fast"}))


@check("schema and CEL")
def check_schema_required(s: Server, ns: str) -> Any:
    body = scaler("a", targetRef={"kind": "Deployment"})
    del body["spec"]["serverAddress"]
    body["spec"]["metrics"] = [{"name": "m"}]
    return rejected(s, ns, body)


@check("schema and CEL")
def check_schema_string_rules(s: Server, ns: str) -> Any:
    """pattern, minLength and maxLength."""
    body = scaler(
        "a",
        metricProvider="Custom",
        customProvider={"serviceId": "", "path": "decisions"},
        targetRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "x" * 254},
    )
    return rejected(s, ns, body)


@check("schema and CEL")
def check_schema_types(s: Server, ns: str) -> Any:
    """Wrong types block the CEL rules (the 'some validation rules were not checked' cause)."""
    return rejected(s, ns, scaler("a", minReplicas="one", serverHeaders={"X": 1}, metrics={}))


@check("schema and CEL")
def check_schema_max_items(s: Server, ns: str) -> Any:
    return rejected(s, ns, scaler("a", metrics=[{"query": "q", "target": "1"}] * 17))


@check("schema and CEL")
def check_cel_min_le_max(s: Server, ns: str) -> Any:
    return rejected(s, ns, scaler("a", minReplicas=5, maxReplicas=2))


@check("schema and CEL")
def check_cel_custom_provider_required(s: Server, ns: str) -> Any:
    """A rule with a reason (FieldValueRequired) and a fieldPath."""
    body = scaler("a", metricProvider="Custom")
    return rejected(s, ns, body)


@check("schema and CEL")
def check_cel_metrics_required(s: Server, ns: str) -> Any:
    body = scaler("a")
    del body["spec"]["metrics"]
    return rejected(s, ns, body)


@check("schema and CEL")
def check_cel_metric_target(s: Server, ns: str) -> Any:
    """A rule on a list item: the path names the index."""
    body = scaler("a", metrics=[{"query": "q", "target": "80%"}, {"query": "q", "target": "0"}])
    return rejected(s, ns, body)


@check("schema and CEL")
def check_cel_on_update(s: Server, ns: str) -> Any:
    """Rules run on update too: a merge patch that breaks one is refused with 422."""
    create(s, llms_path(ns), scaler("a"))
    ans = s.call("PATCH", llms_path(ns, "a"), {"spec": {"minReplicas": 9}}, content_type=MERGE)
    kubectl = s.kubectl(
        "patch", "-n", ns, "llmscaler", "a", "--type=merge", "-p", '{"spec":{"maxReplicas":0}}'
    )
    return {"api": ans.invalid(), "kubectl": [kubectl.rc, sorted_lines(kubectl.err)]}


@check("schema and CEL")
def check_schema_errors_through_kubectl(s: Server, ns: str) -> Any:
    """What kubectl prints for a rejected create."""
    proc = s.kubectl(
        "create",
        "-n",
        ns,
        "-f",
        "-",
        input=yaml.safe_dump(scaler("a", minReplicas=5, maxReplicas=2, syncPeriodSeconds=0)),
    )
    return [proc.rc, sorted_lines(proc.err)]


# ---- printer columns and kubectl explain --------------------------------------------------------


def _table(s: Server, path: str) -> Any:
    table = s.ok("GET", path, accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    cols = [
        {k: c.get(k) for k in ("name", "type", "format", "priority", "description")}
        for c in table["columnDefinitions"]
    ]
    age = [i for i, c in enumerate(cols) if c["name"] == "Age"]
    rows = [[("<age>" if i in age else v) for i, v in enumerate(r["cells"])] for r in table["rows"]]
    objects = [
        {"kind": r["object"].get("kind"), "apiVersion": r["object"].get("apiVersion")}
        for r in table["rows"]
    ]
    return {"kind": table["kind"], "columns": cols, "rows": rows, "objects": objects}


def _mask_age(text: str) -> str:
    return re.sub(r"\b\d+(s|m\d*s?|h|d)\b", "<age>", text)


@check("printer columns")
def check_printer_columns_table(s: Server, ns: str) -> Any:
    """The Table a client asks for: column definitions from additionalPrinterColumns, cells."""
    create(s, llms_path(ns), scaler("a"))
    s.ok(
        "PATCH",
        llms_path(ns, "a", "status"),
        {"status": {"currentReplicas": 2}},
        content_type=MERGE,
    )
    return _table(s, llms_path(ns))


@check("printer columns")
def check_kubectl_get_scalers(s: Server, ns: str) -> Any:
    """kubectl get, -o wide, by short name and by category."""
    create(s, llms_path(ns), scaler("a"))
    create(s, llms_path(ns), scaler("b", minReplicas=0))
    out = {}
    for args in (("llmscalers",), ("llms", "-o", "wide"), ("llm",), ("llms", "a", "--no-headers")):
        proc = s.kubectl("get", "-n", ns, *args)
        out[" ".join(args)] = [proc.rc, _mask_age(proc.out), proc.err]
    return out


@check("printer columns")
def check_kubectl_get_custom_columns(s: Server, ns: str) -> Any:
    create(s, llms_path(ns), scaler("a"))
    proc = s.kubectl(
        "get",
        "-n",
        ns,
        "llms",
        "-o",
        "custom-columns=N:.metadata.name,P:.spec.metricProvider,S:.spec.scaleDown.behavior",
    )
    jp = s.kubectl("get", "-n", ns, "llms", "a", "-o", "jsonpath={.spec.syncPeriodSeconds}")
    return [proc.out, jp.out]


@check("printer columns")
def check_deployment_table(s: Server, ns: str) -> Any:
    """The built-in Table of a Deployment (what kubectl get deploy prints)."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0))
    return _table(s, apps_path(ns, "deployments"))


@check("printer columns")
def check_kubectl_get_deployment_wide(s: Server, ns: str) -> Any:
    """kubectl get deploy / rs -o wide: the priority-1 columns of the built-in tables."""
    create(s, apps_path(ns, "deployments"), deployment("web", 0))
    wait_for(
        lambda: s.ok("GET", apps_path(ns, "replicasets"))["items"],
        timeout=60,
        what="the Deployment's ReplicaSet",
    )
    out = []
    for what in ("deployments", "replicasets"):
        proc = s.kubectl("get", "-n", ns, what, "-o", "wide")
        text = re.sub(r"(web-|pod-template-hash=)[a-z0-9]+", r"\1<hash>", proc.out)
        out.append([proc.rc, _mask_age(text)])
    return out


@check("printer columns")
def check_configmap_table(s: Server, ns: str) -> Any:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"t": "1"}},
    }
    body["data"] = {"a": "1", "b": "2"}
    create(s, core_path(ns, "configmaps"), body)
    return _table(s, core_path(ns, "configmaps") + "?labelSelector=t%3D1")


@check("kubectl explain")
def check_explain_scaler(s: Server, ns: str) -> Any:
    proc = s.kubectl("explain", "llmscalers")
    return [proc.rc, proc.out, proc.err]


@check("kubectl explain")
def check_explain_scaler_field(s: Server, ns: str) -> Any:
    proc = s.kubectl("explain", "llms.spec.scaleDown.behavior")
    return [proc.rc, proc.out, proc.err]


@check("kubectl explain")
def check_explain_scaler_recursive(s: Server, ns: str) -> Any:
    proc = s.kubectl("explain", "llmscaler.spec", "--recursive")
    return [proc.rc, proc.out, proc.err]


@check("kubectl explain")
def check_explain_deployment_replicas(s: Server, ns: str) -> Any:
    proc = s.kubectl("explain", "deployment.spec.replicas")
    return [proc.rc, proc.out, proc.err]


@check("kubectl explain")
def check_explain_unknown_field(s: Server, ns: str) -> Any:
    proc = s.kubectl("explain", "llms.spec.nope")
    return [proc.rc, proc.out, proc.err]


# ---- errors, discovery, patch types ------------------------------------------------------------


@check("API basics")
def check_errors_not_found_and_exists(s: Server, ns: str) -> Any:
    create(s, llms_path(ns), scaler("a"))
    return {
        "not_found": s.call("GET", llms_path(ns, "zz")).status(),
        "exists": create(s, llms_path(ns), scaler("a")).status(),
        "deploy_not_found": s.call("GET", apps_path(ns, "deployments", "zz")).status(),
        "kubectl": s.kubectl("get", "-n", ns, "llms", "zz").err,
    }


@check("API basics")
def check_errors_stale_update(s: Server, ns: str) -> Any:
    """An update carrying an old resourceVersion is a 409 Conflict."""
    obj = create(s, llms_path(ns), scaler("a")).body
    s.ok("PATCH", llms_path(ns, "a"), {"spec": {"maxReplicas": 5}}, content_type=MERGE)
    return s.call("PUT", llms_path(ns, "a"), obj).status()


@check("API basics")
def check_errors_namespace_missing(s: Server, ns: str) -> Any:
    return create(s, llms_path(ns + "-none"), scaler("a")).status()


@check("API basics")
def check_patch_types_on_custom_resource(s: Server, ns: str) -> Any:
    """Strategic merge is refused (415) for custom resources; JSON patch works, and a failed
    test operation is reported."""
    create(s, llms_path(ns), scaler("a"))
    path = llms_path(ns, "a")
    strategic = s.call("PATCH", path, {"spec": {"maxReplicas": 3}}, content_type=STRATEGIC).status()
    ok = s.call(
        "PATCH",
        path,
        [{"op": "replace", "path": "/spec/maxReplicas", "value": 3}],
        content_type=JSON_PATCH,
    )
    failed = s.call(
        "PATCH",
        path,
        [{"op": "test", "path": "/spec/maxReplicas", "value": 9}],
        content_type=JSON_PATCH,
    )
    missing = s.call(
        "PATCH", path, [{"op": "remove", "path": "/spec/nope"}], content_type=JSON_PATCH
    )
    return {
        "strategic": strategic,
        "json": [ok.code, ok.body["spec"]["maxReplicas"]],
        "test_failed": failed.status(),
        "remove_missing": missing.status(),
    }


@check("API basics")
def check_discovery_of_the_crd(s: Server, ns: str) -> Any:
    """The group's APIResourceList: names, verbs, short names, categories, status subresource."""
    lst = s.ok("GET", f"/apis/{LLMS_API}")
    resources = []
    for r in lst["resources"]:
        entry = {
            k: r.get(k)
            for k in ("name", "singularName", "namespaced", "kind", "shortNames", "categories")
        }
        entry["verbs"] = sorted(r.get("verbs") or [])
        resources.append(entry)
    group = s.ok("GET", f"/apis/{GROUP}")
    return {"groupVersion": lst["groupVersion"], "resources": resources, "group": group}


@check("API basics")
def check_kubectl_api_resources(s: Server, ns: str) -> Any:
    proc = s.kubectl("api-resources", f"--api-group={GROUP}", "-o", "wide")
    return [proc.rc, proc.out]


@check("API basics")
def check_dry_run_and_delete_status(s: Server, ns: str) -> Any:
    """Dry-run create stores nothing; delete answers with the object (custom) or a Status."""
    create(
        s,
        core_path(ns, "configmaps"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    )
    create(s, llms_path(ns), scaler("a"))
    cm = s.call("DELETE", core_path(ns, "configmaps", "c"))
    cr = s.call("DELETE", llms_path(ns, "a"))
    return {
        "configmap": [cm.code, cm.body.get("kind"), cm.body.get("status")],
        "llms": [
            cr.code,
            cr.body.get("kind"),
            cr.body.get("status"),
            sorted(cr.body.get("details") or {}),
        ],
    }


@check("API basics")
def check_kubectl_get_yaml_of_scaler(s: Server, ns: str) -> Any:
    """kubectl get -o yaml of an applied sample round-trips the same document."""
    s.kubectl(
        "apply",
        "--server-side",
        "--field-manager=ops",
        "-n",
        ns,
        "-f",
        "-",
        input=yaml.safe_dump(scaler("a")),
    )
    obj = yaml.safe_load(s.kubectl("get", "-n", ns, "llms", "a", "-o", "yaml").out)
    return drop_times(strip_meta(obj))
