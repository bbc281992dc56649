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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler, MetricProvider, ScaleDownBehavior
from llmscaler_runtime.cache.selector import format_selector
from llmscaler_runtime.kube.errors import ApiError
from llmscaler_runtime.log import get_logger
from llmscaler_runtime.scaling.ports import ScalerClient
from llmscaler_runtime.scaling.providers.base import CostSource, MetricError
from llmscaler_runtime.scaling.types import (
    DELETION_COST_ANNOTATION,
    INT32_MAX,
    INT32_MIN,
    Plan,
    PodCost,
    PodInfo,
    TargetView,
)

__all__ = [
    "NO_VICTIMS",
    "VICTIM_COST",
    "CacheAwareVictimSelector",
    "VictimPlan",
    "VictimSelector",
    "cost_from_value",
    "plan_victims",
    "pods_from_objects",
    "selector_string",
]

_log = get_logger("llmscaler.scaling")

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
    text = format_selector(selector)
    if not text:
        raise ValueError("the target's selector is empty; refusing to treat every pod as its own")
    return text


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


@attrs.frozen
class VictimPlan:
    """The deletion-cost changes to write before a scale-down, and what went wrong on the way.

    ``cost_error`` says why ``deletionCostQuery`` could not be used (the reconciler records it
    as a Warning Event); the plan then falls back to newest-first.
    """

    changes: tuple[PodCost, ...] = ()
    cost_error: str | None = None


NO_VICTIMS = VictimPlan()


def plan_victims(
    scaler: LLMScaler,
    target: TargetView,
    plan: Plan,
    *,
    client: ScalerClient,
    selector: VictimSelector,
    cost_source: CostSource | None,
    time_left: Callable[[], float],
    asked: LLMScaler,
) -> VictimPlan:
    """Deletion-cost changes for a Deployment scale-down under CacheAware; else none.

    Pods are listed straight from the API (a cached list may miss a pod that just started and
    would then keep a stale cost). ``time_left`` is what remains of this sync's period: the
    metric fetch may have spent most of it on retries, and the cost query gets only the rest,
    so one sync never runs into the next. ``asked`` is the scaler as the providers see it.
    """
    spec = scaler.spec
    if (
        not plan.scale_down
        or plan.replicas == 0  # every pod goes: ranking them would only cost writes
        or target.kind != "Deployment"
        or target.group != "apps"
        or spec.scale_down.behavior != ScaleDownBehavior.CACHE_AWARE
        or target.selector is None
    ):
        return NO_VICTIMS
    try:
        labels = selector_string(target.selector)
        items, _ = client.list_all("v1", "Pod", scaler.namespace, label_selector=labels)
    except (ApiError, ValueError) as exc:
        _log.warning("cannot list the target's pods; scaling without hints", error=str(exc))
        return NO_VICTIMS
    pods = pods_from_objects(items)
    costs: Mapping[str, int] | None = None
    cost_error: str | None = None
    query = spec.scale_down.deletion_cost_query
    if query and spec.metric_provider == MetricProvider.CUSTOM:
        _log.info("deletionCostQuery ignored under the Custom provider", scaler=scaler.key)
    elif query and cost_source is not None:
        left = time_left()
        try:
            if left <= 0:
                raise MetricError("no time left in this sync period after the metric fetch")
            costs = cost_source.pod_costs(asked, left)
        except MetricError as exc:
            cost_error = f"deletionCostQuery failed ({exc}); removing the newest pods first instead"
    remove = plan.current - plan.replicas
    changes = selector.select(pods, remove, costs)
    _log.info(
        "victim selection",
        scaler=scaler.key,
        remove=remove,
        pods=len(pods),
        source="deletionCostQuery" if costs is not None else "newest-first",
        changes={c.pod: c.cost for c in changes},
    )
    return VictimPlan(changes, cost_error)
