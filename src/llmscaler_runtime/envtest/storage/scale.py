"""The scale subresource: an autoscaling/v1 ``Scale`` view of a workload or custom resource.

Reading projects the object through its scale paths (built-ins: ``spec.replicas`` and the
selector; custom resources: the CRD's ``specReplicasPath`` and friends); writing sets the one
replicas field and goes through the write pipeline like any update. Server-side apply of a
Scale makes its manager own ``spec.replicas`` alone (kube-apiserver's ScaleHandler). This is
what an autoscaler talks to, hence a module of its own that owns only that projection.
"""

from __future__ import annotations

from typing import Any

from .. import managed
from ..errors import FieldError, bad_request, field_manager_required, invalid
from ..registry import ResourceType, ScaleSpec
from ..selectors import label_selector_from_match
from .common import DEFAULT_MANAGER, Obj, check_resource_version, fast_copy, path_get
from .store import VersionedStore
from .writes import WritePipeline


def _check_replicas(name: str, replicas: Any) -> None:
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise invalid(
            "autoscaling",
            "Scale",
            "scale",
            name,
            [
                FieldError(
                    "FieldValueInvalid",
                    "spec.replicas",
                    "must be greater than or equal to 0",
                    replicas,
                )
            ],
        )


def _set_replicas(rt: ResourceType, obj: Obj, replicas: int) -> None:
    """Write ``replicas`` at the resource's spec replicas path, creating the maps on the way."""
    path = (rt.scale or ScaleSpec()).spec_replicas_path.strip(".").split(".")
    cur = obj
    for part in path[:-1]:
        cur = cur.setdefault(part, {})
    cur[path[-1]] = replicas


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    """The Scale of a stored object."""
    spec = rt.scale or ScaleSpec()
    meta = obj["metadata"]
    selector: Any
    if rt.schemas:
        selector = path_get(obj, spec.label_selector_path) if spec.label_selector_path else None
    else:
        selector = label_selector_from_match((obj.get("spec") or {}).get("selector"))
    status: Obj = {"replicas": path_get(obj, spec.status_replicas_path) or 0}
    if selector:
        status["selector"] = selector
    smeta: Obj = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    replicas = path_get(obj, spec.spec_replicas_path) or 0
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": smeta,
        # autoscaling/v1 ScaleSpec.replicas is omitempty: zero is not sent.
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


class ScaleSubresource:
    """GET, PUT and apply of ``<resource>/scale``."""

    def __init__(self, store: VersionedStore, writes: WritePipeline) -> None:
        self._store = store
        self._writes = writes

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        with self._store.lock:
            return scale_of(rt, self._store.existing(rt, namespace, name))

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        scale: Any,
        *,
        manager: str = DEFAULT_MANAGER,
        dry_run: bool = False,
    ) -> Obj:
        if not isinstance(scale, dict):
            raise bad_request("the object provided is not a JSON object")
        replicas = (scale.get("spec") or {}).get("replicas")
        if replicas is None:
            replicas = 0  # omitted (omitempty) means zero, as kubectl scale --replicas=0 sends it
        with self._store.lock:
            old = self._store.existing(rt, namespace, name)
            check_resource_version(
                rt, name, (scale.get("metadata") or {}).get("resourceVersion"), old
            )
            _check_replicas(name, replicas)
            new = fast_copy(old)
            _set_replicas(rt, new, replicas)
            return self._write(rt, old, new, manager, dry_run, explicit_managed=False)

    def apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        applied: Any,
        *,
        manager: str,
        force: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        """Server-side apply of an autoscaling/v1 Scale: an Apply entry with subresource scale
        owning spec.replicas, which every other manager loses (kube-apiserver's ScaleHandler)."""
        if not manager:
            raise field_manager_required()
        if not isinstance(applied, dict):
            raise bad_request("apply patch must be an object")
        if applied.get("apiVersion") != "autoscaling/v1" or applied.get("kind") != "Scale":
            group, _, version = str(applied.get("apiVersion") or "").rpartition("/")
            raise bad_request(
                f"invalid object type: {group}/{version}, Kind={applied.get('kind') or ''}"
            )
        replicas = (applied.get("spec") or {}).get("replicas", 0)
        _check_replicas(name, replicas)
        with self._store.lock:
            old = self._store.existing(rt, namespace, name)
            parent: Obj = {
                "apiVersion": rt.api_version(),
                "kind": rt.kind,
                "metadata": {"name": name},
            }
            _set_replicas(rt, parent, replicas)
            merged = managed.apply(rt, old, parent, manager, "scale", force, rt.api_version())
            managed.disown(merged, ("f:spec", "f:replicas"), keep=(manager, "Apply", "scale"))
            merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return self._write(rt, old, merged, manager, dry_run, explicit_managed=True)

    def _write(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        manager: str,
        dry_run: bool,
        *,
        explicit_managed: bool,
    ) -> Obj:
        """A scale write is an update of the object through /scale, with field validation
        off: the client sent a Scale, not the object (lock held)."""
        obj, _ = self._writes.write(
            rt,
            old,
            new,
            subresource="scale",
            manager=manager,
            dry_run=dry_run,
            field_validation="Ignore",
            explicit_managed=explicit_managed,
        )
        return scale_of(rt, obj)


__all__ = ["ScaleSubresource", "scale_of"]
