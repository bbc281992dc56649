"""The simulated StatefulSet controller: ordinal pods, OrderedReady or Parallel management.

Revisions are tracked as ``<sts>-<template hash>`` in the ``controller-revision-hash`` pod label and
``status.currentRevision``/``updateRevision``; no ControllerRevision objects are written (the
embedded server does not serve that kind), so a pod recreated below a RollingUpdate partition gets
the update revision rather than the old template.
"""

from __future__ import annotations

import re

from .context import Controller, copy
from .replicaset import available, owned_pods
from .util import (
    CONTROLLER_REVISION_HASH,
    STS_POD_INDEX_LABEL,
    STS_POD_NAME_LABEL,
    Obj,
    get_if_exists,
    int_field,
    is_not_found,
    is_pod_ready,
    is_terminating,
    labels_of,
    meta,
    name_of,
    owner_reference,
    pod_phase,
    status_code,
    template_hash,
)


def _running_ready(pod: Obj) -> bool:
    return pod_phase(pod) == "Running" and is_pod_ready(pod)


class StatefulSetController(Controller):
    """Creates ``<sts>-0..N-1`` in order, scales down from the highest ordinal, rolls updates."""

    def sync(self, namespace: str | None, name: str) -> None:
        ctx = self._ctx
        sts = get_if_exists(ctx.storage, "apps/v1", "StatefulSet", namespace, name)
        if sts is None:
            return
        spec = sts.get("spec") or {}
        ordinal_re = re.compile(rf"^{re.escape(name)}-(\d+)$")
        pods = [
            p
            for p in owned_pods(ctx, sts, spec.get("selector"), adopt=not is_terminating(sts))
            if ordinal_re.match(name_of(p))
        ]
        update_rev = f"{name}-{template_hash(spec.get('template') or {})}"
        if not is_terminating(sts) and self._manage(sts, pods, update_rev, ordinal_re):
            pods = [
                p for p in owned_pods(ctx, sts, None, adopt=False) if ordinal_re.match(name_of(p))
            ]
        self._write_status(sts, pods, update_rev)

    def _manage(
        self, sts: Obj, pods: list[Obj], update_rev: str, ordinal_re: re.Pattern[str]
    ) -> bool:
        """One step of the real algorithm; returns whether anything was written."""
        spec = sts.get("spec") or {}
        replicas = int_field(spec.get("replicas"), 1)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        by_ord: dict[int, Obj] = {}
        for pod in pods:
            m = ordinal_re.match(name_of(pod))
            if m:
                by_ord[int(m.group(1))] = pod
        wrote = False
        # Failed pods are deleted so they get recreated, as the real controller does.
        for ordinal, pod in list(by_ord.items()):
            if pod_phase(pod) == "Failed" and not is_terminating(pod):
                self._delete(sts, name_of(pod))
                wrote = True
                by_ord.pop(ordinal)
        for ordinal in range(replicas):
            slot = by_ord.get(ordinal)
            if slot is None:
                self._create(sts, ordinal, update_rev)
                wrote = True
                if not parallel:
                    return True
                continue
            if not parallel and (is_terminating(slot) or not _running_ready(slot)):
                return wrote
        condemned = sorted((o for o in by_ord if o >= replicas), reverse=True)
        if condemned:
            if parallel:
                for o in condemned:
                    if not is_terminating(by_ord[o]):
                        self._delete(sts, name_of(by_ord[o]))
                        wrote = True
                return wrote
            if any(is_terminating(by_ord[o]) for o in condemned):
                return wrote
            if any(not _running_ready(by_ord[o]) for o in range(replicas) if o in by_ord):
                return wrote
            self._delete(sts, name_of(by_ord[condemned[0]]))
            return True
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return wrote
        if any(is_terminating(p) or not _running_ready(p) for p in by_ord.values()):
            return wrote
        partition = int_field((strategy.get("rollingUpdate") or {}).get("partition"), 0)
        for ordinal in range(replicas - 1, partition - 1, -1):
            cand = by_ord.get(ordinal)
            if cand is not None and labels_of(cand).get(CONTROLLER_REVISION_HASH) != update_rev:
                self._delete(sts, name_of(cand))
                return True
        return wrote

    def _delete(self, sts: Obj, name: str) -> None:
        try:
            self._ctx.storage.delete("v1", "Pod", meta(sts).get("namespace"), name)
        except Exception as exc:
            if not is_not_found(exc):
                raise
            return
        self._ctx.note_write()
        self._ctx.events.record(
            sts,
            "SuccessfulDelete",
            f"delete Pod {name} in StatefulSet {name_of(sts)} successful",
            "statefulset-controller",
        )

    def _create(self, sts: Obj, ordinal: int, update_rev: str) -> None:
        ctx = self._ctx
        spec = sts.get("spec") or {}
        template = spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        name = f"{name_of(sts)}-{ordinal}"
        labels = dict(tmeta.get("labels") or {})
        labels[STS_POD_NAME_LABEL] = name
        labels[STS_POD_INDEX_LABEL] = str(ordinal)
        labels[CONTROLLER_REVISION_HASH] = update_rev
        pod_spec = copy(template.get("spec") or {})
        pod_spec["nodeName"] = ctx.node.name
        pod_spec.setdefault("hostname", name)
        if spec.get("serviceName"):
            pod_spec.setdefault("subdomain", spec["serviceName"])
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta(sts).get("namespace"),
                "labels": labels,
                "ownerReferences": [owner_reference(sts)],
            },
            "spec": pod_spec,
        }
        if tmeta.get("annotations"):
            pod["metadata"]["annotations"] = dict(tmeta["annotations"])
        try:
            created = ctx.storage.create(pod)
        except Exception as exc:
            if status_code(exc) == 409:
                return  # the old pod of that ordinal is still terminating
            raise
        ctx.record_created(created)
        ctx.note_write()
        ctx.events.record(
            sts,
            "SuccessfulCreate",
            f"create Pod {name} in StatefulSet {name_of(sts)} successful",
            "statefulset-controller",
        )

    def _write_status(self, sts: Obj, pods: list[Obj], update_rev: str) -> None:
        ctx = self._ctx
        spec = sts.get("spec") or {}
        current = sts.get("status") or {}
        current_rev = current.get("currentRevision") or update_rev
        min_ready = int_field(spec.get("minReadySeconds"), 0)
        created = [p for p in pods if pod_phase(p)]
        ready = [p for p in created if _running_ready(p)]
        live = [p for p in created if not is_terminating(p)]
        updated = sum(1 for p in live if labels_of(p).get(CONTROLLER_REVISION_HASH) == update_rev)
        replicas = int_field(spec.get("replicas"), 1)
        if updated == replicas and len(live) == replicas:
            current_rev = update_rev
        current_count = sum(
            1 for p in live if labels_of(p).get(CONTROLLER_REVISION_HASH) == current_rev
        )
        status: Obj = {
            "observedGeneration": int_field(meta(sts).get("generation"), 1),
            "replicas": len(created),
            "readyReplicas": len(ready),
            "availableReplicas": sum(
                1
                for p in ready
                if available(ctx, p, min_ready, ("sts", meta(sts).get("namespace"), name_of(sts)))
            ),
            "currentReplicas": current_count,
            "updatedReplicas": updated,
            "currentRevision": current_rev,
            "updateRevision": update_rev,
            "collisionCount": int_field(current.get("collisionCount"), 0),
        }
        if all(current.get(k, 0) == v for k, v in status.items()):
            return
        ctx.patch_status("apps/v1", "StatefulSet", sts, status)
