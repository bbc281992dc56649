from __future__ import annotations

import json
import threading

import pytest

from llmscaler_runtime.kube import (
    AlreadyExists,
    Client,
    Conflict,
    Gone,
    InternalError,
    Invalid,
    NoKindMatch,
    NotFound,
    ServerTimeout,
    TooManyRequests,
    TransportError,
)

from .scripted_server import ScriptedApi, status_body

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns1", "resourceVersion": "7"},
    "spec": {"replicas": 2},
}


def test_get_sends_auth_and_decodes_raw_json(api: ScriptedApi, client: Client) -> None:
    # a field the generated models do not know must survive: the client never uses them
    obj = {**DEPLOY, "spec": {"replicas": 2, "x-unknown": {"deep": [1, 2]}}}
    api.expect("GET", "/apis/apps/v1/namespaces/ns1/deployments/web", query={}, response=obj)
    assert client.get("apps/v1", "Deployment", "web", "ns1") == obj
    _, _, _, headers = api.requests[-1]
    assert headers["authorization"] == "Bearer s3cret"
    assert headers["User-Agent"] == "llmscaler"


def test_core_cluster_scoped_and_subresource_paths(api: ScriptedApi, client: Client) -> None:
    api.expect("GET", "/api/v1/namespaces/default", response={"kind": "Namespace"})
    api.expect(
        "GET", "/apis/apps/v1/namespaces/a/deployments/web/scale", response={"kind": "Scale"}
    )
    assert (
        client.get("v1", "Namespace", "default", "ignored-for-cluster-scope")["kind"] == "Namespace"
    )
    assert client.get_scale("apps/v1", "Deployment", "web", "a") == {"kind": "Scale"}


def test_namespaced_get_without_namespace_is_a_clear_error(client: Client) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        client.get("v1", "Pod", "p")
    with pytest.raises(ValueError, match="apiVersion"):
        client.get("a/b/c", "Pod", "p", "ns")


def test_list_selectors_and_paging(api: ScriptedApi, client: Client) -> None:
    api.expect(
        "GET",
        "/api/v1/pods",
        query={"labelSelector": "app=web", "fieldSelector": "spec.nodeName=n1", "limit": "2"},
        response={
            "kind": "PodList",
            "metadata": {"resourceVersion": "10", "continue": "tok"},
            "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
        },
    )
    api.expect(
        "GET",
        "/api/v1/pods",
        query={
            "labelSelector": "app=web",
            "fieldSelector": "spec.nodeName=n1",
            "limit": "2",
            "continue": "tok",
        },
        response={
            "kind": "PodList",
            "metadata": {"resourceVersion": "10"},
            "items": [{"metadata": {"name": "c"}}],
        },
    )
    items, rv = client.list_all(
        "v1", "Pod", label_selector="app=web", field_selector="spec.nodeName=n1", limit=2
    )
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert rv == "10"
    # list items get their type filled in, as the server omits it for built-in kinds
    assert all(i["kind"] == "Pod" and i["apiVersion"] == "v1" for i in items)


def test_create_update_status_and_conflict(api: ScriptedApi, client: Client) -> None:
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    api.expect(
        "POST",
        "/api/v1/namespaces/n/configmaps",
        query={"dryRun": "All", "fieldManager": "me"},
        content_type="application/json",
        body=new,
        status=201,
        response=new,
    )
    api.expect(
        "POST",
        "/api/v1/namespaces/n/configmaps",
        status=409,
        response=status_body(409, "AlreadyExists", 'configmaps "c" already exists'),
    )
    api.expect(
        "PUT",
        "/apis/apps/v1/namespaces/ns1/deployments/web",
        body=DEPLOY,
        content_type="application/json",
        status=409,
        response=status_body(409, "Conflict", "the object has been modified"),
    )
    api.expect(
        "PUT", "/apis/apps/v1/namespaces/ns1/deployments/web/status", body=DEPLOY, response=DEPLOY
    )
    assert client.create(new, dry_run=True, field_manager="me") == new
    with pytest.raises(AlreadyExists) as exists:
        client.create(new)
    assert exists.value.status == 409 and "already exists" in exists.value.message
    with pytest.raises(Conflict) as conflict:
        client.update(DEPLOY)
    assert not isinstance(conflict.value, AlreadyExists)
    assert conflict.value.reason == "Conflict"
    assert client.update_status(DEPLOY) == DEPLOY


def test_patch_content_types(api: ScriptedApi, client: Client) -> None:
    path = "/apis/apps/v1/namespaces/ns1/deployments/web"
    api.expect(
        "PATCH",
        path,
        content_type="application/merge-patch+json",
        body={"spec": {"replicas": 3}},
        response=DEPLOY,
    )
    api.expect(
        "PATCH",
        path,
        content_type="application/strategic-merge-patch+json",
        body={"metadata": {"labels": {"a": "b"}}},
        response=DEPLOY,
    )
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 4}]
    api.expect(
        "PATCH",
        path + "/scale",
        content_type="application/json-patch+json",
        body=ops,
        query={"fieldManager": "fm"},
        response=DEPLOY,
    )
    client.patch("apps/v1", "Deployment", "web", {"spec": {"replicas": 3}}, "ns1")
    client.patch(
        "apps/v1",
        "Deployment",
        "web",
        {"metadata": {"labels": {"a": "b"}}},
        "ns1",
        patch_type="strategic",
    )
    client.patch(
        "apps/v1",
        "Deployment",
        "web",
        ops,
        "ns1",
        patch_type="json",
        subresource="scale",
        field_manager="fm",
    )
    with pytest.raises(ValueError):
        client.patch("apps/v1", "Deployment", "web", {"a": 1}, "ns1", patch_type="json")
    with pytest.raises(ValueError):
        client.patch("apps/v1", "Deployment", "web", {}, "ns1", patch_type="bogus")  # type: ignore[arg-type]


def test_server_side_apply(api: ScriptedApi, client: Client) -> None:
    applied = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns1"},
        "spec": {"replicas": 5},
    }
    api.expect(
        "PATCH",
        "/apis/apps/v1/namespaces/ns1/deployments/web",
        query={"fieldManager": "llmscaler", "force": "true"},
        content_type="application/apply-patch+yaml",
        body=applied,
        response=applied,
    )
    api.expect(
        "PATCH",
        "/apis/apps/v1/namespaces/ns1/deployments/web/status",
        query={"fieldManager": "llmscaler"},
        content_type="application/apply-patch+yaml",
        status=409,
        response=status_body(409, "Conflict", "Apply failed with 1 conflict"),
    )
    assert client.apply(applied, field_manager="llmscaler")["spec"]["replicas"] == 5
    with pytest.raises(Conflict):
        client.apply(applied, field_manager="llmscaler", force=False, subresource="status")
    with pytest.raises(ValueError):
        client.apply(applied, field_manager="")


def test_delete_options(api: ScriptedApi, client: Client) -> None:
    api.expect(
        "DELETE",
        "/api/v1/namespaces/n/pods/p",
        body={
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": "Foreground",
            "gracePeriodSeconds": 0,
        },
        response=status_body(200, "", "deleted"),
    )
    api.expect(
        "DELETE",
        "/api/v1/namespaces/n/pods/q",
        status=404,
        response=status_body(404, "NotFound", 'pods "q" not found', name="q", kind="pods"),
    )
    client.delete("v1", "Pod", "p", "n", propagation_policy="Foreground", grace_period_seconds=0)
    with pytest.raises(NotFound) as nf:
        client.delete("v1", "Pod", "q", "n")
    assert nf.value.details == {"name": "q", "kind": "pods"}
    with pytest.raises(ValueError):
        client.delete("v1", "Pod", "q", "n", propagation_policy="Sideways")


@pytest.mark.parametrize(
    ("code", "reason", "headers", "cls"),
    [
        (404, "NotFound", {}, NotFound),
        (410, "Expired", {}, Gone),
        (422, "Invalid", {}, Invalid),
        (429, "TooManyRequests", {"Retry-After": "7"}, TooManyRequests),
        (500, "InternalError", {}, InternalError),
        (504, "Timeout", {}, ServerTimeout),
        (500, "ServerTimeout", {}, ServerTimeout),
    ],
)
def test_error_answers_are_typed(
    api: ScriptedApi, client: Client, code: int, reason: str, headers: dict[str, str], cls: type
) -> None:
    api.expect(
        "GET",
        "/api/v1/namespaces/n/pods/p",
        status=code,
        response=status_body(code, reason, f"msg {reason}"),
        headers=headers,
    )
    with pytest.raises(cls) as err:
        client.get("v1", "Pod", "p", "n")
    assert err.value.status == code and err.value.reason == reason
    assert err.value.message == f"msg {reason}"
    if cls is TooManyRequests:
        assert err.value.retry_after == 7.0


def test_non_status_error_body_still_typed(api: ScriptedApi, client: Client) -> None:
    api.expect("GET", "/api/v1/namespaces/n/pods/p", status=503, response=b"upstream down")
    with pytest.raises(Exception) as err:
        client.get("v1", "Pod", "p", "n")
    assert getattr(err.value, "status", None) == 503
    assert "upstream down" in str(err.value)


def test_connection_refused_is_transport_error(api: ScriptedApi) -> None:
    import kubernetes.client

    cfg = kubernetes.client.Configuration(host="http://127.0.0.1:1")
    cfg.retries = False
    from llmscaler_runtime.kube import ResourceInfo

    c = Client(cfg)
    c.mapper.add(ResourceInfo("", "v1", "Pod", "pods", True))
    with pytest.raises(TransportError):
        c.get("v1", "Pod", "p", "n")


def _lines(*events: object) -> list[bytes]:
    return [json.dumps(e).encode() + b"\n" for e in events]


def test_watch_streams_events_and_raises_gone(api: ScriptedApi, client: Client) -> None:
    pod = {"metadata": {"name": "a", "resourceVersion": "11"}}
    stream = _lines(
        {"type": "ADDED", "object": pod},
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "12"}}},
    )
    # an event split across chunks, and garbage that must be skipped, not end the stream
    tail = json.dumps({"type": "MODIFIED", "object": pod}).encode() + b"\n"
    stream += [tail[:10], tail[10:], b"not json\n"]
    stream += _lines(
        {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version")}
    )
    api.expect(
        "GET",
        "/api/v1/namespaces/n/pods",
        query={
            "watch": "true",
            "resourceVersion": "10",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "60",
        },
        stream=stream,
    )
    w = client.watch("v1", "Pod", "n", resource_version="10", timeout_seconds=60)
    events = []
    with pytest.raises(Gone):
        for ev in w:
            events.append(ev)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK", "MODIFIED"]
    assert events[0]["object"]["kind"] == "Pod"
    assert w.closed


def test_watch_ends_when_server_closes(api: ScriptedApi, client: Client) -> None:
    api.expect(
        "GET",
        "/api/v1/pods",
        stream=_lines({"type": "DELETED", "object": {"metadata": {"name": "x"}}}),
    )
    assert [e["type"] for e in client.watch("v1", "Pod")] == ["DELETED"]


def test_watch_close_from_other_thread_unblocks_reader(client: Client) -> None:
    # a server that sends headers and then nothing: the reader blocks until close()
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    done = threading.Event()
    port = srv.getsockname()[1]

    def serve() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        done.wait(5)  # holds the connection open until the test has closed its side
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    import kubernetes.client

    from llmscaler_runtime.kube import ResourceInfo

    c = Client(kubernetes.client.Configuration(host=f"http://127.0.0.1:{port}"))
    c.mapper.add(ResourceInfo("", "v1", "Pod", "pods", True))
    w = c.watch("v1", "Pod")
    got: list[object] = []
    t = threading.Thread(target=lambda: got.extend(w), daemon=True)
    t.start()
    w.close()
    t.join(timeout=3)
    assert not t.is_alive()
    assert got == []
    done.set()
    srv.close()


def test_mapper_caches_and_refreshes_once_on_miss(api: ScriptedApi, client: Client) -> None:
    info = client.mapper.resource_for("apps/v1", "Deployment")
    assert (info.plural, info.namespaced) == ("deployments", True)
    assert info.subresources == {"scale", "status"}
    client.mapper.resource_for("apps/v1", "Deployment")
    assert api.discovery_hits["/apis/apps/v1"] == 1
    # a kind installed later (a CRD) is found by the refresh a miss triggers
    api.discovery["/apis/apps/v1"]["resources"].append(
        {"name": "widgets", "kind": "Widget", "namespaced": False, "verbs": ["list"]}
    )
    assert client.mapper.resource_for("apps/v1", "Widget").plural == "widgets"
    assert api.discovery_hits["/apis/apps/v1"] == 2
    with pytest.raises(NoKindMatch):
        client.mapper.resource_for("apps/v1", "Gadget")
    assert api.discovery_hits["/apis/apps/v1"] == 3
    with pytest.raises(NoKindMatch):
        client.mapper.resource_for("example.com/v1", "Thing")
    core = client.mapper.resource_for("v1", "Pod")
    assert core.subresources == {"status", "eviction"} and core.verbs == {"get", "list"}


def test_client_is_thread_safe(api: ScriptedApi, client: Client) -> None:
    for i in range(40):
        api.expect("GET", "/api/v1/namespaces/n/configmaps/c", response={"i": i})
    errors: list[BaseException] = []
    results: list[int] = []

    def worker() -> None:
        try:
            for _ in range(10):
                results.append(client.get("v1", "ConfigMap", "c", "n")["i"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == []
    assert sorted(results) == list(range(40))


def test_watch_error_event_other_than_410_is_typed(api: ScriptedApi, client: Client) -> None:
    api.expect(
        "GET",
        "/apis/apps/v1/deployments",
        query={"watch": "true", "labelSelector": "a=b", "timeoutSeconds": "5"},
        stream=_lines({"type": "ERROR", "object": status_body(500, "InternalError", "etcd")}),
    )
    w = client.watch(
        "apps/v1", "Deployment", label_selector="a=b", allow_bookmarks=False, timeout_seconds=5
    )
    with pytest.raises(InternalError, match="etcd"):
        list(w)


def test_raw_request_escape_hatch(api: ScriptedApi, client: Client) -> None:
    api.expect(
        "POST",
        "/custom/path",
        query={"a": "1", "flag": "true"},
        content_type="text/plain",
        response={"ok": True},
    )
    api.expect("GET", "/empty", response=None)
    assert client.request(
        "POST",
        "/custom/path",
        query=[("a", 1), ("flag", True), ("skip", None)],
        body="hello",
        content_type="text/plain",
    ) == {"ok": True}
    assert client.request("GET", "/empty") is None
