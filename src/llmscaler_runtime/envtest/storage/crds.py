"""CustomResourceDefinitions: their validation and status, and serving their resources.

A CRD is stored like any object, but creating, updating or deleting one also changes what the
server serves (the registry), and deleting one removes every object of its kind. That coupling
between an object and the API surface is this module's alone; the write pipeline and deletion
call in at the moments a CRD is written or goes.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import schema
from ..errors import FieldError
from ..registry import Registry, ResourceType, ScaleSpec
from .common import Obj, fast_copy, now
from .store import VersionedStore


class CrdRegistry:
    """Turns stored CRDs into served resource types; ``listeners`` hear of every change."""

    def __init__(self, store: VersionedStore, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        self.listeners: list[Callable[[], None]] = []

    def validate(self, crd: Obj) -> list[FieldError]:
        """apiextensions-apiserver's checks of a CRD that the stored object must pass."""
        errs: list[FieldError] = []
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group = spec.get("group")
        if not group:
            errs.append(FieldError("FieldValueRequired", "spec.group", with_value=False))
        if not names.get("plural"):
            errs.append(FieldError("FieldValueRequired", "spec.names.plural", with_value=False))
        if not names.get("kind"):
            errs.append(FieldError("FieldValueRequired", "spec.names.kind", with_value=False))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            errs.append(
                FieldError(
                    "FieldValueNotSupported",
                    "spec.scope",
                    'supported values: "Cluster", "Namespaced"',
                    spec.get("scope"),
                )
            )
        name = crd.get("metadata", {}).get("name", "")
        if group and names.get("plural") and name != f"{names['plural']}.{group}":
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "metadata.name",
                    'must be spec.names.plural+"."+spec.group',
                    name,
                )
            )
        versions = spec.get("versions") or []
        if not versions:
            errs.append(
                FieldError(
                    "FieldValueRequired",
                    "spec.versions",
                    "must have exactly one version marked as storage version",
                    with_value=False,
                )
            )
        elif sum(1 for v in versions if v.get("storage")) != 1:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.versions",
                    "must have exactly one version marked as storage version",
                    versions,
                )
            )
        for i, v in enumerate(versions):
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            for bad in schema.check_rules_compile(s):
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        f"spec.versions[{i}].schema.openAPIV3Schema",
                        bad,
                        "object",
                    )
                )
        for rt in self._registry.all():
            if rt.crd_name is None and rt.group == group and rt.plural == names.get("plural"):
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        "spec.names.plural",
                        "conflicts with a built-in resource",
                        names.get("plural"),
                    )
                )
        return errs

    @staticmethod
    def status(crd: Obj) -> Obj:
        """The status apiextensions-apiserver reports at once: names accepted, Established."""
        names = (crd.get("spec") or {}).get("names") or {}
        accepted = dict(names)
        accepted.setdefault("singular", str(names.get("kind", "")).lower())
        accepted.setdefault("listKind", f"{names.get('kind', '')}List")
        stamp = now()
        prev = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}

        def cond(t: str, reason: str, msg: str) -> Obj:
            old = prev.get(t)
            ts = (
                old.get("lastTransitionTime", stamp)
                if old and old.get("status") == "True"
                else stamp
            )
            return {
                "type": t,
                "status": "True",
                "reason": reason,
                "message": msg,
                "lastTransitionTime": ts,
            }

        return {
            "acceptedNames": accepted,
            "conditions": [
                cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": [
                v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")
            ],
        }

    def register(self, crd: Obj) -> None:
        """Serve (or re-serve, after an update) the resource a stored CRD defines (lock held)."""
        spec = crd["spec"]
        names = spec["names"]
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        storage_v = next(
            (v["name"] for v in spec["versions"] if v.get("storage")),
            versions[0]["name"] if versions else "v1",
        )
        subres = set()
        scale: ScaleSpec | None = None
        schemas: dict[str, Obj] = {}
        cols: dict[str, list[Obj]] = {}
        for v in versions:
            sr = v.get("subresources") or {}
            if "status" in sr:
                subres.add("status")
            if "scale" in sr:
                subres.add("scale")
                sc = sr["scale"] or {}
                scale = ScaleSpec(
                    sc.get("specReplicasPath", ".spec.replicas"),
                    sc.get("statusReplicasPath", ".status.replicas"),
                    sc.get("labelSelectorPath"),
                )
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            schemas[v["name"]] = (
                s
                if isinstance(s, dict)
                else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            )
            cols[v["name"]] = list(v.get("additionalPrinterColumns") or [])
        rt = ResourceType(
            # The verbs (and their order) apiextensions-apiserver publishes for a custom resource.
            verbs=(
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ),
            group=spec["group"],
            versions=tuple(v["name"] for v in versions),
            kind=names["kind"],
            plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=frozenset(subres),
            scale=scale,
            schemas=schemas,
            printer_columns=cols,
            crd_name=crd["metadata"]["name"],
            storage_version=storage_v,
        )
        if self._registry.by_resource(rt.group, rt.preferred_version, rt.plural) is None:
            self._store.mark_new_type(rt.key)
        self._registry.add(rt)
        for cb in list(self.listeners):
            cb()

    def unregister(self, crd: Obj) -> None:
        """Stop serving a deleted CRD's resource: its objects go, its watches end (lock held)."""
        spec = crd.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        rt = next((r for r in self._registry.all() if r.key == key and r.crd_name), None)
        if rt is None:
            return
        for obj in list(self._store.bucket(rt).values()):
            self._store.commit(rt, "DELETED", fast_copy(obj), obj)
        self._store.drop_type(key)
        self._registry.remove(key)
        self._store.fanout.drop(key)
        for cb in list(self.listeners):
            cb()


__all__ = ["CrdRegistry"]
