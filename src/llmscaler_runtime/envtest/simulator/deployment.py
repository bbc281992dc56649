"""The simulated Deployment controller (apps/v1 semantics of kube-controller-manager).

One ReplicaSet per pod-template hash; proportional scaling when ``spec.replicas`` changes in the
middle of a rollout; RollingUpdate bounded by maxSurge/maxUnavailable (defaults 25 %) or Recreate;
revision annotations. The status it reports is computed in ``deployment_status``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .context import Controller, copy
from .deployment_status import complete, compute_counts, write_status
from .util import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    POD_TEMPLATE_HASH,
    REVISION_ANNOTATION,
    Obj,
    annotations_of,
    controller_ref,
    get_if_exists,
    int_field,
    is_not_found,
    is_terminating,
    labels_of,
    meta,
    name_of,
    owner_reference,
    parse_rfc3339,
    resolve_int_or_percent,
    selector_matches,
    spec_replicas,
    status_code,
    status_int,
    template_hash,
    uid_of,
)

_SKIP_ANNOTATIONS = {
    REVISION_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    "deployment.kubernetes.io/revision-history",
    "kubectl.kubernetes.io/last-applied-configuration",
}


def _revision(rs: Mapping[str, Any]) -> int:
    return int_field(annotations_of(rs).get(REVISION_ANNOTATION), 0)


def _created(rs: Mapping[str, Any]) -> tuple[float, str]:
    return (parse_rfc3339(meta(rs).get("creationTimestamp")) or 0.0, name_of(rs))


def _template_without_hash(template: Mapping[str, Any]) -> Obj:
    t = {k: v for k, v in template.items()}
    md = dict(t.get("metadata") or {})
    labels = dict(md.get("labels") or {})
    labels.pop(POD_TEMPLATE_HASH, None)
    md["labels"] = labels
    md.pop("creationTimestamp", None)
    t["metadata"] = md
    return t


class DeploymentController(Controller):
    """Reconciles one Deployment per call; level-triggered, so every call is idempotent."""

    # -- helpers ---------------------------------------------------------------------------
    def _fenceposts(self, d: Obj) -> tuple[int, int]:
        """``resolveFenceposts``: surge rounds up, unavailable down, never both zero."""
        replicas = spec_replicas(d)
        strategy = (d.get("spec") or {}).get("strategy") or {}
        if strategy.get("type") == "Recreate":
            return 0, 0
        ru = strategy.get("rollingUpdate") or {}
        surge = resolve_int_or_percent(ru.get("maxSurge"), replicas, round_up=True, default="25%")
        unavail = resolve_int_or_percent(
            ru.get("maxUnavailable"), replicas, round_up=False, default="25%"
        )
        if surge == 0 and unavail == 0:
            unavail = 1
        return surge, unavail

    def _scale_rs(self, d: Obj, rs: Obj, replicas: int) -> Obj:
        """Set RS replicas and the desired/max annotations the scaling-event detection reads."""
        surge, _ = self._fenceposts(d)
        annotations = {
            DESIRED_REPLICAS_ANNOTATION: str(spec_replicas(d)),
            MAX_REPLICAS_ANNOTATION: str(spec_replicas(d) + surge),
        }
        current = annotations_of(rs)
        if spec_replicas(rs) == replicas and all(
            current.get(k) == v for k, v in annotations.items()
        ):
            return rs
        ctx = self._ctx
        before = spec_replicas(rs)
        rs = ctx.storage.patch_merge(
            "apps/v1",
            "ReplicaSet",
            meta(rs).get("namespace"),
            name_of(rs),
            {"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}},
        )
        ctx.note_write()
        if before != replicas:
            direction = "up" if replicas > before else "down"
            ctx.events.record(
                d,
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {name_of(rs)} from {before} to {replicas}",
                "deployment-controller",
            )
        return rs

    def _owned_replicasets(self, d: Obj) -> list[Obj]:
        ctx = self._ctx
        ns = meta(d).get("namespace")
        selector = (d.get("spec") or {}).get("selector")
        items, _ = ctx.storage.list("apps/v1", "ReplicaSet", ns)
        owned: list[Obj] = []
        for rs in items:
            ref = controller_ref(rs)
            if ref is not None:
                if ref.get("uid") == uid_of(d):
                    owned.append(rs)
                continue
            if is_terminating(rs) or not selector_matches(selector, labels_of(rs)):
                continue
            refs = [*list(meta(rs).get("ownerReferences") or []), owner_reference(d)]
            rs = ctx.storage.patch_merge(
                "apps/v1", "ReplicaSet", ns, name_of(rs), {"metadata": {"ownerReferences": refs}}
            )
            ctx.note_write()
            owned.append(rs)
        return sorted(owned, key=_created)

    def _split(self, d: Obj, rss: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        want = _template_without_hash((d.get("spec") or {}).get("template") or {})
        new: Obj | None = None
        old: list[Obj] = []
        for rs in rss:
            tmpl = _template_without_hash((rs.get("spec") or {}).get("template") or {})
            if new is None and tmpl == want:
                new = rs
            else:
                old.append(rs)
        return new, old

    def _new_rs_replicas(self, d: Obj, new: Obj | None, old: list[Obj]) -> int:
        """``NewRSNewReplicas``: how far the new RS may grow this step."""
        strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate")
        if strategy == "Recreate":
            return spec_replicas(d)
        surge, _ = self._fenceposts(d)
        new_count = spec_replicas(new) if new else 0
        current = sum(spec_replicas(rs) for rs in old) + new_count
        max_total = spec_replicas(d) + surge
        if current >= max_total:
            return new_count
        up = min(max_total - current, spec_replicas(d) - new_count)
        return new_count + max(up, 0)

    def _ensure_new_rs(self, d: Obj, new: Obj | None, old: list[Obj]) -> Obj | None:
        """Create the RS for the current template, or bump an existing one's revision."""
        ctx = self._ctx
        ns = meta(d).get("namespace")
        max_old = max((_revision(rs) for rs in old), default=0)
        if new is not None:
            if _revision(new) <= max_old:
                new = ctx.storage.patch_merge(
                    "apps/v1",
                    "ReplicaSet",
                    ns,
                    name_of(new),
                    {"metadata": {"annotations": {REVISION_ANNOTATION: str(max_old + 1)}}},
                )
                ctx.note_write()
            return new
        spec = d.get("spec") or {}
        collision = int_field((d.get("status") or {}).get("collisionCount"), 0)
        template = copy(spec.get("template") or {})
        h = template_hash(template, collision)
        tmeta = template.setdefault("metadata", {})
        tmeta.setdefault("labels", {})[POD_TEMPLATE_HASH] = h
        selector = copy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = h
        surge, _ = self._fenceposts(d)
        annotations = {k: v for k, v in annotations_of(d).items() if k not in _SKIP_ANNOTATIONS} | {
            REVISION_ANNOTATION: str(max_old + 1),
            DESIRED_REPLICAS_ANNOTATION: str(spec_replicas(d)),
            MAX_REPLICAS_ANNOTATION: str(spec_replicas(d) + surge),
        }
        rs_labels = dict(tmeta.get("labels") or {})
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name_of(d)}-{h}",
                "namespace": ns,
                "labels": rs_labels,
                "annotations": annotations,
                "ownerReferences": [owner_reference(d)],
            },
            "spec": {
                "replicas": self._new_rs_replicas(d, None, old),
                "minReadySeconds": int_field(spec.get("minReadySeconds"), 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = ctx.storage.create(rs)
        except Exception as exc:
            if status_code(exc) != 409:
                raise
            # Name taken by an RS that is not ours (or has another template): hash collision.
            ctx.storage.patch_merge(
                "apps/v1",
                "Deployment",
                ns,
                name_of(d),
                {"status": {"collisionCount": collision + 1}},
                subresource="status",
            )
            ctx.note_write()
            ctx.queue.enqueue(("deploy", ns, name_of(d)))
            return None
        ctx.note_write()
        ctx.events.record(
            d,
            "ScalingReplicaSet",
            f"Scaled up replica set {name_of(created)} from 0 to {spec_replicas(created)}",
            "deployment-controller",
        )
        ctx.records.progress_reason[uid_of(d)] = (
            "NewReplicaSetCreated",
            f'Created new replica set "{name_of(created)}"',
        )
        return created

    def _sync_revision_annotation(self, d: Obj, new: Obj | None) -> None:
        if new is None:
            return
        rev = annotations_of(new).get(REVISION_ANNOTATION)
        if rev and annotations_of(d).get(REVISION_ANNOTATION) != rev:
            ctx = self._ctx
            ctx.storage.patch_merge(
                "apps/v1",
                "Deployment",
                meta(d).get("namespace"),
                name_of(d),
                {"metadata": {"annotations": {REVISION_ANNOTATION: rev}}},
                subresource="status",  # as kube-controller-manager: no generation bump
            )
            ctx.note_write()

    # -- scaling (spec.replicas changed, possibly mid-rollout) ------------------------------
    def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        for rs in rss:
            if spec_replicas(rs) <= 0:
                continue
            desired = annotations_of(rs).get(DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and int_field(desired, -1) != spec_replicas(d):
                return True
        return False

    def _scale(self, d: Obj, new: Obj | None, old: list[Obj]) -> None:
        """``dc.scale``: one active RS takes everything; otherwise scale proportionally."""
        everything = ([new] if new else []) + old
        active = [rs for rs in everything if spec_replicas(rs) > 0]
        target: Obj | None = None
        if len(active) == 1:
            target = active[0]
        elif not active:
            target = new if new is not None else (old[-1] if old else None)
        if target is not None:
            self._scale_rs(d, target, spec_replicas(d))
            return
        if (
            new is not None
            and spec_replicas(new) == spec_replicas(d)
            and (status_int(new, "availableReplicas") == spec_replicas(d))
        ):
            for rs in old:
                self._scale_rs(d, rs, 0)
            return
        surge, _ = self._fenceposts(d)
        allowed = spec_replicas(d) + surge
        current = sum(spec_replicas(rs) for rs in active)
        to_add = allowed - current
        if to_add == 0:
            # Only the annotations may be stale.
            for rs in active:
                self._scale_rs(d, rs, spec_replicas(rs))
            return
        # Scale up: largest and newest first; scale down: largest and oldest first.
        if to_add > 0:
            ordered = sorted(active, key=lambda rs: (-spec_replicas(rs), -_created(rs)[0]))
        else:
            ordered = sorted(active, key=lambda rs: (-spec_replicas(rs), _created(rs)[0]))
        sizes: dict[str, int] = {}
        added = 0
        for rs in ordered:
            prop = self._proportion(rs, d, to_add, added, surge)
            sizes[name_of(rs)] = spec_replicas(rs) + prop
            added += prop
        leftover = to_add - added
        if leftover and ordered:
            first = name_of(ordered[0])
            sizes[first] = max(sizes[first] + leftover, 0)
        for rs in ordered:
            self._scale_rs(d, rs, sizes[name_of(rs)])

    def _proportion(self, rs: Obj, d: Obj, to_add: int, added: int, surge: int) -> int:
        if spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        if spec_replicas(d) == 0:
            fraction = -spec_replicas(rs)
        else:
            max_replicas = spec_replicas(d) + surge
            annotated = int_field(annotations_of(rs).get(MAX_REPLICAS_ANNOTATION), 0)
            if annotated <= 0:
                annotated = status_int(d, "replicas") or max_replicas
            fraction = math.floor(
                spec_replicas(rs) * max_replicas / annotated + 0.5
            ) - spec_replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    # -- strategies ---------------------------------------------------------------------------
    def _rolling(self, d: Obj, new: Obj | None, old: list[Obj]) -> Obj | None:
        new = self._ensure_new_rs(d, new, old)
        if new is None:
            return None
        want = spec_replicas(d)
        if spec_replicas(new) > want:
            self._scale_rs(d, new, want)
            return new
        if spec_replicas(new) < want:
            target = self._new_rs_replicas(d, new, old)
            if target != spec_replicas(new):
                return self._scale_rs(d, new, target)
        self._reconcile_old(d, new, old)
        return new

    def _reconcile_old(self, d: Obj, new: Obj, old: list[Obj]) -> None:
        """Scale old RSs down without going under ``replicas - maxUnavailable`` available pods."""
        old_count = sum(spec_replicas(rs) for rs in old)
        if old_count == 0:
            return
        all_count = old_count + spec_replicas(new)
        _, max_unavailable = self._fenceposts(d)
        min_available = spec_replicas(d) - max_unavailable
        new_unavailable = spec_replicas(new) - status_int(new, "availableReplicas")
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return
        # First drop unhealthy replicas of old RSs (oldest first): it costs no availability.
        cleaned = 0
        current = {name_of(rs): spec_replicas(rs) for rs in old}
        for rs in sorted(old, key=_created):
            if cleaned >= max_scaled_down:
                break
            n = current[name_of(rs)]
            unhealthy = n - status_int(rs, "availableReplicas")
            if n == 0 or unhealthy <= 0:
                continue
            drop = min(unhealthy, max_scaled_down - cleaned)
            current[name_of(rs)] = n - drop
            cleaned += drop
        # Then scale down available old pods while availability stays above the floor.
        available = sum(status_int(rs, "availableReplicas") for rs in [*old, new])
        budget = available - min_available - cleaned
        for rs in sorted(old, key=_created):
            if budget <= 0:
                break
            n = current[name_of(rs)]
            if n == 0:
                continue
            drop = min(n, budget)
            current[name_of(rs)] = n - drop
            budget -= drop
        for rs in old:
            if current[name_of(rs)] != spec_replicas(rs):
                self._scale_rs(d, rs, current[name_of(rs)])

    def _recreate(self, d: Obj, new: Obj | None, old: list[Obj]) -> Obj | None:
        """Kill every old pod first, create the new RS only once none is left running."""
        for rs in old:
            if spec_replicas(rs) > 0:
                self._scale_rs(d, rs, 0)
        old_uids = {uid_of(rs) for rs in old}
        if old_uids:
            pods, _ = self._ctx.storage.list("v1", "Pod", meta(d).get("namespace"))
            for pod in pods:
                ref = controller_ref(pod)
                if ref is None or ref.get("uid") not in old_uids:
                    continue
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    return new
        new = self._ensure_new_rs(d, new, old)
        if new is not None:
            new = self._scale_rs(d, new, spec_replicas(d))
        return new

    def _cleanup(self, d: Obj, old: list[Obj]) -> None:
        """Keep at most ``revisionHistoryLimit`` (default 10) fully scaled-down old RSs."""
        limit = int_field((d.get("spec") or {}).get("revisionHistoryLimit"), 10)
        idle = [
            rs
            for rs in old
            if spec_replicas(rs) == 0 and status_int(rs, "replicas") == 0 and not is_terminating(rs)
        ]
        surplus = len(idle) - limit
        if surplus <= 0:
            return
        idle.sort(key=lambda rs: (_revision(rs), _created(rs)))
        for rs in idle[:surplus]:
            try:
                self._ctx.storage.delete(
                    "apps/v1", "ReplicaSet", meta(rs).get("namespace"), name_of(rs)
                )
            except Exception as exc:
                if not is_not_found(exc):
                    raise
            self._ctx.note_write()

    # -- entry point ----------------------------------------------------------------------------
    def sync(self, namespace: str | None, name: str) -> None:
        ctx = self._ctx
        d = get_if_exists(ctx.storage, "apps/v1", "Deployment", namespace, name)
        if d is None:
            return
        rss = self._owned_replicasets(d)
        new, old = self._split(d, rss)
        spec = d.get("spec") or {}
        if is_terminating(d):
            self._write_status(d, new, old)
            return
        if spec.get("paused"):
            if self._is_scaling_event(d, rss):
                self._scale(d, new, old)
            self._write_status(d, new, old)
            return
        strategy = (spec.get("strategy") or {}).get("type", "RollingUpdate")
        if strategy != "Recreate" and new is not None and self._is_scaling_event(d, rss):
            self._scale(d, new, old)
            rss = self._owned_replicasets(d)
            new, old = self._split(d, rss)
            self._write_status(d, new, old)
            return
        rollout = self._recreate if strategy == "Recreate" else self._rolling
        new = rollout(d, new, old)
        self._sync_revision_annotation(d, new)
        rss = self._owned_replicasets(d)
        new, old = self._split(d, rss)
        if new is not None and complete(d, compute_counts(d, new, old)):
            self._cleanup(d, old)
        self._write_status(d, new, old)

    # -- status -----------------------------------------------------------------------------------
    def _write_status(self, d: Obj, new: Obj | None, old: list[Obj]) -> None:
        _, max_unavailable = self._fenceposts(d)
        write_status(self._ctx, d, new, old, max_unavailable)


__all__ = ["DeploymentController"]
