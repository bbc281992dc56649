"""The simulated kubelet and the ReplicaSet scale-down victim order.

One fake node runs every pod bound to it (bare pods that name no other scheduler are bound to
it first, as kube-scheduler would): a pod goes Pending, then Running and Ready once its
start-up delay (the LLM server's cold start) has elapsed; a pod with a deletionTimestamp is removed
(delete with grace 0) after ``min(grace, termination_seconds)``, so tests see the real graceful
termination window without waiting the default 30 s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .context import Controller, ControllerContext, PodTimes
from .util import (
    DELETION_COST_ANNOTATION,
    STARTUP_ANNOTATION,
    Obj,
    annotations_of,
    get_if_exists,
    int_field,
    is_not_found,
    is_pod_ready,
    is_terminating,
    meta,
    name_of,
    namespace_of,
    parse_rfc3339,
    pod_condition,
    pod_phase,
    uid_of,
)

#: kwok's per-pod ready delay (a Go duration such as "8s"), honoured here too so that one test
#: annotation slows a pod's cold start on the embedded server and on the real control plane.
KWOK_READY_DELAY_ANNOTATION = "pod-ready.stage.kwok.x-k8s.io/delay"
_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration_seconds(text: str) -> float | None:
    """``"1m30s"`` -> 90.0, as Go's time.ParseDuration (unsigned); None when it is not one."""
    text = text.strip()
    if text == "0":
        return 0.0
    parts = _GO_DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def startup_seconds(pod: Mapping[str, Any], default: float) -> float:
    """Per-pod cold-start delay: an annotation wins over the simulator default.

    ``envtest.llmscaler.dev/startup-seconds`` (seconds) first, then kwok's
    ``pod-ready.stage.kwok.x-k8s.io/delay`` (a Go duration); malformed values are ignored.
    """
    annotations = annotations_of(pod)
    raw = annotations.get(STARTUP_ANNOTATION)
    if raw is not None:
        try:
            value = float(raw)
        except ValueError:
            return default
        return value if value >= 0 else default
    kwok = annotations.get(KWOK_READY_DELAY_ANNOTATION)
    parsed = go_duration_seconds(kwok) if isinstance(kwok, str) else None
    return default if parsed is None else parsed


def grace_seconds(pod: Mapping[str, Any]) -> float:
    """Grace granted at deletion (metadata) else the pod's spec, else the API default of 30 s."""
    grace = meta(pod).get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(int_field(grace, 30))


class Kubelet(Controller):
    """Drives the pod lifecycle for pods whose ``spec.nodeName`` is the simulated node."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self._ip_counter = 0

    def _next_ip(self) -> str:
        self._ip_counter += 1
        n = self._ip_counter
        return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"

    def sync(self, namespace: str | None, name: str) -> None:
        ctx = self._ctx
        pod = get_if_exists(ctx.storage, "v1", "Pod", namespace, name)
        if pod is None:
            return
        spec = pod.get("spec") or {}
        if not spec.get("nodeName"):
            self._schedule(pod)
            return
        if spec.get("nodeName") != ctx.node.name:
            return
        uid = uid_of(pod)
        now = ctx.time.now()
        if is_terminating(pod):
            started = ctx.records.terminating_since.setdefault(uid, now)
            due = started + min(grace_seconds(pod), ctx.node.termination_seconds)
            if now >= due:
                try:
                    ctx.storage.delete("v1", "Pod", namespace, name, grace_period_seconds=0)
                except Exception as exc:
                    if not is_not_found(exc):
                        raise
                ctx.records.forget_pod(uid)
            else:
                ctx.queue.schedule(("pod", namespace, name), due)
            return
        phase = pod_phase(pod)
        if phase in ("Running", "Succeeded", "Failed"):
            if phase == "Running" and is_pod_ready(pod) and uid not in ctx.records.ready_at:
                ready = pod_condition(pod, "Ready") or {}
                wall = parse_rfc3339(ready.get("lastTransitionTime"))
                ctx.records.ready_at[uid] = wall if wall is not None else ctx.time.wall(now)
            return
        started = ctx.records.pod_started.setdefault(uid, now)
        due = started + startup_seconds(pod, ctx.node.pod_startup_seconds)
        if now >= due:
            self._mark_running(pod, started, now)
        else:
            if phase != "Pending" or pod_condition(pod, "PodScheduled") is None:
                self._mark_pending(pod, started)
            ctx.queue.schedule(("pod", namespace, name), due)

    def _schedule(self, pod: Obj) -> None:
        """Play kube-scheduler for bare pods: bind them to the one simulated node.

        Pods asking for another scheduler (``spec.schedulerName``) are left alone, as a real
        default scheduler would; terminating pods are not bound.
        """
        ctx = self._ctx
        scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        if scheduler != "default-scheduler" or is_terminating(pod):
            return
        try:
            ctx.storage.patch_merge(
                "v1", "Pod", namespace_of(pod), name_of(pod), {"spec": {"nodeName": ctx.node.name}}
            )
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        ctx.note_write()

    def _containers(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return list((pod.get("spec") or {}).get("containers") or [])

    def _mark_pending(self, pod: Obj, started: float) -> None:
        ctx = self._ctx
        start_ts = ctx.time.timestamp(started)
        status: Obj = {
            "phase": "Pending",
            "hostIP": ctx.node.host_ip,
            "hostIPs": [{"ip": ctx.node.host_ip}],
            "startTime": start_ts,
            "qosClass": "BestEffort",
            "conditions": [
                _cond("PodScheduled", "True", start_ts),
                _cond("Initialized", "True", start_ts),
                _cond("ContainersReady", "False", start_ts, "ContainersNotReady"),
                _cond("Ready", "False", start_ts, "ContainersNotReady"),
            ],
            "containerStatuses": [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                }
                for c in self._containers(pod)
            ],
        }
        ctx.storage.patch_merge(
            "v1", "Pod", namespace_of(pod), name_of(pod), {"status": status}, subresource="status"
        )
        ctx.note_write()

    def _mark_running(self, pod: Obj, started: float, now: float) -> None:
        ctx = self._ctx
        start_ts = ctx.time.timestamp(started)
        ready_ts = ctx.time.timestamp(now)
        ip = (pod.get("status") or {}).get("podIP") or self._next_ip()
        status: Obj = {
            "phase": "Running",
            "hostIP": ctx.node.host_ip,
            "hostIPs": [{"ip": ctx.node.host_ip}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": start_ts,
            "qosClass": "BestEffort",
            "conditions": [
                _cond("PodScheduled", "True", start_ts),
                _cond("Initialized", "True", start_ts),
                _cond("ContainersReady", "True", ready_ts),
                _cond("Ready", "True", ready_ts),
            ],
            "containerStatuses": [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": f"docker.io/{c.get('image', '')}",
                    "containerID": f"containerd://{uid_of(pod).replace('-', '')}{i}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": start_ts}},
                }
                for i, c in enumerate(self._containers(pod))
            ],
        }
        ctx.storage.patch_merge(
            "v1", "Pod", namespace_of(pod), name_of(pod), {"status": status}, subresource="status"
        )
        ctx.records.ready_at[uid_of(pod)] = ctx.time.wall(now)
        ctx.note_write()


def _cond(ctype: str, status: str, ts: str, reason: str | None = None) -> Obj:
    cond: Obj = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": ts}
    if reason:
        cond["reason"] = reason
    return cond


_PHASE_ORDINAL = {"Pending": 0, "": 0, "Unknown": 1, "Running": 2}


def deletion_cost(pod: Mapping[str, Any]) -> int:
    """``controller.kubernetes.io/pod-deletion-cost``; absent or malformed means 0."""
    raw = annotations_of(pod).get(DELETION_COST_ANNOTATION)
    if raw is None:
        return 0
    try:
        return int(str(raw).strip())
    except ValueError:
        return 0


def victim_sort_key(
    pod: Mapping[str, Any], times: PodTimes
) -> tuple[int, int, int, int, float, int, float, int]:
    """Ascending key = deleted first, in ``ActivePodsWithRanks`` order (ReplicaSet scale-down).

    1. unassigned before assigned; 2. Pending < Unknown < Running; 3. not-ready before ready;
    4. lower pod-deletion-cost first; 5. (node co-location rank: one node, so all equal);
    6. among ready pods the more recently ready first; 7. more container restarts first;
    8. newer pods first. Ties inside one second are broken by creation order, which the real
    controller cannot see (metav1.Time has second precision) but which makes tests deterministic.
    The real controller compares ready/creation times on a logarithmic scale
    (LogarithmicScaleDown); this uses exact times, so it is a refinement of that order.
    ``times`` holds the precise ready and creation times (the context's records).
    """
    spec = pod.get("spec") or {}
    assigned = 1 if spec.get("nodeName") else 0
    phase = _PHASE_ORDINAL.get(pod_phase(pod), 2)
    ready = is_pod_ready(pod)
    uid = uid_of(pod)
    ready_time = 0.0
    if ready:
        ready_time = times.ready_at.get(uid) or 0.0
        if not ready_time:
            cond = pod_condition(pod, "Ready") or {}
            ready_time = parse_rfc3339(cond.get("lastTransitionTime")) or 0.0
    restarts = max(
        [
            int_field(cs.get("restartCount"), 0)
            for cs in (pod.get("status") or {}).get("containerStatuses") or []
        ]
        or [0]
    )
    created_wall, created_seq = times.created.get(uid, (0.0, 0))
    if not created_wall:
        created_wall = parse_rfc3339(meta(pod).get("creationTimestamp")) or 0.0
    return (
        assigned,
        phase,
        1 if ready else 0,
        deletion_cost(pod),
        -ready_time,
        -restarts,
        -created_wall,
        -created_seq,
    )
