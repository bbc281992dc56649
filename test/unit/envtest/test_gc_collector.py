"""Garbage collector rules: cascades, partial ownership, dangling and replaced owners,
foreground and orphan propagation. Synchronous against the contract fake; one end-to-end
cascade against the embedded storage with the collector's own thread."""

from __future__ import annotations

import time
from typing import Any

import pytest

from llmscaler_runtime.envtest.gc import GarbageCollector

try:  # test/unit/envtest as a package (if it gets an __init__.py) ...
    from .test_sim_fake_storage import FakeStatusError, FakeStorage
except ImportError:  # ... or as a plain directory of test modules (pytest's rootdir-less import)
    from test_sim_fake_storage import FakeStatusError, FakeStorage  # type: ignore[no-redef]

Obj = dict[str, Any]
NS = "gc"


def ref(owner: Obj) -> Obj:
    md = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": md["name"],
        "uid": md["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def make(storage: Any, api: str, kind: str, name: str, *owners: Obj, **extra: Any) -> Obj:
    md: Obj = {"name": name, "namespace": NS}
    if owners:
        md["ownerReferences"] = [ref(o) for o in owners]
    return storage.create({"apiVersion": api, "kind": kind, "metadata": md, **extra})


def exists(storage: Any, api: str, kind: str, name: str) -> bool:
    try:
        storage.get(api, kind, NS, name)
    except Exception as exc:
        if getattr(exc, "code", None) == 404:
            return False
        raise
    return True


def settle(gc: GarbageCollector) -> None:
    for _ in range(20):
        if gc.process_pending() == 0:
            return
    pytest.fail("gc did not settle")


@pytest.fixture
def fake() -> tuple[FakeStorage, GarbageCollector]:
    storage = FakeStorage()
    gc = GarbageCollector(storage)
    gc.attach()
    return storage, gc


def test_deleting_a_deployment_cascades_to_replicasets_and_pods(fake: Any) -> None:
    storage, gc = fake
    d = make(storage, "apps/v1", "Deployment", "d")
    rs = make(storage, "apps/v1", "ReplicaSet", "d-1", d)
    make(storage, "v1", "Pod", "p1", rs)
    make(storage, "v1", "Pod", "p2", rs, spec={"nodeName": "n"})
    unrelated = make(storage, "v1", "Pod", "other")
    storage.delete("apps/v1", "Deployment", NS, "d")
    settle(gc)
    assert not exists(storage, "apps/v1", "ReplicaSet", "d-1")
    assert not exists(storage, "v1", "Pod", "p1")
    # A bound pod is deleted gracefully: it stays with a deletionTimestamp for its kubelet.
    p2 = storage.get("v1", "Pod", NS, "p2")
    assert p2["metadata"]["deletionTimestamp"]
    assert exists(storage, "v1", "Pod", unrelated["metadata"]["name"])
    assert [k for k, *_ in gc.deleted].count("Pod") == 2
    # Nothing is deleted twice while the pod terminates.
    storage.patch_merge("v1", "Pod", NS, "p2", {"metadata": {"labels": {"x": "y"}}})
    settle(gc)
    assert len(gc.deleted) == 3


def test_dependent_survives_while_any_owner_lives(fake: Any) -> None:
    storage, gc = fake
    a = make(storage, "v1", "ConfigMap", "a")
    b = make(storage, "v1", "ConfigMap", "b")
    make(storage, "v1", "Secret", "dep", a, b)
    storage.delete("v1", "ConfigMap", NS, "a")
    settle(gc)
    dep = storage.get("v1", "Secret", NS, "dep")
    assert [r["name"] for r in dep["metadata"]["ownerReferences"]] == ["b"]
    storage.delete("v1", "ConfigMap", NS, "b")
    settle(gc)
    assert not exists(storage, "v1", "Secret", "dep")


def test_dangling_and_replaced_owners_are_detected_by_uid() -> None:
    storage = FakeStorage()
    owner = make(storage, "example.com/v1", "Widget", "w")
    make(storage, "v1", "ConfigMap", "child", owner)
    storage.delete("example.com/v1", "Widget", NS, "w")
    make(storage, "example.com/v1", "Widget", "w")  # same name, new uid
    dangling = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "nope"}
    storage.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "orphan", "namespace": NS, "ownerReferences": [dangling]},
        }
    )
    # The collector starts after all that: the Widget kind is not in its initial scan.
    gc = GarbageCollector(storage)
    gc.attach()
    settle(gc)
    assert not exists(storage, "v1", "ConfigMap", "child")
    assert not exists(storage, "v1", "Secret", "orphan")
    assert exists(storage, "example.com/v1", "Widget", "w")


def test_foreground_deletion_removes_dependents_before_the_owner(fake: Any) -> None:
    storage, gc = fake
    d = make(storage, "apps/v1", "Deployment", "d")
    rs = make(storage, "apps/v1", "ReplicaSet", "d-1", d)
    make(storage, "v1", "Pod", "p", rs, spec={"nodeName": "n"})
    storage.delete("apps/v1", "Deployment", NS, "d", propagation_policy="Foreground")
    settle(gc)
    # The pod is terminating gracefully: RS and Deployment wait for it.
    assert exists(storage, "apps/v1", "Deployment", "d")
    assert exists(storage, "apps/v1", "ReplicaSet", "d-1")
    assert storage.get("apps/v1", "ReplicaSet", NS, "d-1")["metadata"]["finalizers"] == [
        "foregroundDeletion"
    ]
    storage.delete("v1", "Pod", NS, "p", grace_period_seconds=0)  # the kubelet finishes
    settle(gc)
    assert not exists(storage, "apps/v1", "ReplicaSet", "d-1")
    assert not exists(storage, "apps/v1", "Deployment", "d")


def test_orphan_finalizer_keeps_dependents_and_strips_references(fake: Any) -> None:
    storage, gc = fake
    d = make(storage, "apps/v1", "Deployment", "d")
    make(storage, "apps/v1", "ReplicaSet", "d-1", d)
    storage.delete("apps/v1", "Deployment", NS, "d", propagation_policy="Orphan")
    settle(gc)
    assert not exists(storage, "apps/v1", "Deployment", "d")
    rs = storage.get("apps/v1", "ReplicaSet", NS, "d-1")
    assert not rs["metadata"].get("ownerReferences")


def test_missing_objects_raise_the_fake_error() -> None:
    with pytest.raises(FakeStatusError):
        FakeStorage().get("v1", "Pod", NS, "x")


def test_cascade_on_embedded_storage_with_simulator_threads() -> None:
    storage_mod = pytest.importorskip("llmscaler_runtime.envtest.storage")
    from llmscaler_runtime.envtest.simulator import WorkloadSimulator

    storage = storage_mod.Storage()
    storage.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    gc = GarbageCollector(storage)
    sim = WorkloadSimulator(storage, pod_startup_seconds=0.05, termination_seconds=0.1)
    gc.start()
    sim.start()
    try:
        storage.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": NS},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            }
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            d = storage.get("apps/v1", "Deployment", NS, "d")
            if (d.get("status") or {}).get("readyReplicas") == 2:
                break
            time.sleep(0.02)
        else:
            pytest.fail("deployment never became ready")
        storage.delete("apps/v1", "Deployment", NS, "d")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rss, _ = storage.list("apps/v1", "ReplicaSet", NS)
            pods, _ = storage.list("v1", "Pod", NS)
            if not rss and not pods:
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"not collected: {len(rss)} replicasets, {len(pods)} pods")
    finally:
        sim.stop()
        gc.stop()
        storage.close()
