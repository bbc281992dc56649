"""PATCH: merge, strategic merge and JSON patches, and server-side apply with managed fields.

A patch is applied to the stored object and handed to the write pipeline as a desired object;
server-side apply instead merges the applied configuration by field ownership (``managed``),
with conflicts between managers, and may create the object. Both only compute the desired
object, which is why they sit on top of the pipeline rather than inside it.
"""

from __future__ import annotations

from typing import Any

from .. import managed, patch
from ..errors import StatusError, bad_request, conflict, field_manager_required, not_found
from ..registry import ResourceType
from .admission import check_kind
from .common import DEFAULT_MANAGER, Obj, check_resource_version, fast_copy
from .store import VersionedStore
from .writes import WritePipeline


class Patcher:
    """PATCH of one object in any of the four patch types."""

    def __init__(self, store: VersionedStore, writes: WritePipeline) -> None:
        self._store = store
        self._writes = writes

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: Any,
        *,
        subresource: str | None = None,
        manager: str = DEFAULT_MANAGER,
        force: bool = False,
        dry_run: bool = False,
        field_validation: str = "Strict",
    ) -> tuple[Obj, list[str]]:
        """PATCH as merge / strategic / json / apply (server-side apply)."""
        sub = subresource or ""
        if patch_type == "apply":
            return self._apply(
                rt, namespace, name, body, sub, manager, force, dry_run, field_validation
            )
        with self._store.lock:
            old = self._store.existing(rt, namespace, name)
            current = fast_copy(old)
            if patch_type == "merge":
                if not isinstance(body, dict):
                    raise bad_request("merge patch must be a JSON object")
                new = patch.merge_patch(current, body)
            elif patch_type == "strategic":
                if rt.schemas:
                    raise StatusError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media "
                        "types include: application/json-patch+json, "
                        "application/merge-patch+json, application/apply-patch+yaml",
                    )
                new = patch.strategic_merge_patch(rt, current, body)
            elif patch_type == "json":
                new = patch.json_patch(current, body)
            else:
                raise StatusError(
                    415, "UnsupportedMediaType", f"unsupported patch type {patch_type}"
                )
            meta = new.get("metadata")
            if not isinstance(meta, dict):
                raise bad_request("metadata must be an object")
            check_resource_version(rt, name, meta.get("resourceVersion"), old)
            check_kind(rt, new)
            explicit = meta.get("managedFields") != old["metadata"].get("managedFields")
            return self._writes.write(
                rt,
                old,
                new,
                subresource=sub,
                manager=manager,
                dry_run=dry_run,
                field_validation=field_validation,
                explicit_managed=explicit,
            )

    def _apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        sub: str,
        manager: str,
        force: bool,
        dry_run: bool,
        field_validation: str,
    ) -> tuple[Obj, list[str]]:
        if not isinstance(body, dict):
            raise bad_request("apply patch must be an object")
        if not manager:
            raise field_manager_required()
        applied = fast_copy(body)
        group, _, version = str(applied.get("apiVersion") or "").rpartition("/")
        if applied.get("kind") != rt.kind or group != rt.group or version not in rt.versions:
            # The GroupVersionKind as apimachinery prints it ("apps/v1, Kind=Deployment").
            raise bad_request(
                f"invalid object type: {group}/{version}, Kind={applied.get('kind') or ''}"
            )
        check_kind(rt, applied)
        ameta = applied.setdefault("metadata", {})
        if ameta.get("name") and ameta["name"] != name:
            raise bad_request(
                f"the name of the object ({ameta['name']}) does not match the name on the URL "
                f"({name})"
            )
        for k in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"):
            if k == "resourceVersion" and ameta.get(k):
                continue
            ameta.pop(k, None)
        with self._store.lock:
            old = self._store.lookup(rt, namespace, name)
            if ameta.get("resourceVersion") and (
                old is None or str(ameta["resourceVersion"]) != old["metadata"]["resourceVersion"]
            ):
                raise conflict(rt.group, rt.plural, name)
            ameta.pop("resourceVersion", None)
            if old is None:
                if sub:
                    raise not_found(rt.group, rt.plural, name)
                ameta["name"] = name
                created = managed.apply(rt, None, applied, manager, "", force, rt.api_version())
                created["metadata"]["name"] = name
                if namespace:
                    created["metadata"]["namespace"] = namespace
                return self._writes.create(
                    rt,
                    namespace,
                    created,
                    manager=manager,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    preset_managed=True,
                )
            merged = managed.apply(rt, old, applied, manager, sub, force, rt.api_version())
            merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return self._writes.write(
                rt,
                old,
                merged,
                subresource=sub,
                manager=manager,
                dry_run=dry_run,
                field_validation=field_validation,
                explicit_managed=True,
            )


__all__ = ["Patcher"]
