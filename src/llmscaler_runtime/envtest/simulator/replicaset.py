"""The simulated ReplicaSet controller: keep ``spec.replicas`` active pods, report true status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .context import Controller, ControllerContext, Key, copy
from .pods import victim_sort_key
from .util import (
    Obj,
    controller_ref,
    get_if_exists,
    int_field,
    is_not_found,
    is_pod_active,
    is_pod_ready,
    is_terminating,
    labels_of,
    meta,
    name_of,
    owner_reference,
    random_suffix,
    selector_matches,
    status_code,
    uid_of,
)

#: The real controller creates at most this many pods per sync (slow-start batches aside).
BURST_REPLICAS = 500


def owned_pods(
    ctx: ControllerContext, owner: Obj, selector: Mapping[str, Any] | None, *, adopt: bool
) -> list[Obj]:
    """Pods controlled by ``owner``; orphans matching the selector are adopted (ownerRef patch)."""
    ns = meta(owner).get("namespace")
    pods, _ = ctx.storage.list("v1", "Pod", ns)
    uid = uid_of(owner)
    result: list[Obj] = []
    for pod in pods:
        ref = controller_ref(pod)
        if ref is not None:
            if ref.get("uid") == uid:
                result.append(pod)
            continue
        if not adopt or is_terminating(pod) or not selector_matches(selector, labels_of(pod)):
            continue
        refs = [*list(meta(pod).get("ownerReferences") or []), owner_reference(owner)]
        try:
            pod = ctx.storage.patch_merge(
                "v1", "Pod", ns, name_of(pod), {"metadata": {"ownerReferences": refs}}
            )
        except Exception as exc:
            if is_not_found(exc):
                continue
            raise
        ctx.note_write()
        result.append(pod)
    return result


def available(
    ctx: ControllerContext,
    pod: Mapping[str, Any],
    min_ready_seconds: int,
    recheck: Key | None = None,
) -> bool:
    """``podutil.IsPodAvailable``: ready for at least minReadySeconds.

    A pod that is ready but not yet available schedules ``recheck`` for the moment it will be,
    so status turns over without any other event.
    """
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    ready_wall = ctx.records.ready_at.get(uid_of(pod))
    if ready_wall is None:
        return True
    if ctx.time.wall(ctx.time.now()) >= ready_wall + min_ready_seconds:
        return True
    if recheck is not None:
        ctx.schedule_wall(recheck, ready_wall + min_ready_seconds)
    return False


class ReplicaSetController(Controller):
    """Creates pods from the template, deletes surplus pods in victim order, writes status."""

    def sync(self, namespace: str | None, name: str) -> None:
        ctx = self._ctx
        rs = get_if_exists(ctx.storage, "apps/v1", "ReplicaSet", namespace, name)
        if rs is None:
            return
        spec = rs.get("spec") or {}
        selector = spec.get("selector")
        deleting = is_terminating(rs)
        pods = owned_pods(ctx, rs, selector, adopt=not deleting)
        active = [p for p in pods if is_pod_active(p)]
        want = int_field(spec.get("replicas"), 1)
        changed = False
        if not deleting:
            diff = len(active) - want
            if diff < 0:
                for _ in range(min(-diff, BURST_REPLICAS)):
                    self._create_pod(rs)
                changed = True
            elif diff > 0:
                victims = sorted(active, key=lambda p: victim_sort_key(p, ctx.records))[:diff]
                for pod in victims:
                    try:
                        ctx.storage.delete("v1", "Pod", namespace, name_of(pod))
                    except Exception as exc:
                        if not is_not_found(exc):
                            raise
                        continue
                    ctx.note_write()
                    ctx.events.record(
                        rs,
                        "SuccessfulDelete",
                        f"Deleted pod: {name_of(pod)}",
                        "replicaset-controller",
                    )
                changed = True
        if changed:
            pods = owned_pods(ctx, rs, selector, adopt=False)
        self._write_status(rs, pods)

    def _create_pod(self, rs: Obj) -> None:
        ctx = self._ctx
        template = (rs.get("spec") or {}).get("template") or {}
        tmeta = template.get("metadata") or {}
        rs_name = name_of(rs)
        pod_spec = copy(template.get("spec") or {})
        pod_spec["nodeName"] = ctx.node.name
        for _attempt in range(5):
            pod: Obj = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{rs_name}-{random_suffix(ctx.rng)}",
                    "generateName": f"{rs_name}-",
                    "namespace": meta(rs).get("namespace"),
                    "labels": dict(tmeta.get("labels") or {}),
                    "ownerReferences": [owner_reference(rs)],
                },
                "spec": copy(pod_spec),
            }
            if tmeta.get("annotations"):
                pod["metadata"]["annotations"] = dict(tmeta["annotations"])
            try:
                created = ctx.storage.create(pod)
            except Exception as exc:
                if status_code(exc) == 409:
                    continue
                raise
            ctx.record_created(created)
            ctx.note_write()
            ctx.events.record(
                rs, "SuccessfulCreate", f"Created pod: {name_of(created)}", "replicaset-controller"
            )
            return

    def _write_status(self, rs: Obj, pods: list[Obj]) -> None:
        ctx = self._ctx
        spec = rs.get("spec") or {}
        min_ready = int_field(spec.get("minReadySeconds"), 0)
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        active = [p for p in pods if is_pod_active(p)]
        ready = [p for p in active if is_pod_ready(p)]
        key: Key = ("rs", meta(rs).get("namespace"), name_of(rs))
        avail = [p for p in ready if available(ctx, p, min_ready, key)]
        labelled = [
            p for p in active if all(labels_of(p).get(k) == v for k, v in template_labels.items())
        ]
        status: Obj = {
            "replicas": len(active),
            "fullyLabeledReplicas": len(labelled),
            "readyReplicas": len(ready),
            "availableReplicas": len(avail),
            "terminatingReplicas": sum(1 for p in pods if is_terminating(p)),
            "observedGeneration": meta(rs).get("generation", 1),
        }
        current = rs.get("status") or {}
        if all(current.get(k, 0) == v for k, v in status.items()) and all(
            k in current for k in ("replicas", "terminatingReplicas")
        ):
            return
        # The typed status omits zero counts (omitempty) but replicas and the pointer
        # terminatingReplicas; a merge patch drops them with null.
        status = {
            k: (v if v or k in ("replicas", "terminatingReplicas") else None)
            for k, v in status.items()
        }
        ctx.patch_status("apps/v1", "ReplicaSet", rs, status)
