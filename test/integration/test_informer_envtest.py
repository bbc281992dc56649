"""The kube client and the informers against every API server backend (real HTTP, real watch).

Tests that inject faults (dropped watches, 410, 500s) need the embedded server's fault injector;
the rest run on the embedded server and on the real kube-apiserver."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llmscaler_runtime.cache import (
    Backoff,
    DeletedFinalStateUnknown,
    InformerCache,
    SharedInformer,
)
from llmscaler_runtime.envtest.backends import ClusterHandle
from llmscaler_runtime.kube import AlreadyExists, Client, Conflict, NotFound, deep_copy

pytestmark = pytest.mark.integration


@pytest.fixture
def env(envtest: ClusterHandle) -> ClusterHandle:
    return envtest


@pytest.fixture
def client(env: ClusterHandle) -> Iterator[Client]:
    c = env.client()
    yield c
    if env.embedded:
        env.server.faults.clear()
    c.close()


@pytest.fixture
def ns(client: Client) -> str:
    name = "t-" + uuid.uuid4().hex[:8]
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.01)


def cm(name: str, ns: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {"k": "v"},
    }


def deployment(name: str, ns: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "img"}]},
            },
        },
    }


def test_crud_roundtrip(client: Client, ns: str) -> None:
    created = client.create(cm("a", ns, app="web"))
    assert created["metadata"]["uid"]
    with pytest.raises(AlreadyExists):
        client.create(cm("a", ns))
    client.create(cm("b", ns, app="db"))
    got = client.get("v1", "ConfigMap", "a", ns)
    assert got["data"] == {"k": "v"}

    fresh = deep_copy(got)
    fresh["data"]["k"] = "v2"
    updated = client.update(fresh)
    assert updated["data"]["k"] == "v2"
    stale = deep_copy(got)  # still carries the old resourceVersion
    stale["data"]["k"] = "lost"
    with pytest.raises(Conflict):
        client.update(stale)

    client.patch("v1", "ConfigMap", "a", {"data": {"m": "1"}}, ns)
    patched = client.patch(
        "v1",
        "ConfigMap",
        "a",
        [{"op": "add", "path": "/data/j", "value": "2"}],
        ns,
        patch_type="json",
    )
    assert patched["data"] == {"k": "v2", "m": "1", "j": "2"}

    web = client.list("v1", "ConfigMap", ns, label_selector="app=web")
    assert [i["metadata"]["name"] for i in web["items"]] == ["a"]
    items, rv = client.list_all("v1", "ConfigMap", ns, limit=1)
    assert sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"] in "ab") == [
        "a",
        "b",
    ]
    assert rv

    client.delete("v1", "ConfigMap", "a", ns)
    with pytest.raises(NotFound):
        client.get("v1", "ConfigMap", "a", ns)


def test_server_side_apply_status_and_scale(client: Client, ns: str) -> None:
    applied = client.apply(deployment("web", ns, 2), field_manager="first")
    assert applied["spec"]["replicas"] == 2
    owner_b = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 4},
    }
    with pytest.raises(Conflict):
        client.apply(owner_b, field_manager="second", force=False)
    forced = client.apply(owner_b, field_manager="second", force=True)
    assert forced["spec"]["replicas"] == 4
    assert client.get_scale("apps/v1", "Deployment", "web", ns)["spec"]["replicas"] == 4

    # The deployment controller (simulated or real) writes status too: read, write, and retry
    # on a conflict, as every client of a status subresource must.
    deadline = time.monotonic() + 10
    while True:
        status = deep_copy(client.get("apps/v1", "Deployment", "web", ns))
        status["status"] = {"replicas": 4, "readyReplicas": 3}
        try:
            written = client.update_status(status)
            break
        except Conflict:
            assert time.monotonic() < deadline, "status write kept conflicting"
    assert written["status"]["readyReplicas"] == 3
    assert written["spec"]["replicas"] == 4  # a status write leaves spec alone


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def on_add(self, o: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(("add", o["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, o: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        with self.lock:
            key = o.key if isinstance(o, DeletedFinalStateUnknown) else o["metadata"]["name"]
            self.events.append(("delete", key))

    def seen(self, event: tuple[str, str]) -> bool:
        with self.lock:
            return event in self.events


@pytest.mark.envtest_embedded("drops watches and forces 410 with the fault injector")
def test_informer_follows_changes_through_drops_and_gone(
    env: ClusterHandle, client: Client, ns: str
) -> None:
    client.create(cm("pre", ns))
    inf = SharedInformer(client, "v1", "ConfigMap", ns, backoff=Backoff(initial=0.05, cap=0.2))
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start()
    try:
        assert inf.wait_for_sync(10)
        wait_until(lambda: rec.seen(("add", "pre")))
        client.apply(cm("x", ns), field_manager="t")
        wait_until(lambda: rec.seen(("add", "x")))
        stored = inf.store.get_by_key(ns, "x")
        assert stored is not None and "managedFields" not in stored["metadata"]
        client.patch("v1", "ConfigMap", "x", {"data": {"k": "2"}}, ns)
        wait_until(lambda: rec.seen(("update", "x")))

        env.server.faults.drop_watches()  # resume from the last resourceVersion
        client.create(cm("after-drop", ns))
        wait_until(lambda: rec.seen(("add", "after-drop")))

        env.server.faults.clear_requests()
        env.server.faults.force_gone_on_next_watch()
        env.server.faults.drop_watches()  # the resumed watch gets 410 -> relist
        client.delete("v1", "ConfigMap", "pre", ns)
        client.create(cm("after-gone", ns))
        wait_until(lambda: rec.seen(("add", "after-gone")))
        wait_until(lambda: inf.store.get_by_key(ns, "pre") is None)
        wait_until(lambda: rec.seen(("delete", "pre")) or rec.seen(("delete", f"{ns}/pre")))
        assert inf.store.get_by_key(ns, "x")["data"]["k"] == "2"  # type: ignore[index]
        relists = [
            r
            for r in env.server.faults.requests()
            if r.namespace == ns and r.resource == "configmaps" and r.verb == "list"
        ]
        assert relists, "a 410 must make the informer list again"
    finally:
        inf.stop()


@pytest.mark.envtest_embedded("injects HTTP 500 answers with the fault injector")
def test_informer_survives_api_errors(env: ClusterHandle, client: Client, ns: str) -> None:
    client.create(cm("keep", ns))
    inf = SharedInformer(client, "v1", "ConfigMap", ns, backoff=Backoff(initial=0.05, cap=0.2))
    inf.start()
    try:
        assert inf.wait_for_sync(10)
        env.server.faults.clear_requests()
        env.server.faults.add_error(rf"/namespaces/{ns}/configmaps", code=500, methods={"GET"})
        env.server.faults.drop_watches()

        def failed_watches() -> int:
            return sum(
                1
                for r in env.server.faults.requests()
                if r.path.endswith(f"/namespaces/{ns}/configmaps") and r.status == 500
            )

        # several watch attempts fail (backing off); the last known state stays readable
        wait_until(lambda: failed_watches() >= 3 and inf.store.get_by_key(ns, "keep") is not None)
        assert inf.store.get_by_key(ns, "keep") is not None
        env.server.faults.clear()
        client.create(cm("later", ns))
        wait_until(lambda: inf.store.get_by_key(ns, "later") is not None)
        assert inf.store.get_by_key(ns, "keep") is not None
    finally:
        inf.stop()


def test_informer_cache_reads(client: Client, ns: str) -> None:
    client.create(cm("a", ns, tier="front"))
    client.create(cm("b", ns, tier="back"))
    cache = InformerCache(client)
    cache.start()
    try:
        assert cache.get("v1", "ConfigMap", "a", ns) is not None
        front = cache.list("v1", "ConfigMap", ns, label_selector="tier in (front)")
        assert [o["metadata"]["name"] for o in front] == ["a"]
        assert cache.has_synced()
    finally:
        cache.stop()


def test_raw_watch_sees_events_from_list_rv(client: Client, ns: str) -> None:
    _, rv = client.list_all("v1", "ConfigMap", ns)
    stream = client.watch("v1", "ConfigMap", ns, resource_version=rv, timeout_seconds=5)
    try:
        client.create(cm("w", ns))
        client.delete("v1", "ConfigMap", "w", ns)
        types: list[str] = []
        for event in stream:
            # A real cluster also publishes kube-root-ca.crt into a new namespace: only "w".
            if event["type"] != "BOOKMARK" and event["object"]["metadata"]["name"] == "w":
                types.append(event["type"])
            if len(types) == 2:
                break
        assert types == ["ADDED", "DELETED"]
    finally:
        stream.close()
