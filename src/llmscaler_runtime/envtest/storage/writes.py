"""The write pipeline: create and update, and the one path every change of a stored object takes.

:meth:`WritePipeline.write` turns a desired object into the stored one the way kube-apiserver's
registry strategies do: status and spec endpoints each keep the other half, system metadata is
carried over, managed fields are tracked, generation moves with the spec, and an update that
takes the last finalizer off a deleting object removes it. Update, patch, apply and the scale
subresource all end here, so these rules exist once.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from typing import Any

from .. import managed
from ..errors import FieldError, StatusError, already_exists, bad_request, invalid, not_found
from ..registry import Registry, ResourceType
from .admission import check_kind, prepare
from .common import (
    CRD_KEY,
    DEFAULT_MANAGER,
    NS_KEY,
    PODS_KEY,
    Obj,
    check_resource_version,
    fast_copy,
    has_generation,
    now,
)
from .crds import CrdRegistry
from .deletion import Deletion
from .store import VersionedStore


class WritePipeline:
    """Creates and updates; :meth:`write` is the shared tail (lock held)."""

    def __init__(
        self, store: VersionedStore, registry: Registry, crds: CrdRegistry, deletion: Deletion
    ) -> None:
        self._store = store
        self._registry = registry
        self._crds = crds
        self._deletion = deletion

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        obj: Obj,
        *,
        manager: str = DEFAULT_MANAGER,
        dry_run: bool = False,
        field_validation: str = "Strict",
        preset_managed: bool = False,
    ) -> tuple[Obj, list[str]]:
        obj = fast_copy(obj)
        check_kind(rt, obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(
                    random.choices(string.ascii_lowercase + string.digits, k=5)
                )
            else:
                raise invalid(
                    rt.group,
                    rt.kind,
                    rt.plural,
                    "",
                    [
                        FieldError(
                            "FieldValueRequired",
                            "metadata.name",
                            "name or generateName is required",
                            with_value=False,
                        )
                    ],
                )
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        if rt.has_status and rt.key != NS_KEY and rt.key != CRD_KEY:
            obj.pop("status", None)
        with self._store.lock:
            if rt.namespaced:
                ns_obj = self._store.lookup(
                    self._registry.by_kind("v1", "Namespace"), None, namespace or ""
                )
                if ns_obj is None:
                    raise not_found("", "namespaces", namespace or "")
                if ns_obj["metadata"].get("deletionTimestamp"):
                    raise StatusError(
                        403,
                        "Forbidden",
                        f'{rt.plural} "{meta["name"]}" is forbidden: unable to create new content '
                        f"in namespace {namespace} because it is being terminated",
                        {
                            "name": meta["name"],
                            "kind": rt.plural,
                            "causes": [
                                {
                                    "reason": "NamespaceTerminating",
                                    "message": f"namespace {namespace} is being terminated",
                                    "field": "metadata.namespace",
                                }
                            ],
                        },
                    )
            if self._store.lookup(rt, namespace, meta["name"]) is not None:
                raise already_exists(rt.group, rt.plural, meta["name"])
            warnings = prepare(rt, obj, None, field_validation, self._crds)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            if has_generation(rt):
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            if rt.key == CRD_KEY:
                obj["status"] = self._crds.status(obj)
            if not preset_managed:
                managed.track_update(rt, None, obj, manager, "", rt.api_version())
            if dry_run:
                meta["resourceVersion"] = ""
                return fast_copy(obj), warnings
            self._store.commit(rt, "ADDED", obj, None)
            if rt.key == CRD_KEY:
                self._crds.register(obj)
            return fast_copy(obj), warnings

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        manager: str = DEFAULT_MANAGER,
        dry_run: bool = False,
        field_validation: str = "Strict",
        explicit_managed: bool = False,
    ) -> tuple[Obj, list[str]]:
        obj = fast_copy(obj)
        check_kind(rt, obj)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if rt.namespaced and meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        with self._store.lock:
            old = self._store.existing(rt, namespace, name)
            check_resource_version(rt, name, meta.get("resourceVersion"), old)
            return self.write(
                rt,
                old,
                obj,
                subresource=subresource or "",
                manager=manager,
                dry_run=dry_run,
                field_validation=field_validation,
                explicit_managed=explicit_managed,
            )

    def write(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        *,
        subresource: str,
        manager: str,
        dry_run: bool,
        field_validation: str,
        explicit_managed: bool = False,
    ) -> tuple[Obj, list[str]]:
        """Turn a desired object into the stored one (lock held) and commit it."""
        old_meta = old["metadata"]
        if subresource == "status" and (rt.crd_name is not None or rt.key == CRD_KEY):
            # A custom resource's status endpoint writes status only.
            result = fast_copy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            new_meta = new.get("metadata") or {}
            if "managedFields" in new_meta:
                result["metadata"]["managedFields"] = new_meta["managedFields"]
        elif subresource == "status":
            # Built-in status strategies reset the spec (and a few metadata fields) but keep
            # the rest: the deployment controller writes its revision annotation here.
            result = {k: fast_copy(v) for k, v in old.items() if k not in ("status", "metadata")}
            result["metadata"] = fast_copy(new.get("metadata") or {})
            if "status" in new:
                result["status"] = new["status"]
            kept = {("apps", "deployments"): ("labels",), PODS_KEY: ("ownerReferences",)}
            for field in kept.get(rt.key, ()):
                if field in old_meta:
                    result["metadata"][field] = fast_copy(old_meta[field])
                else:
                    result["metadata"].pop(field, None)
        else:
            result = new
            if rt.has_status and rt.key != NS_KEY:
                if "status" in old:
                    result["status"] = fast_copy(old["status"])
                else:
                    result.pop("status", None)
            elif rt.key == NS_KEY:
                result["status"] = fast_copy(old.get("status", {}))
        meta = result.setdefault("metadata", {})
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "name",
            "namespace",
            "generation",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if "managedFields" not in meta or (
            not explicit_managed and meta.get("managedFields") == old_meta.get("managedFields")
        ):
            explicit = False
            if "managedFields" in old_meta:
                meta["managedFields"] = old_meta["managedFields"]
        else:
            explicit = True
        if old_meta.get("deletionTimestamp"):
            before = set(old_meta.get("finalizers") or [])
            added = [f for f in meta.get("finalizers") or [] if f not in before]
            if added:
                # Go's %#v of a []string; the metadata update validation runs twice in
                # kube-apiserver, so the cause is listed twice (the message once).
                go_list = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
                err = FieldError(
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {go_list}",
                    with_value=False,
                )
                raise invalid(rt.group, rt.kind, rt.plural, old_meta["name"], [err, err])
        warnings = prepare(rt, result, old, field_validation, self._crds)
        if rt.key == CRD_KEY:
            result["status"] = self._crds.status(result)
        if self._same(old, result):
            return fast_copy(old), warnings
        if subresource != "status" and has_generation(rt) and self._spec_changed(rt, old, result):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if not explicit:
            managed.track_update(rt, old, result, manager, subresource, rt.api_version())
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if dry_run:
            return fast_copy(result), warnings
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._graceful_pod(rt, result)
        ):
            self._store.commit(rt, "DELETED", result, old)
            self._deletion.after_delete(rt, result)
            return fast_copy(result), warnings
        self._store.commit(rt, "MODIFIED", result, old)
        if rt.key == CRD_KEY:
            self._crds.register(result)
        return fast_copy(result), warnings

    @staticmethod
    def _graceful_pod(rt: ResourceType, obj: Obj) -> bool:
        return rt.key == PODS_KEY and bool(obj["metadata"].get("deletionGracePeriodSeconds"))

    @staticmethod
    def _strip(obj: Obj) -> Obj:
        out = dict(obj)
        meta = dict(out.get("metadata", {}))
        meta.pop("resourceVersion", None)
        meta.pop("managedFields", None)
        out["metadata"] = meta
        return out

    def _same(self, old: Obj, new: Obj) -> bool:
        if self._strip(old) != self._strip(new):
            return False
        mf_old = old["metadata"].get("managedFields")
        mf_new = new["metadata"].get("managedFields")
        if mf_old == mf_new:
            return True

        def drop_time(mf: Any) -> Any:
            return [{k: v for k, v in e.items() if k != "time"} for e in mf or []]

        return bool(drop_time(mf_old) == drop_time(mf_new))

    @staticmethod
    def _spec_changed(rt: ResourceType, old: Obj, new: Obj) -> bool:
        if rt.key == ("apps", "deployments"):
            # Deployment annotations are copied to ReplicaSets, so they count as desired state.
            a_old = (old.get("metadata") or {}).get("annotations") or {}
            a_new = (new.get("metadata") or {}).get("annotations") or {}
            if a_old != a_new:
                return True
        skip = {"metadata", "status"} if rt.has_status else {"metadata"}
        a = {k: v for k, v in old.items() if k not in skip}
        b = {k: v for k, v in new.items() if k not in skip}
        return a != b


__all__ = ["WritePipeline"]
