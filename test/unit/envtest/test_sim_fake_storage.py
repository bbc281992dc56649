"""An in-memory fake of the envtest ``Storage`` contract, plus tests that pin its behaviour.

The simulator and GC unit tests run against this fake (synchronous listeners make them
deterministic) and, where it exists, against the real storage too.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest

Obj = dict[str, Any]


class FakeStatusError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = None


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


class FakeStorage:
    """Implements exactly the contract in contracts.md ("envtest internals")."""

    def __init__(self) -> None:
        self._objs: dict[tuple[str, str, str | None, str], Obj] = {}
        self._rv = itertools.count(1)
        self._listeners: list[Callable[[str, Obj], None]] = []
        self.deletes: list[tuple[str, str | None, str, int | None, str | None]] = []

    # helpers
    @staticmethod
    def _key(
        api_version: str, kind: str, ns: str | None, name: str
    ) -> tuple[str, str, str | None, str]:
        return (api_version, kind, ns or None, name)

    def _emit(self, event: str, obj: Obj) -> None:
        for cb in list(self._listeners):
            cb(event, copy.deepcopy(obj))

    def _not_found(self, kind: str, name: str) -> FakeStatusError:
        return FakeStatusError(404, "NotFound", f'{kind} "{name}" not found')

    def add_listener(self, cb: Callable[[str, Obj], None]) -> None:
        self._listeners.append(cb)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj:
        obj = self._objs.get(self._key(api_version, kind, namespace, name))
        if obj is None:
            raise self._not_found(kind, name)
        return copy.deepcopy(obj)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> tuple[list[Obj], str]:
        assert label_selector is None, "fake does not parse selectors"
        items = [
            copy.deepcopy(o)
            for (av, k, ns, _), o in sorted(self._objs.items(), key=lambda kv: str(kv[0]))
            if av == api_version and k == kind and (namespace is None or ns == namespace)
        ]
        return items, str(next(self._rv))

    def create(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        md = obj.setdefault("metadata", {})
        key = self._key(obj["apiVersion"], obj["kind"], md.get("namespace"), md["name"])
        if key in self._objs:
            raise FakeStatusError(409, "AlreadyExists", f'"{md["name"]}" already exists')
        md["uid"] = str(uuid.uuid4())
        md["resourceVersion"] = str(next(self._rv))
        md["generation"] = 1
        md["creationTimestamp"] = "2026-01-01T00:00:00Z"
        if obj["kind"] != "Pod":
            obj.pop("status", None)  # status is a subresource: create ignores it
        self._objs[key] = obj
        self._emit("ADDED", obj)
        return copy.deepcopy(obj)

    def _commit(self, key: tuple[str, str, str | None, str], old: Obj, new: Obj) -> Obj:
        if new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        new["metadata"]["resourceVersion"] = str(next(self._rv))
        md = new["metadata"]
        if md.get("deletionTimestamp") and not md.get("finalizers"):
            del self._objs[key]
            self._emit("DELETED", new)
            return copy.deepcopy(new)
        self._objs[key] = new
        self._emit("MODIFIED", new)
        return copy.deepcopy(new)

    def update(self, obj: Obj, *, subresource: str | None = None) -> Obj:
        md = obj["metadata"]
        key = self._key(obj["apiVersion"], obj["kind"], md.get("namespace"), md["name"])
        old = self._objs.get(key)
        if old is None:
            raise self._not_found(obj["kind"], md["name"])
        rv = md.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise FakeStatusError(409, "Conflict", "the object has been modified")
        new = copy.deepcopy(old)
        if subresource == "status":
            new["status"] = copy.deepcopy(obj.get("status"))
        else:
            new = copy.deepcopy(obj)
            new["status"] = copy.deepcopy(old.get("status"))
            for f in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
                if f in old["metadata"]:
                    new["metadata"][f] = old["metadata"][f]
        return self._commit(key, old, new)

    def patch_merge(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Obj,
        *,
        subresource: str | None = None,
    ) -> Obj:
        key = self._key(api_version, kind, namespace, name)
        old = self._objs.get(key)
        if old is None:
            raise self._not_found(kind, name)
        merged = _merge(old, patch)
        if subresource == "status":
            # Built-in status endpoints keep metadata changes (annotations) but not the spec.
            new = copy.deepcopy(old)
            new["metadata"] = merged["metadata"]
            if "status" in merged:
                new["status"] = merged["status"]
        else:
            new = merged
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        return self._commit(key, old, new)

    def delete(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Obj | None:
        key = self._key(api_version, kind, namespace, name)
        old = self._objs.get(key)
        if old is None:
            raise self._not_found(kind, name)
        self.deletes.append((kind, namespace, name, grace_period_seconds, propagation_policy))
        new = copy.deepcopy(old)
        md = new["metadata"]
        finalizers = list(md.get("finalizers") or [])
        if propagation_policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if propagation_policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if finalizers:
            md["finalizers"] = finalizers
        grace = grace_period_seconds
        if kind == "Pod" and grace is None:
            grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        graceful = kind == "Pod" and (old.get("spec") or {}).get("nodeName") and grace and grace > 0
        if md.get("deletionTimestamp") and (finalizers or graceful):
            return copy.deepcopy(old)  # already terminating: nothing changes
        if finalizers or graceful:
            md["deletionTimestamp"] = "2026-01-01T00:00:10Z"
            if kind == "Pod":
                md["deletionGracePeriodSeconds"] = grace or 0
            md["resourceVersion"] = str(next(self._rv))
            self._objs[key] = new
            self._emit("MODIFIED", new)
            return copy.deepcopy(new)
        del self._objs[key]
        md["resourceVersion"] = str(next(self._rv))
        self._emit("DELETED", new)
        return copy.deepcopy(new)


def test_generation_bumps_only_on_spec_change() -> None:
    s = FakeStorage()
    obj = s.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n"},
            "spec": {"replicas": 1},
        }
    )
    assert obj["metadata"]["generation"] == 1
    obj = s.patch_merge(
        "apps/v1", "Deployment", "n", "d", {"status": {"replicas": 1}}, subresource="status"
    )
    assert obj["metadata"]["generation"] == 1
    obj = s.patch_merge("apps/v1", "Deployment", "n", "d", {"spec": {"replicas": 2}})
    assert obj["metadata"]["generation"] == 2
    assert obj["status"] == {"replicas": 1}


def test_bound_pod_deletion_is_graceful_unbound_is_immediate() -> None:
    s = FakeStorage()
    events: list[tuple[str, str]] = []
    s.add_listener(lambda t, o: events.append((t, o["metadata"]["name"])))
    for name, node in (("a", "n1"), ("b", None)):
        s.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "x"},
                "spec": {"nodeName": node} if node else {},
            }
        )
    s.delete("v1", "Pod", "x", "a")
    s.delete("v1", "Pod", "x", "b")
    assert s.get("v1", "Pod", "x", "a")["metadata"]["deletionGracePeriodSeconds"] == 30
    with pytest.raises(FakeStatusError):
        s.get("v1", "Pod", "x", "b")
    s.delete("v1", "Pod", "x", "a", grace_period_seconds=0)
    assert events[-1] == ("DELETED", "a")


def test_conflict_on_stale_resource_version() -> None:
    s = FakeStorage()
    obj = s.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}
    )
    s.update(obj)
    with pytest.raises(FakeStatusError) as err:
        s.update(obj)
    assert err.value.code == 409
