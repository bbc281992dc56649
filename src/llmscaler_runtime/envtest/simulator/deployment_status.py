"""The simulated Deployment controller's status: counts, and the Available and Progressing
conditions.

Computed from the ReplicaSets' statuses exactly as the real ``calculateStatus`` does, so an
operator's rollout guard sees what it would see on a cluster. Apart from the rollout logic
because it only reads (the ReplicaSets, the Deployment, the clock) and writes one status
patch; the rollout passes in the one number of its own it needs, maxUnavailable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .context import ControllerContext
from .util import Obj, int_field, meta, name_of, parse_rfc3339, spec_replicas, status_int, uid_of


def compute_counts(d: Obj, new: Obj | None, old: list[Obj]) -> dict[str, int]:
    """``calculateStatus``: the counts, summed over the Deployment's ReplicaSets."""
    everything = ([new] if new else []) + old
    available = sum(status_int(rs, "availableReplicas") for rs in everything)
    return {
        "observedGeneration": int_field(meta(d).get("generation"), 1),
        "replicas": sum(status_int(rs, "replicas") for rs in everything),
        "updatedReplicas": status_int(new, "replicas") if new else 0,
        "readyReplicas": sum(status_int(rs, "readyReplicas") for rs in everything),
        "availableReplicas": available,
        "unavailableReplicas": max(spec_replicas(d) - available, 0),
        "terminatingReplicas": sum(status_int(rs, "terminatingReplicas") for rs in everything),
    }


def complete(d: Obj, counts: Mapping[str, int]) -> bool:
    """``DeploymentComplete``: every replica updated and available, this generation seen."""
    want = spec_replicas(d)
    return (
        counts["updatedReplicas"] == want
        and counts["replicas"] == want
        and counts["availableReplicas"] == want
        and counts["observedGeneration"] >= int_field(meta(d).get("generation"), 1)
    )


def write_status(
    ctx: ControllerContext, d: Obj, new: Obj | None, old: list[Obj], max_unavailable: int
) -> None:
    """Patch the Deployment's status when counts or conditions changed."""
    counts = compute_counts(d, new, old)
    current = d.get("status") or {}
    now_wall = ctx.time.wall(ctx.time.now())
    ts = ctx.time.timestamp(ctx.time.now())
    conditions = [dict(c) for c in current.get("conditions") or []]
    min_available = spec_replicas(d) - max_unavailable
    if counts["availableReplicas"] >= min_available:
        avail = ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    else:
        avail = (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    conditions = _set_condition(conditions, "Available", *avail, ts, refresh=False)
    prog = _progressing(ctx, d, new, counts, current, conditions, now_wall)
    if prog is not None:
        conditions = _set_condition(conditions, "Progressing", *prog[:3], ts, refresh=prog[3])
    # The typed status omits zero counts (omitempty); terminatingReplicas is a pointer.
    status: Obj = {k: (v if v or k == "terminatingReplicas" else None) for k, v in counts.items()}
    status["conditions"] = conditions
    if current.get("collisionCount") is not None:
        status["collisionCount"] = current["collisionCount"]
    if (
        all(current.get(k, 0) == v for k, v in counts.items())
        and current.get("conditions") == conditions
    ):
        return
    ctx.patch_status("apps/v1", "Deployment", d, status)


def _progressing(
    ctx: ControllerContext,
    d: Obj,
    new: Obj | None,
    counts: Mapping[str, int],
    current: Mapping[str, Any],
    conditions: list[Obj],
    now_wall: float,
) -> tuple[str, str, str, bool] | None:
    """Progressing condition: (status, reason, message, refresh lastUpdateTime)."""
    if new is None:
        return None
    rs_name = name_of(new)
    created = ctx.records.progress_reason.pop(uid_of(d), None)
    if complete(d, counts):
        return (
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "{rs_name}" has successfully progressed.',
            False,
        )
    if created is not None:
        return ("True", created[0], created[1], True)
    progressed = (
        counts["updatedReplicas"] > int_field(current.get("updatedReplicas"), 0)
        or counts["readyReplicas"] > int_field(current.get("readyReplicas"), 0)
        or counts["availableReplicas"] > int_field(current.get("availableReplicas"), 0)
        or (counts["replicas"] - counts["updatedReplicas"])
        < (int_field(current.get("replicas"), 0) - int_field(current.get("updatedReplicas"), 0))
    )
    existing = next((c for c in conditions if c.get("type") == "Progressing"), None)
    if progressed or existing is None:
        return ("True", "ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.', True)
    if existing.get("reason") == "ProgressDeadlineExceeded":
        return None
    deadline = int_field((d.get("spec") or {}).get("progressDeadlineSeconds"), 600)
    last = parse_rfc3339(existing.get("lastUpdateTime")) or now_wall
    if now_wall - last > deadline:
        return (
            "False",
            "ProgressDeadlineExceeded",
            f'ReplicaSet "{rs_name}" has timed out progressing.',
            True,
        )
    if existing.get("reason") == "NewReplicaSetAvailable":
        return ("True", "ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.', True)
    ctx.schedule_wall(("deploy", meta(d).get("namespace"), name_of(d)), last + deadline + 1)
    return None


def _set_condition(
    conditions: list[Obj],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    ts: str,
    *,
    refresh: bool,
) -> list[Obj]:
    """Replace one condition; transition time moves only when the status flips."""
    out: list[Obj] = []
    found = False
    for cond in conditions:
        if cond.get("type") != ctype:
            out.append(cond)
            continue
        found = True
        same = (
            cond.get("status") == status
            and cond.get("reason") == reason
            and cond.get("message") == message
        )
        if same and not refresh:
            out.append(cond)
            continue
        updated = dict(cond)
        updated.update({"status": status, "reason": reason, "message": message})
        if not same or refresh:
            updated["lastUpdateTime"] = ts
        if cond.get("status") != status:
            updated["lastTransitionTime"] = ts
        out.append(updated)
    if not found:
        out.append(
            {
                "type": ctype,
                "status": status,
                "reason": reason,
                "message": message,
                "lastUpdateTime": ts,
                "lastTransitionTime": ts,
            }
        )
    # The real controller lists Available before Progressing once both exist.
    order = {"Available": 0, "Progressing": 1}
    return sorted(out, key=lambda c: order.get(str(c.get("type")), 2))


__all__ = ["complete", "compute_counts", "write_status"]
