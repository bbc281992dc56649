"""Deletion and the namespace lifecycle: finalizers, graceful pod deletion, cascading namespaces.

A DELETE rarely removes an object at once: finalizers (the garbage collector's ``orphan`` and
``foregroundDeletion`` among them) and a bound pod's grace period turn it into a write of
``deletionTimestamp``; a namespace turns Terminating, deletes its content and goes when the
last object in it has. These rules decide *when* an object leaves the store, which the write
pipeline also needs (an update that drops the last finalizer), so both share :meth:`after_delete`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import StatusError, conflict
from ..registry import Registry, ResourceType
from .common import CRD_KEY, NS_KEY, PODS_KEY, Obj, bump_generation_on_delete, fast_copy, now
from .crds import CrdRegistry
from .store import VersionedStore

#: Namespaces kube-apiserver refuses to delete.
_PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")


class Deletion:
    """DELETE of one object, and what follows once an object has left the store."""

    def __init__(self, store: VersionedStore, registry: Registry, crds: CrdRegistry) -> None:
        self._store = store
        self._registry = registry
        self._crds = crds

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj | None:
        with self._store.lock:
            old = self._store.existing(rt, namespace, name)
            meta = old["metadata"]
            if preconditions:
                if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                    raise StatusError(
                        409,
                        "Conflict",
                        f"Operation cannot be fulfilled on {rt.plural}"
                        f'{"." + rt.group if rt.group else ""} "{name}": Precondition failed: '
                        f"UID in precondition: {preconditions['uid']}, UID in object meta: "
                        f"{meta.get('uid')}",
                    )
                prv = preconditions.get("resourceVersion")
                if prv and str(prv) != meta.get("resourceVersion"):
                    raise conflict(rt.group, rt.plural, name)
            if dry_run:
                return fast_copy(old)
            new = fast_copy(old)
            nmeta = new["metadata"]
            gc_finalizer = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(
                propagation_policy or ""
            )
            if gc_finalizer and rt.key != NS_KEY:
                # The garbage collector deletes (Foreground) or releases (Orphan) the
                # dependents, then drops this finalizer, and the object goes.
                fins = list(nmeta.get("finalizers") or [])
                if gc_finalizer not in fins:
                    fins.append(gc_finalizer)
                nmeta["finalizers"] = fins
                bump_generation_on_delete(nmeta)
                nmeta.setdefault("deletionTimestamp", now())
                nmeta.setdefault("deletionGracePeriodSeconds", 0)
                if new == old:
                    return fast_copy(old)
                return fast_copy(self._store.commit(rt, "MODIFIED", new, old))
            if rt.key == NS_KEY:
                if name in _PROTECTED_NAMESPACES:
                    raise StatusError(
                        403,
                        "Forbidden",
                        f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                        {"name": name, "kind": "namespaces"},
                    )
                return self._delete_namespace(rt, old, new)
            if rt.key == PODS_KEY and (old.get("spec") or {}).get("nodeName"):
                grace = grace_period_seconds
                if grace is None:
                    grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                if grace and grace > 0:
                    current = nmeta.get("deletionGracePeriodSeconds")
                    if current is not None and current <= grace:
                        return fast_copy(old)
                    bump_generation_on_delete(nmeta)
                    nmeta["deletionGracePeriodSeconds"] = grace
                    nmeta["deletionTimestamp"] = now(after_seconds=grace)
                    nmeta["resourceVersion"] = meta["resourceVersion"]
                    return fast_copy(self._store.commit(rt, "MODIFIED", new, old))
            if nmeta.get("finalizers"):
                if nmeta.get("deletionTimestamp"):
                    if rt.key == PODS_KEY and nmeta.get("deletionGracePeriodSeconds"):
                        nmeta["deletionGracePeriodSeconds"] = 0
                        return fast_copy(self._store.commit(rt, "MODIFIED", new, old))
                    return fast_copy(old)
                bump_generation_on_delete(nmeta)
                nmeta["deletionTimestamp"] = now()
                nmeta["deletionGracePeriodSeconds"] = 0
                return fast_copy(self._store.commit(rt, "MODIFIED", new, old))
            self._store.commit(rt, "DELETED", new, old)
            self.after_delete(rt, new)
            return fast_copy(new)

    def _delete_namespace(self, rt: ResourceType, old: Obj, new: Obj) -> Obj:
        name = new["metadata"]["name"]
        if not new["metadata"].get("deletionTimestamp"):
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            self._store.commit(rt, "MODIFIED", new, old)
            for other in self._registry.all():
                if not other.namespaced:
                    continue
                for (ns, oname), _obj in list(self._store.bucket(other).items()):
                    if ns == name:
                        try:
                            self.delete(other, ns, oname)
                        except StatusError:
                            continue
        self._maybe_finish_namespace(name)
        ns_obj = self._store.lookup(rt, None, name)
        return fast_copy(ns_obj if ns_obj is not None else new)

    def _maybe_finish_namespace(self, name: str) -> None:
        ns_rt = self._registry.by_kind("v1", "Namespace")
        ns_obj = self._store.lookup(ns_rt, None, name)
        if ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return
        for other in self._registry.all():
            if other.namespaced and any(ns == name for ns, _ in self._store.bucket(other)):
                return
        final = fast_copy(ns_obj)
        self._store.commit(ns_rt, "DELETED", final, ns_obj)

    def after_delete(self, rt: ResourceType, obj: Obj) -> None:
        """An object left the store (lock held): its namespace may now finish, a CRD's
        resource stops being served."""
        if rt.namespaced:
            self._maybe_finish_namespace(obj["metadata"].get("namespace", ""))
        if rt.key == CRD_KEY:
            self._crds.unregister(obj)


__all__ = ["Deletion"]
