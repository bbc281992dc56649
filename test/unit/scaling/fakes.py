"""In-memory fakes of the client, cache and event recorder the reconciler talks to.

One :class:`FakeCluster` backs both the fake cache and the fake client, so a status write or
a replica write by the reconciler is visible to its next sync, as with a real informer cache.
Every write is recorded so tests can count API calls (the steady state must make none).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND
from llmscaler_runtime.kube.errors import ApiError, InternalError, NotFound
from llmscaler_runtime.scaling.providers.base import MetricError
from llmscaler_runtime.scaling.types import Measurement, MetricReading
from llmscaler_runtime.testkit import FakeClock

__all__ = ["FakeClock"]  # the test kit's one fake clock, re-exported for the scaling tests


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _labels_match(labels: Mapping[str, str], selector: str) -> bool:
    for part in selector.split(","):
        key, _, value = part.partition("=")
        if labels.get(key) != value:
            return False
    return True


@attrs.define
class Call:
    verb: str
    kind: str
    name: str
    body: Any
    subresource: str | None = None
    field_manager: str | None = None
    force: bool | None = None


class FakeCluster:
    """Objects by (apiVersion, kind, namespace, name), plus a log of every write."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.fail: dict[str, ApiError] = {}  # verb or "verb:kind[:subresource]" -> error
        self.reads = 0
        # a write of spec.replicas is followed at once by a fleet of that size, as if the
        # workload controller and kubelet had caught up; tests of the settle guard turn it off
        self.auto_settle = True
        self._rv = 0

    def bump(self, obj: dict[str, Any]) -> None:
        """A new resourceVersion, as the API server gives every write (callers that cache
        per resourceVersion, like the reconciler's parse cache, rely on it)."""
        self._rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        key = (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])
        self.bump(obj)
        self.objects[key] = obj
        return obj

    def remove(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        self.objects.pop((api_version, kind, namespace, name), None)

    def obj(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return self.objects[(api_version, kind, namespace, name)]

    def writes(self) -> list[Call]:
        return list(self.calls)

    def _check_fail(self, *keys: str) -> None:
        for key in keys:
            if key in self.fail:
                raise self.fail[key]


class FakeCache:
    """The reconciler's cache reads, served from a FakeCluster (shared dicts, like a cache)."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        return self.cluster.objects.get((api_version, kind, namespace or "", name))

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        return [
            o
            for (av, k, ns, _), o in self.cluster.objects.items()
            if av == api_version and k == kind and (namespace is None or ns == namespace)
        ]

    def by_index(
        self, api_version: str, kind: str, index_name: str, value: str
    ) -> list[dict[str, Any]]:
        """No index is wired in the fake: the reconciler falls back to a namespace list."""
        raise KeyError(index_name)


class FakeClient:
    """The reconciler's direct API calls against a FakeCluster."""

    #: no RESTMapper: every kind is treated as served (tests of unserved kinds set one)
    mapper: Any = None

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        self.cluster.reads += 1
        obj = self.cluster.objects.get((api_version, kind, namespace or "", name))
        if obj is None:
            raise NotFound(404, "NotFound", f"{kind} {name} not found")
        return copy.deepcopy(obj)

    def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        self.cluster.reads += 1
        self.cluster._check_fail("list", f"list:{kind}")
        items = [
            copy.deepcopy(o)
            for (av, k, ns, _), o in self.cluster.objects.items()
            if av == api_version
            and k == kind
            and (namespace is None or ns == namespace)
            and (
                label_selector is None
                or _labels_match(o["metadata"].get("labels") or {}, label_selector)
            )
        ]
        return items, "1"

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        keys = ["patch", f"patch:{kind}"] + ([f"patch:{kind}:{subresource}"] if subresource else [])
        self.cluster._check_fail(*keys)
        self.cluster.calls.append(
            Call("patch", kind, name, copy.deepcopy(patch), subresource, field_manager)
        )
        obj = self.cluster.objects.get((api_version, kind, namespace or "", name))
        if obj is None:
            raise NotFound(404, "NotFound", f"{kind} {name} not found")
        if subresource == "status":
            _merge(obj, {"status": patch["status"]})
        else:
            _merge(obj, {k: v for k, v in patch.items() if k != "status"})
        self.cluster.bump(obj)
        return copy.deepcopy(obj)

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        self.cluster._check_fail("apply", f"apply:{obj['kind']}")
        self.cluster.calls.append(
            Call(
                "apply",
                obj["kind"],
                obj["metadata"]["name"],
                copy.deepcopy(obj),
                subresource,
                field_manager,
                force,
            )
        )
        meta = obj["metadata"]
        stored = self.cluster.objects[
            (obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        ]
        _merge(stored, {"spec": obj["spec"]})
        if self.cluster.auto_settle and "replicas" in obj["spec"]:
            n = obj["spec"]["replicas"]
            status = stored.setdefault("status", {})
            status["readyReplicas"] = n
            for key in ("updatedReplicas", "replicas"):
                if key in status:
                    status[key] = n
        self.cluster.bump(stored)
        return copy.deepcopy(stored)


class FakeRecorder:
    """Records events as (type, reason, message)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def reasons(self) -> list[str]:
        return [r for (_, r, _) in self.events]


class StaticFetcher:
    """A metric fetcher whose answer the test sets; counts calls."""

    def __init__(self, measurement: Measurement | None = None) -> None:
        self.measurement = measurement or Measurement("Prometheus")
        self.calls = 0
        self.takes: Callable[[], None] = lambda: None  # e.g. step a fake clock: a slow source

    def set_value(self, value: float | None, target: float = 1.0, error: str | None = None) -> None:
        self.measurement = Measurement(
            "Prometheus",
            (MetricReading("m", "q", target, value=value, error=error if value is None else None),),
        )

    def set_decision(self, decision: int | None, error: str | None = None) -> None:
        self.measurement = Measurement("Custom", decision=decision, error=error)

    def fetch(self, scaler: Any, budget: float) -> Measurement:
        self.calls += 1
        self.takes()
        return self.measurement


class StaticCostSource:
    """Per-pod costs set by the test, or a failure."""

    def __init__(self, costs: Mapping[str, int] | None = None, error: str | None = None) -> None:
        self.costs = costs
        self.error = error
        self.calls = 0
        self.budgets: list[float] = []

    def pod_costs(self, scaler: Any, budget: float) -> Mapping[str, int]:
        self.calls += 1
        self.budgets.append(budget)
        if self.error is not None or self.costs is None:
            raise MetricError(self.error or "no costs")
        return self.costs


# ---- object builders ---------------------------------------------------------------------


def scaler_obj(
    name: str = "s",
    *,
    namespace: str = "ns",
    uid: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
    target: tuple[str, str, str] = ("apps/v1", "Deployment", "web"),
    min_replicas: int = 1,
    max_replicas: int = 10,
    provider: str = "Prometheus",
    window: int = 0,
    step: int = 0,
    behavior: str = "CacheAware",
    deletion_cost_query: str | None = None,
    preemption: bool = False,
    generation: int = 1,
    sync: int = 15,
    retry: int = 10,
    scale_up: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": target[0], "kind": target[1], "name": target[2]},
        "serverAddress": "http://prometheus:9090",
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metricProvider": provider,
        "syncPeriodSeconds": sync,
        "retryPeriodSeconds": retry,
        "scaleDown": {
            "stabilizationWindowSeconds": window,
            "maxStepReplicas": step,
            "behavior": behavior,
        },
    }
    if provider == "Prometheus":
        spec["metrics"] = [{"name": "m", "query": "q", "target": "1"}]
    else:
        spec["customProvider"] = {"serviceId": "svc"}
    if deletion_cost_query:
        spec["scaleDown"]["deletionCostQuery"] = deletion_cost_query
    if scale_up is not None:
        spec["scaleUp"] = scale_up
    if preemption:
        spec["preemption"] = {"enable": True, "priorityClass": "high"}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "generation": generation,
            "creationTimestamp": created,
        },
        "spec": spec,
    }


def deployment(
    name: str = "web",
    *,
    namespace: str = "ns",
    replicas: int = 3,
    ready: int | None = None,
    updated: int | None = None,
    status_replicas: int | None = None,
    generation: int = 1,
    observed: int | None = None,
    terminating: int | None = None,
    labels: Mapping[str, str] | None = None,
    kind: str = "Deployment",
    api_version: str = "apps/v1",
) -> dict[str, Any]:
    labels = dict(labels or {"app": name})
    status: dict[str, Any] = {
        "readyReplicas": replicas if ready is None else ready,
        "updatedReplicas": replicas if updated is None else updated,
        "replicas": replicas if status_replicas is None else status_replicas,
        "observedGeneration": generation if observed is None else observed,
    }
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "generation": generation},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}},
        "status": status,
    }


def pod(
    name: str,
    created: str,
    *,
    namespace: str = "ns",
    labels: Mapping[str, str] | None = None,
    cost: str | None = None,
    terminating: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "creationTimestamp": created,
        "labels": dict(labels or {"app": "web"}),
    }
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}}


def writes_of(cluster: FakeCluster, verb: str, kind: str | None = None) -> Sequence[Call]:
    return [c for c in cluster.calls if c.verb == verb and (kind is None or c.kind == kind)]


def internal_error(message: str = "boom") -> ApiError:
    return InternalError(500, "InternalError", message)
