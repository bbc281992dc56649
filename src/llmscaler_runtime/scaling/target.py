"""Reading a scale target generically: any kind with spec.replicas and status.readyReplicas.

The operator reads the target as an unstructured dict, so Deployments, StatefulSets,
LeaderWorkerSets and any CRD with the same two fields work without code per kind. Status
integers the API server leaves out (it omits zero counters) read as zero; counters a kind never
reports (``terminatingReplicas``) stay ``None`` so rules can tell "zero" from "not reported".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmscaler_runtime.scaling.types import TargetView

__all__ = ["TargetError", "target_view"]


class TargetError(ValueError):
    """The target object cannot be scaled (no usable spec.replicas, malformed status)."""


def _int_field(container: Mapping[str, Any], key: str, where: str) -> int | None:
    value = container.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TargetError(f"{where}.{key} is {value!r}, not an integer")
    if value < 0:
        raise TargetError(f"{where}.{key} is negative ({value})")
    return value


def target_view(obj: Mapping[str, Any]) -> TargetView:
    """Build a :class:`TargetView` from the target's JSON; raise TargetError naming the field."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    status = obj.get("status") or {}
    kind = str(obj.get("kind", ""))
    name = str(meta.get("name", ""))
    if not isinstance(spec, Mapping):
        raise TargetError(f"{kind} {name!r} has no spec, so it cannot be scaled")
    if not isinstance(status, Mapping):
        raise TargetError(f"{kind} {name!r} has a malformed status")
    replicas = _int_field(spec, "replicas", "spec")
    if replicas is None:
        raise TargetError(
            f"{kind} {name!r} has no spec.replicas; only kinds exposing spec.replicas and "
            "status.readyReplicas can be scaled"
        )
    selector = spec.get("selector")
    generation = meta.get("generation")
    return TargetView(
        api_version=str(obj.get("apiVersion", "")),
        kind=kind,
        name=name,
        namespace=str(meta.get("namespace", "")),
        spec_replicas=replicas,
        ready_replicas=_int_field(status, "readyReplicas", "status") or 0,
        status_replicas=_int_field(status, "replicas", "status"),
        updated_replicas=_int_field(status, "updatedReplicas", "status"),
        observed_generation=_int_field(status, "observedGeneration", "status"),
        generation=generation if isinstance(generation, int) else None,
        terminating_replicas=_int_field(status, "terminatingReplicas", "status"),
        selector=selector if isinstance(selector, Mapping) else None,
    )
