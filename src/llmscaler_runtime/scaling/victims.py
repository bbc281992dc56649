"""Cache-aware victim selection: mark which pods the ReplicaSet should delete first.

Kubernetes lets a ReplicaSet prefer pods with a lower ``controller.kubernetes.io/pod-deletion-
cost`` when it shrinks. Before a scale-down write this step computes the annotation every pod of
the target should carry for *this* decision:

* with per-pod costs (``deletionCostQuery``): each pod's measured cost; a pod the query did not
  report carries none;
* without them: a very low cost on exactly the pods being removed, newest first (the newest pod
  has had the least time to warm its KV cache), and none on the others.

Either way a cost left over from an earlier decision is removed, so a pod that survived a
previous step is not deleted first by mistake. Only pods whose annotation actually changes are
returned, because each one costs an API write (and Kubernetes warns that frequent updates of this
annotation load the API server).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from llmscaler_runtime.scaling.types import (
    DELETION_COST_ANNOTATION,
    INT32_MAX,
    INT32_MIN,
    PodCost,
    PodInfo,
)

__all__ = [
    "VICTIM_COST",
    "CacheAwareVictimSelector",
    "VictimSelector",
    "cost_from_value",
    "pods_from_objects",
    "selector_string",
]

VICTIM_COST = INT32_MIN
"""The cost put on the pods chosen for removal without per-pod costs: the lowest there is."""


class VictimSelector(Protocol):
    """Computes the deletion-cost changes for a scale-down removing ``remove`` pods."""

    def select(
        self, pods: Sequence[PodInfo], remove: int, costs: Mapping[str, int] | None
    ) -> tuple[PodCost, ...]: ...


def cost_from_value(value: float) -> int | None:
    """A sample value as a deletion cost: rounded half away from zero, clamped to int32.

    NaN has no order, so it yields ``None`` (no cost) rather than an arbitrary extreme.
    """
    if math.isnan(value):
        return None
    if value >= INT32_MAX:
        return INT32_MAX
    if value <= INT32_MIN:
        return INT32_MIN
    rounded = math.floor(abs(value) + 0.5)
    return int(math.copysign(rounded, value)) if rounded else 0


def pods_from_objects(objects: Iterable[Mapping[str, Any]]) -> list[PodInfo]:
    """The pods that can still be chosen: those not already being deleted."""
    out: list[PodInfo] = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        annotations = meta.get("annotations") or {}
        out.append(
            PodInfo(
                name=str(meta.get("name", "")),
                creation_timestamp=str(meta.get("creationTimestamp", "")),
                deletion_cost=annotations.get(DELETION_COST_ANNOTATION),
            )
        )
    return out


def selector_string(selector: Mapping[str, Any]) -> str:
    """A ``metav1.LabelSelector`` as the string form list requests take.

    Raises ValueError for an empty selector (it would match every pod in the namespace) or an
    operator Kubernetes does not define.
    """
    parts: list[str] = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        key = expr.get("key")
        op = expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or ()))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            raise ValueError(f"unknown label selector operator {op!r}")
    if not parts:
        raise ValueError("the target's selector is empty; refusing to treat every pod as its own")
    return ",".join(parts)


@attrs.frozen
class CacheAwareVictimSelector:
    """The default selector (see module docstring)."""

    victim_cost: int = VICTIM_COST

    def select(
        self, pods: Sequence[PodInfo], remove: int, costs: Mapping[str, int] | None
    ) -> tuple[PodCost, ...]:
        wanted: dict[str, int | None]
        if costs is not None:
            wanted = {p.name: costs.get(p.name) for p in pods}
        else:
            newest_first = sorted(pods, key=lambda p: (p.creation_timestamp, p.name), reverse=True)
            victims = {p.name for p in newest_first[: max(0, remove)]}
            wanted = {p.name: (self.victim_cost if p.name in victims else None) for p in pods}
        changes: list[PodCost] = []
        for pod in sorted(pods, key=lambda p: p.name):
            want = wanted[pod.name]
            have = pod.deletion_cost
            if want is None and have is None:
                continue
            if want is not None and have is not None and have.strip() == str(want):
                continue
            changes.append(PodCost(pod.name, want))
        return tuple(changes)
