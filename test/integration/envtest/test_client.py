"""Conformance tests driving the embedded API server with the official Python client."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import kubernetes.client
import pytest
import urllib3
import yaml
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from llmscaler_runtime.envtest import Environment, StatusError

from .conftest import deployment

pytestmark = [
    pytest.mark.integration,
    pytest.mark.envtest_embedded(
        "these tests pin the emulator itself (its HTTP surface, fault injector and storage); "
        "test/integration/conformance compares it with kube-apiserver"
    ),
]


_POOL = urllib3.PoolManager(maxsize=128)


def _url(api: kubernetes.client.ApiClient, path: str, query: list[tuple[str, str]] | None) -> str:
    return api.configuration.host + path + ("?" + urlencode(query) if query else "")


def _raw(
    api: kubernetes.client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    ctype: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> tuple[int, Any]:
    """Raw request to the same server the official client uses; returns (status, JSON)."""
    data = None if body is None else json.dumps(body).encode()
    resp = _POOL.request(
        method,
        _url(api, path, query),
        body=data,
        headers={"Content-Type": ctype, "Accept": "application/json"},
    )
    return resp.status, json.loads(resp.data or b"null")


def _deploys(dyn: DynamicClient) -> Any:
    return dyn.resources.get(api_version="apps/v1", kind="Deployment")


def _widgets(dyn: DynamicClient) -> Any:
    return dyn.resources.get(api_version="test.envtest.dev/v1", kind="Widget")


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "test.envtest.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"targetRef": {"name": "web"}, **spec},
    }


# ---- object metadata semantics --------------------------------------------------------------


def test_create_sets_system_metadata(dyn: DynamicClient, ns: str) -> None:
    """Create: uid, creationTimestamp, generation 1 and a resourceVersion from one counter."""
    a = _deploys(dyn).create(body=deployment("a"), namespace=ns).to_dict()
    b = _deploys(dyn).create(body=deployment("b"), namespace=ns).to_dict()
    assert a["metadata"]["uid"] and a["metadata"]["creationTimestamp"].endswith("Z")
    assert a["metadata"]["generation"] == 1
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    assert a["spec"]["template"]["spec"]["restartPolicy"] == "Always"


def test_create_existing_is_already_exists(
    api_client: kubernetes.client.ApiClient, ns: str
) -> None:
    """POST of an existing name: 409 AlreadyExists."""
    apps = kubernetes.client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(ns, deployment("dup"))
    with pytest.raises(ApiException) as info:
        apps.create_namespaced_deployment(ns, deployment("dup"))
    assert info.value.status == 409
    body = json.loads(info.value.body)
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'deployments.apps "dup" already exists'


def test_update_with_stale_resource_version_conflicts(dyn: DynamicClient, ns: str) -> None:
    """PUT: optimistic concurrency on metadata.resourceVersion, 409 with the real message."""
    obj = _deploys(dyn).create(body=deployment("occ"), namespace=ns).to_dict()
    first = json.loads(json.dumps(obj))
    first["spec"]["replicas"] = 3
    _deploys(dyn).replace(body=first, namespace=ns)
    obj["spec"]["replicas"] = 4
    with pytest.raises(ApiException) as info:
        _deploys(dyn).replace(body=obj, namespace=ns)
    assert info.value.status == 409
    assert json.loads(info.value.body)["message"] == (
        'Operation cannot be fulfilled on deployments.apps "occ": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_generation_ignores_metadata_and_status(
    dyn: DynamicClient, ns: str, env: Environment
) -> None:
    """generation bumps on spec changes only; status writes go through /status and the main
    resource ignores status (kinds with a status subresource)."""
    d = _deploys(dyn)
    d.create(body=deployment("g"), namespace=ns)
    d.patch(
        name="g",
        namespace=ns,
        body={"metadata": {"labels": {"x": "y"}}},
        content_type="application/merge-patch+json",
    )
    d.patch(
        name="g",
        namespace=ns,
        body={"status": {"replicas": 9}},
        content_type="application/merge-patch+json",
    )
    got = d.get(name="g", namespace=ns).to_dict()
    assert got["metadata"]["generation"] == 1 and "replicas" not in (got.get("status") or {})
    env.storage.patch_merge(
        "apps/v1",
        "Deployment",
        ns,
        "g",
        {"status": {"replicas": 2}, "spec": {"replicas": 99}},
        subresource="status",
    )
    got = d.get(name="g", namespace=ns).to_dict()
    assert got["status"]["replicas"] == 2 and got["spec"]["replicas"] == 2
    assert got["metadata"]["generation"] == 1
    d.patch(
        name="g",
        namespace=ns,
        body={"spec": {"replicas": 5}},
        content_type="application/merge-patch+json",
    )
    assert d.get(name="g", namespace=ns).to_dict()["metadata"]["generation"] == 2


def test_noop_update_keeps_resource_version(dyn: DynamicClient, ns: str) -> None:
    """An update that changes nothing does not bump resourceVersion (no watch event)."""
    d = _deploys(dyn)
    obj = d.create(body=deployment("noop"), namespace=ns).to_dict()
    again = d.replace(body=obj, namespace=ns).to_dict()
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


# ---- list / selectors / paging --------------------------------------------------------------


def test_list_label_and_field_selectors(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """Label selectors (equality and set-based) and field selectors filter lists."""
    core = kubernetes.client.CoreV1Api(api_client)
    for name, tier in (("a", "web"), ("b", "db"), ("c", None)):
        labels = {"tier": tier} if tier else {"other": "1"}
        core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})

    def names(**kw: Any) -> list[str]:
        return sorted(i.metadata.name for i in core.list_namespaced_config_map(ns, **kw).items)

    assert names(label_selector="tier=web") == ["a"]
    assert names(label_selector="tier in (web,db)") == ["a", "b"]
    assert names(label_selector="tier notin (web)") == ["b", "c"]
    assert names(label_selector="!tier") == ["c"]
    assert names(label_selector="tier,tier!=db") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b") == ["a", "c"]


def test_pod_field_selectors(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """Pods support status.phase and spec.nodeName field selectors; others are a 400."""
    core = kubernetes.client.CoreV1Api(api_client)
    pod = {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    core.create_namespaced_pod(ns, pod)
    assert len(core.list_namespaced_pod(ns, field_selector="status.phase=Pending").items) == 1
    assert len(core.list_namespaced_pod(ns, field_selector="spec.nodeName=n2").items) == 0
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(ns, field_selector="status.phase=x")
    assert info.value.status == 400


def test_list_limit_and_continue(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """limit/continue pages through a list; remainingItemCount counts what is left."""
    core = kubernetes.client.CoreV1Api(api_client)
    for i in range(5):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"cm{i}"}})
    seen: list[str] = []
    page = core.list_namespaced_config_map(ns, limit=2)
    assert page.metadata.remaining_item_count == 3
    seen += [i.metadata.name for i in page.items]
    while page.metadata._continue:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=page.metadata._continue)
        seen += [i.metadata.name for i in page.items]
    assert seen == [f"cm{i}" for i in range(5)]


# ---- watch -----------------------------------------------------------------------------------


def _stream(
    api: kubernetes.client.ApiClient,
    path: str,
    query: list[tuple[str, str]],
    want: int,
    timeout: float = 10,
) -> list[dict[str, Any]]:
    """Read ``want`` watch events (or until the server closes the stream)."""
    resp = _POOL.request(
        "GET",
        _url(api, path, [("watch", "true"), *query]),
        headers={"Accept": "application/json"},
        preload_content=False,
        timeout=urllib3.Timeout(connect=5, read=timeout),
    )
    events: list[dict[str, Any]] = []
    buf = b""
    try:
        for chunk in resp.stream(1024, decode_content=False):
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    events.append(json.loads(line))
            if len(events) >= want:
                break
    finally:
        resp.release_conn()
    return events


def test_watch_resume_from_resource_version(
    api_client: kubernetes.client.ApiClient, ns: str, env: Environment
) -> None:
    """Watch from a resourceVersion replays later ADDED/MODIFIED/DELETED events in order."""
    core = kubernetes.client.CoreV1Api(api_client)
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "w"}, "data": {"v": "1"}})
    core.patch_namespaced_config_map("w", ns, {"data": {"v": "2"}})
    core.delete_namespaced_config_map("w", ns)
    events = _stream(
        api_client, f"/api/v1/namespaces/{ns}/configmaps", [("resourceVersion", start)], want=3
    )
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)


def test_watch_too_old_resource_version_is_gone(ns: str) -> None:
    """A resume point that fell out of the bounded history yields a 410 Expired ERROR event."""
    with Environment(watch_history=3) as small:
        with kubernetes.client.ApiClient(small.start()) as api:
            core = kubernetes.client.CoreV1Api(api)
            for i in range(6):
                core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
            events = _stream(
                api, "/api/v1/namespaces/default/configmaps", [("resourceVersion", "1")], want=1
            )
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"
    assert events[0]["object"]["message"].startswith("too old resource version: 1 (")


def test_watch_label_selector_and_timeout(
    api_client: kubernetes.client.ApiClient, ns: str, env: Environment
) -> None:
    """A selector watch sees only matching objects; timeoutSeconds ends the stream."""
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "x", "labels": {"k": "v"}}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "y"}})
    started = time.monotonic()
    events = _stream(
        api_client,
        f"/api/v1/namespaces/{ns}/configmaps",
        [("labelSelector", "k=v"), ("timeoutSeconds", "1")],
        want=99,
    )
    assert [e["object"]["metadata"]["name"] for e in events] == ["x"]
    assert time.monotonic() - started < 5


def test_watch_bookmarks(ns: str) -> None:
    """allowWatchBookmarks: the server sends BOOKMARKs carrying the current resourceVersion."""
    with Environment() as e:
        e.server.bookmark_interval = 0.2
        with kubernetes.client.ApiClient(e.start()) as api:
            events = _stream(
                api,
                "/api/v1/namespaces/default/configmaps",
                [("allowWatchBookmarks", "true"), ("timeoutSeconds", "3")],
                want=1,
            )
    assert events[0]["type"] == "BOOKMARK"
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= 1


def test_watch_python_client_stream(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """The official client's Watch helper decodes our stream into typed events."""
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "pw"}})
    w = kubernetes.watch.Watch()
    got = []
    for ev in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=2):
        got.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert got == [("ADDED", "pw")]


def test_many_concurrent_watchers_receive_a_write(
    api_client: kubernetes.client.ApiClient, ns: str, env: Environment
) -> None:
    """100 concurrent watches all receive the same write."""
    core = kubernetes.client.CoreV1Api(api_client)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    results: list[int] = []
    lock = threading.Lock()

    def watch_one() -> None:
        ev = _stream(
            api_client,
            f"/api/v1/namespaces/{ns}/configmaps",
            [("resourceVersion", rv), ("timeoutSeconds", "30")],
            want=1,
            timeout=35,
        )
        with lock:
            results.append(len(ev))

    threads = [threading.Thread(target=watch_one) for _ in range(100)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while env.storage.watcher_count < 100 and time.monotonic() < deadline:
        time.sleep(0.05)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "fanout"}})
    for t in threads:
        t.join(timeout=30)
    assert results == [1] * 100


# ---- server-side apply (client) ------------------------------------------------------------


def test_ssa_shared_ownership_and_field_removal(
    api_client: kubernetes.client.ApiClient, ns: str
) -> None:
    """SSA: equal values are co-owned without conflict; a field dropped from the sole owner's
    apply configuration is removed from the object."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/ssa2"
    ctype = "application/apply-patch+yaml"
    d = deployment("ssa2")
    d["metadata"]["labels"] = {"keep": "1", "drop": "1"}
    code, _ = _raw(api_client, "PATCH", path, d, ctype, [("fieldManager", "one")])
    assert code == 201
    code, body = _raw(
        api_client,
        "PATCH",
        path,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "ssa2"},
            "spec": {"replicas": 2},
        },
        ctype,
        [("fieldManager", "two")],
    )
    assert code == 200, body
    owners = [
        m["manager"]
        for m in body["metadata"]["managedFields"]
        if "f:replicas" in m["fieldsV1"].get("f:spec", {})
    ]
    assert sorted(owners) == ["one", "two"]
    d["metadata"]["labels"] = {"keep": "1"}
    code, body = _raw(api_client, "PATCH", path, d, ctype, [("fieldManager", "one")])
    assert body["metadata"]["labels"] == {"keep": "1"}


def test_update_records_update_manager(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """Non-apply writes record an Update entry for ?fieldManager (or the user agent prefix)."""
    apps = kubernetes.client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(ns, deployment("upd"), field_manager="creator")
    apps.patch_namespaced_deployment("upd", ns, {"spec": {"replicas": 6}}, field_manager="patcher")
    got = apps.read_namespaced_deployment("upd", ns)
    entries = {m.manager: m for m in got.metadata.managed_fields}
    assert entries["patcher"].operation == "Update"
    assert entries["patcher"].fields_v1 == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries["creator"].fields_v1["f:spec"]


# ---- scale / status subresources ------------------------------------------------------------


def test_scale_subresource_roundtrip(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """GET/PUT /scale use autoscaling/v1 Scale with the selector rendered as a string."""
    apps = kubernetes.client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(ns, deployment("scl"))
    scale = apps.read_namespaced_deployment_scale("scl", ns)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=scl"
    scale.spec.replicas = 6
    apps.replace_namespaced_deployment_scale("scl", ns, scale)
    assert apps.read_namespaced_deployment("scl", ns).spec.replicas == 6
    with pytest.raises(ApiException) as info:
        apps.replace_namespaced_deployment_scale("scl", ns, scale)  # stale resourceVersion
    assert info.value.status == 409


def test_crd_status_subresource(dyn: DynamicClient, ns: str) -> None:
    """CRD with status subresource: main writes drop status; /status writes change only status."""
    w = _widgets(dyn)
    body = widget("st")
    body["status"] = {"phase": "Lost"}
    created = w.create(body=body, namespace=ns).to_dict()
    assert "status" not in created
    created["status"] = {"phase": "Ready"}
    created["spec"]["minReplicas"] = 4
    updated = (
        w.replace(body=created, namespace=ns, subresource="status").to_dict()
        if False
        else w.status.replace(body=created, namespace=ns).to_dict()
    )
    assert updated["status"]["phase"] == "Ready" and updated["spec"]["minReplicas"] == 1


# ---- CRDs ------------------------------------------------------------------------------------


def test_crd_defaulting_nested(dyn: DynamicClient, ns: str) -> None:
    """Structural defaulting on create and update, including nested objects."""
    w = _widgets(dyn)
    got = w.create(body=widget("d", scaleDown={}), namespace=ns).to_dict()
    assert got["spec"]["syncPeriodSeconds"] == 15
    assert got["spec"]["targetRef"]["kind"] == "Deployment"
    assert got["spec"]["scaleDown"]["stabilizationSeconds"] == 300
    got = w.patch(
        name="d",
        namespace=ns,
        body={"spec": {"syncPeriodSeconds": None}},
        content_type="application/merge-patch+json",
    ).to_dict()
    assert got["spec"]["syncPeriodSeconds"] == 15


def test_crd_cel_rules(dyn: DynamicClient, ns: str) -> None:
    """x-kubernetes-validations: CEL rules reject with their message; transitions see oldSelf."""
    w = _widgets(dyn)
    with pytest.raises(ApiException) as info:
        w.create(body=widget("cel", minReplicas=5, maxReplicas=2), namespace=ns)
    body = json.loads(info.value.body)
    assert info.value.status == 422
    # A rule on an object shows no value (kube-apiserver omits objects and arrays).
    assert body["message"] == (
        'Widget.test.envtest.dev "cel" is invalid: spec: Invalid value: '
        "minReplicas must be <= maxReplicas"
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "field": "spec",
            "message": "Invalid value: minReplicas must be <= maxReplicas",
        }
    ]
    w.create(body=widget("cel", mode="Fast"), namespace=ns)
    with pytest.raises(ApiException) as info:
        w.patch(
            name="cel",
            namespace=ns,
            body={"spec": {"mode": "Slow"}},
            content_type="application/merge-patch+json",
        )
    assert (
        'spec.mode: Invalid value: "Slow": mode cannot leave Fast'
        in json.loads(info.value.body)["message"]
    )


def test_crd_openapi_validation_wording(dyn: DynamicClient, ns: str) -> None:
    """OpenAPI v3 checks: enum, maxLength, pattern, maxItems, type — all listed in one 422."""
    w = _widgets(dyn)
    bad = widget(
        "v",
        mode="Turbo",
        tags=["a", "b", "c", "d"],
        scaleDown={"policy": "Newest"},
        maxReplicas="ten",
    )
    bad["spec"]["targetRef"]["name"] = "x" * 64
    with pytest.raises(ApiException) as info:
        w.create(body=bad, namespace=ns)
    body = json.loads(info.value.body)
    fields = {c["field"]: (c["reason"], c["message"]) for c in body["details"]["causes"]}
    assert fields["spec.mode"] == (
        "FieldValueNotSupported",
        'Unsupported value: "Turbo": supported values: "Fast", "Slow"',
    )
    assert fields["spec.maxReplicas"][1] == (
        'Invalid value: "string": spec.maxReplicas in body must be of type integer: "string"'
    )
    assert fields["spec.targetRef.name"] == (
        "FieldValueTooLong",
        "Too long: may not be more than 63 bytes",
    )
    assert fields["spec.scaleDown.policy"][1].endswith("should match '^(Cache|Oldest)$'")
    assert fields["spec.tags"] == ("FieldValueTooMany", "Too many: 4: must have at most 3 items")


def test_crd_lifecycle_discovery(api_client: kubernetes.client.ApiClient, env: Environment) -> None:
    """Creating a CRD serves the resource (Established) and updates discovery; deleting it stops
    serving it and removes its objects."""
    ext = kubernetes.client.ApiextensionsV1Api(api_client)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.life.envtest.dev"},
        "spec": {
            "group": "life.envtest.dev",
            "scope": "Cluster",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    created = ext.create_custom_resource_definition(crd)
    conds = {c.type: c.status for c in created.status.conditions}
    assert conds == {"Established": "True", "NamesAccepted": "True"}
    code, rl = _raw(api_client, "GET", "/apis/life.envtest.dev/v1")
    assert code == 200 and rl["resources"][0]["name"] == "gadgets"
    code, _ = _raw(
        api_client,
        "POST",
        "/apis/life.envtest.dev/v1/gadgets",
        {
            "apiVersion": "life.envtest.dev/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "anything": {"goes": 1},
        },
    )
    assert code == 201
    ext.delete_custom_resource_definition("gadgets.life.envtest.dev")
    code, _ = _raw(api_client, "GET", "/apis/life.envtest.dev/v1/gadgets")
    assert code == 404
    assert "life.envtest.dev" not in {
        g["name"] for g in _raw(api_client, "GET", "/apis")[1]["groups"]
    }


# ---- deletion --------------------------------------------------------------------------------


def test_finalizers_hold_deletion(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """An object with finalizers gets deletionTimestamp on delete and goes away when the last
    finalizer is removed; new finalizers cannot be added meanwhile."""
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "f", "finalizers": ["x/y"]}})
    core.delete_namespaced_config_map("f", ns)
    held = core.read_namespaced_config_map("f", ns)
    assert held.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_config_map("f", ns, {"metadata": {"finalizers": ["x/y", "z/w"]}})
    assert info.value.status == 422
    core.patch_namespaced_config_map("f", ns, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("f", ns)
    assert info.value.status == 404


def test_graceful_pod_deletion(
    api_client: kubernetes.client.ApiClient, ns: str, env: Environment
) -> None:
    """Pods bound to a node are only marked for deletion (deletionGracePeriodSeconds); unbound
    pods are removed at once; grace 0 removes a bound pod."""
    core = kubernetes.client.CoreV1Api(api_client)
    spec = {"containers": [{"name": "c", "image": "busybox"}]}
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "bound"}, "spec": {**spec, "nodeName": "envtest-node"}}
    )
    core.create_namespaced_pod(ns, {"metadata": {"name": "free"}, "spec": spec})
    core.delete_namespaced_pod("bound", ns, grace_period_seconds=30)
    core.delete_namespaced_pod("free", ns)
    pod = core.read_namespaced_pod("bound", ns)
    assert pod.metadata.deletion_grace_period_seconds == 30
    names = [p.metadata.name for p in core.list_namespaced_pod(ns).items]
    assert names == ["bound"]
    env.storage.delete("v1", "Pod", ns, "bound", grace_period_seconds=0)
    assert core.list_namespaced_pod(ns).items == []


def test_namespace_deletion_removes_contents(
    api_client: kubernetes.client.ApiClient, ns: str
) -> None:
    """Deleting a namespace deletes its objects, then the namespace; creating into a
    terminating namespace is forbidden."""
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "held", "finalizers": ["a/b"]}})
    core.delete_namespace(ns)
    assert core.read_namespace(ns).status.phase == "Terminating"
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "new"}})
    assert info.value.status == 403
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as info:
        core.read_namespace(ns)
    assert info.value.status == 404


def test_orphan_propagation_strips_owner_references(
    api_client: kubernetes.client.ApiClient, ns: str
) -> None:
    """propagationPolicy=Orphan removes the owner's reference from its dependents."""
    core = kubernetes.client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(ns, {"metadata": {"name": "dep", "ownerReferences": [ref]}})
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Orphan")
    # As on a real cluster the garbage collector does it, behind the orphan finalizer.
    deadline = time.monotonic() + 10
    while core.read_namespaced_config_map("dep", ns).metadata.owner_references is not None:
        assert time.monotonic() < deadline, "dependent still owned after 10 s"
        time.sleep(0.02)


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "ctype", "code", "reason", "needle"),
    [
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            b"{nope",
            "application/json",
            400,
            "BadRequest",
            "json parse error",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            b"a: [",
            "application/yaml",
            400,
            "BadRequest",
            "YAML",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            b"{}",
            "application/cbor",
            415,
            "UnsupportedMediaType",
            "unknown format",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/missing",
            b"{}",
            "application/merge-patch+json",
            404,
            "NotFound",
            'configmaps "missing" not found',
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/x",
            b"{}",
            "text/plain",
            415,
            "UnsupportedMediaType",
            "application/merge-patch+json",
        ),
        (
            "GET",
            "/apis/apps/v1/namespaces/default/frobs",
            None,
            "application/json",
            404,
            "NotFound",
            "could not find the requested resource",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=abc",
            None,
            "application/json",
            400,
            "BadRequest",
            "invalid resourceVersion",
        ),
        (
            "POST",
            "/api/v1/namespaces/nosuchns/configmaps",
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}',
            "application/json",
            404,
            "NotFound",
            'namespaces "nosuchns" not found',
        ),
    ],
)
def test_bad_input_gets_status(
    env: Environment,
    method: str,
    path: str,
    body: bytes | None,
    ctype: str,
    code: int,
    reason: str,
    needle: str,
) -> None:
    """Malformed bodies, wrong content types, bad resourceVersions, missing objects/resources:
    the real status code and a Status body; the server keeps serving afterwards."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        env.url + path, data=body, method=method, headers={"Content-Type": ctype}
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    status = json.loads(info.value.read())
    assert info.value.code == code
    assert status["kind"] == "Status" and status["reason"] == reason and status["code"] == code
    assert needle in status["message"]
    with urllib.request.urlopen(env.url + "/version", timeout=5) as ok:
        assert ok.status == 200


def test_put_non_numeric_resource_version(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """A resourceVersion that is not a number is a 400, not a conflict."""
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "rv"}})
    code, body = _raw(
        api_client,
        "PUT",
        f"/api/v1/namespaces/{ns}/configmaps/rv",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "rv", "resourceVersion": "abc"},
        },
    )
    assert code == 400 and body["reason"] == "BadRequest"


# ---- faults ----------------------------------------------------------------------------------


def test_fault_injection(
    api_client: kubernetes.client.ApiClient, ns: str, env: Environment
) -> None:
    """Injected errors by path regex, conflicts on the next N writes and forced 410 on watch."""
    core = kubernetes.client.CoreV1Api(api_client)
    faults = env.server.faults
    try:
        faults.add_error(r"/configmaps/boom$", code=503, count=1)
        with pytest.raises(ApiException) as info:
            core.read_namespaced_config_map("boom", ns)
        assert info.value.status == 503
        with pytest.raises(ApiException) as info:
            core.read_namespaced_config_map("boom", ns)
        assert info.value.status == 404  # count exhausted
        faults.conflict_next_writes(1)
        with pytest.raises(ApiException) as info:
            core.create_namespaced_config_map(ns, {"metadata": {"name": "c1"}})
        assert info.value.status == 409
        core.create_namespaced_config_map(ns, {"metadata": {"name": "c1"}})
        faults.force_gone_on_next_watch()
        events = _stream(api_client, f"/api/v1/namespaces/{ns}/configmaps", [], want=1)
        assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    finally:
        faults.clear()


def test_drop_watches_and_recorder(
    api_client: kubernetes.client.ApiClient, ns: str, env: Environment
) -> None:
    """drop_watches closes open watch streams; the recorder sees verb/resource/namespace."""
    faults = env.server.faults
    faults.clear_requests()
    base = env.storage.watcher_count
    out: list[list[dict[str, Any]]] = []
    t = threading.Thread(
        target=lambda: out.append(
            _stream(
                api_client,
                f"/api/v1/namespaces/{ns}/configmaps",
                [("timeoutSeconds", "30")],
                want=99,
                timeout=40,
            )
        )
    )
    t.start()
    deadline = time.monotonic() + 10
    while env.storage.watcher_count <= base and time.monotonic() < deadline:
        time.sleep(0.02)
    assert faults.drop_watches() >= 1
    t.join(timeout=10)
    assert not t.is_alive() and out == [[]]
    watch = next(r for r in faults.requests() if r.verb == "watch" and r.namespace == ns)
    assert (watch.resource, watch.namespace, watch.group) == ("configmaps", ns, "")


def test_tls_environment() -> None:
    """Environment(tls=True) serves HTTPS with a self-signed CA written into the kubeconfig."""
    with Environment(tls=True) as e:
        assert e.url.startswith("https://")
        with kubernetes.client.ApiClient(e.start()) as api:
            assert kubernetes.client.VersionApi(api).get_code().git_version.startswith("v1.32")


LLMSCALER_CRD = (
    Path(__file__).resolve().parents[3]
    / "config"
    / "crd"
    / "bases"
    / "autoscaling.modelsphere.dev_llmscalers.yaml"
)


def test_llmscaler_crd_defaults_and_exact_rejection(
    dyn: DynamicClient, ns: str, env: Environment
) -> None:
    """The project's LLMScaler CRD: syncPeriodSeconds defaults to 15; a bad object is a 422
    listing every failing field in the real server's words."""
    if not LLMSCALER_CRD.exists():
        pytest.skip("LLMScaler CRD not generated yet")
    try:
        env.storage.create(yaml.safe_load(LLMSCALER_CRD.read_text()))
    except StatusError as err:
        assert err.code == 409
    res = dyn.resources.get(api_version="autoscaling.modelsphere.dev/v1alpha1", kind="LLMScaler")
    good = {
        "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
        "kind": "LLMScaler",
        "metadata": {"name": "ok"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "serverAddress": "http://decider:8080",
            "minReplicas": 1,
            "maxReplicas": 4,
            "metricProvider": "Custom",
            "customProvider": {"serviceId": "s"},
        },
    }
    assert res.create(body=good, namespace=ns).to_dict()["spec"]["syncPeriodSeconds"] == 15
    bad = json.loads(json.dumps(good))
    bad["metadata"]["name"] = "x"
    bad["spec"]["minReplicas"] = -1
    del bad["spec"]["targetRef"]
    with pytest.raises(ApiException) as info:
        res.create(body=bad, namespace=ns)
    assert info.value.status == 422
    # A Required error blocks the CRD's CEL rules, and kube-apiserver says so.
    assert json.loads(info.value.body)["message"] == (
        'LLMScaler.autoscaling.modelsphere.dev "x" is invalid: [spec.minReplicas: Invalid value: '
        "-1: spec.minReplicas in body should be greater than or equal to 0, spec.targetRef: "
        "Required value, <nil>: Invalid value: null: some validation rules were not checked "
        "because the object was invalid; correct the existing errors to complete validation]"
    )


def test_foreground_deletion_waits_for_dependents(
    api_client: kubernetes.client.ApiClient, ns: str
) -> None:
    """propagationPolicy=Foreground: the owner gets the foregroundDeletion finalizer and a
    deletionTimestamp and disappears only after the garbage collector removed its dependents."""
    core = kubernetes.client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "fg-owner"}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "fg-owner",
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": True,
    }
    core.create_namespaced_config_map(
        ns, {"metadata": {"name": "fg-dep", "ownerReferences": [ref]}}
    )
    held = core.delete_namespaced_config_map("fg-owner", ns, propagation_policy="Foreground")
    assert isinstance(held, dict)  # the client cannot type the returned object, hands a dict
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert held["metadata"]["deletionTimestamp"]
    deadline = time.monotonic() + 10
    remaining = ["fg-owner", "fg-dep"]
    while remaining and time.monotonic() < deadline:
        remaining = [i.metadata.name for i in core.list_namespaced_config_map(ns).items]
        time.sleep(0.05)
    assert remaining == []


def test_ssa_on_status_subresource(api_client: kubernetes.client.ApiClient, ns: str) -> None:
    """SSA on /status: the manager entry carries subresource status; spec and generation are
    untouched; dropping a field from the sole owner's spec apply re-defaults it."""
    base = f"/apis/test.envtest.dev/v1/namespaces/{ns}/widgets/ssa"
    ctype = "application/apply-patch+yaml"
    code, _ = _raw(
        api_client, "PATCH", base, widget("ssa", minReplicas=3), ctype, [("fieldManager", "op")]
    )
    assert code == 201
    status = {
        "apiVersion": "test.envtest.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "ssa"},
        "status": {"phase": "Ready"},
    }
    code, body = _raw(
        api_client, "PATCH", base + "/status", status, ctype, [("fieldManager", "op-status")]
    )
    assert code == 200 and body["status"] == {"phase": "Ready"}
    entries = {(m["manager"], m.get("subresource")): m for m in body["metadata"]["managedFields"]}
    assert entries[("op-status", "status")]["fieldsV1"] == {"f:status": {"f:phase": {}}}
    assert body["metadata"]["generation"] == 1 and body["spec"]["minReplicas"] == 3
    code, body = _raw(api_client, "PATCH", base, widget("ssa"), ctype, [("fieldManager", "op")])
    assert body["spec"]["minReplicas"] == 1 and body["status"] == {"phase": "Ready"}


def test_immutable_selector_and_env_client(env: Environment, ns: str) -> None:
    """A workload's spec.selector is immutable (422); env.client() speaks to the same server."""
    kube = pytest.importorskip("llmscaler_runtime.kube")
    client = env.client()
    assert isinstance(client, kube.Client)
    client.create(deployment("imm"), namespace=ns)
    obj = client.get("apps/v1", "Deployment", "imm", ns)
    obj["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(kube.Invalid) as info:
        client.update(obj)
    assert 'spec.selector: Invalid value: "object": field is immutable' in info.value.message
