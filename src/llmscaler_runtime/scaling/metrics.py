"""What the scaling pipeline reports to Prometheus about its syncs.

Every failure of a scaler is caught inside ``reconcile`` on purpose (handed to the controller
it would land in exponential backoff), so the controller's ``controller_runtime_reconcile_errors
_total`` never sees a failing scaler. ``llmscaler_scaler_syncs_total`` does: one increment per
sync, labelled with its result and the reason the status gives for it.

Its cardinality is bounded by the code, not by the fleet: ``result`` has two values and ``reason``
is a member of :class:`~.reasons.ConditionReason` or ``FailedUpdateStatus``; there is no
per-scaler label (count syncs per reason across the fleet; find the scaler with
``kubectl get llmscaler`` and its conditions).

The per-scaler series (:class:`ScalerMetrics`, ``llmscaler_scaler_*{namespace, name}``) are what
dashboards plot and alerts point at one scaler with: desired and ready replicas, the bounds,
each metric's last value and target, failed syncs by reason, scale events by direction and
whether fallback is active. Their cardinality grows with the fleet, and is bounded per scaler:

* 4 gauges (desired, current, min and max replicas) and 2 scale counters (``up``, ``down``);
* 2 gauges per metric of the spec (value, target), labelled with the metric's ``name`` (its
  position, ``metrics[i]``, when unnamed), so at most 32;
* 1 error counter per failure reason the scaler has actually had (created at its first
  failure: pre-creating every reason for every scaler would multiply the fleet by ~20);
* 1 fallback gauge once fallback has been reported for the scaler.

prometheus_client exposes a ``_created`` sample beside each counter child, so a scaler with
one metric that never failed has 10 series; 10,000 such scalers have 100,000. A
deleted scaler's series are removed with it (the reconciler calls :meth:`forget_scaler` when
the scaler is gone), and so are those of a metric removed from the spec. Only the leader
reports: a standby manager never evaluates.

Per sync the cost is a dictionary look-up and a few ``Gauge.set`` calls on children kept per
scaler, a few microseconds against the ~1 ms a sync costs (``bench/``).
"""

from __future__ import annotations

import math
import threading
from typing import Final, Literal, Protocol, runtime_checkable

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_runtime.scaling.reasons import ConditionReason
from llmscaler_runtime.scaling.types import Measurement, MetricReading, Plan, TargetView

__all__ = [
    "FAILED_UPDATE_STATUS",
    "SCALER_METRIC_NAMES",
    "SYNC_RESULTS",
    "Direction",
    "NoopScalerMetrics",
    "NoopSyncMetrics",
    "PrometheusScalerMetrics",
    "PrometheusSyncMetrics",
    "ScalerMetrics",
    "SyncMetrics",
    "SyncReason",
    "SyncResult",
    "metric_label",
    "scaler_metrics",
]

#: ``success``: the next sync is on the period grid; ``retry``: at the retry period.
SyncResult = Literal["success", "retry"]
SYNC_RESULTS: tuple[SyncResult, ...] = ("success", "retry")
#: The reason of a sync whose own status write failed (no condition can carry it).
FAILED_UPDATE_STATUS: Final = "FailedUpdateStatus"
#: What a sync's outcome is counted under: the reason its status gives, or the failed write.
SyncReason = ConditionReason | Literal["FailedUpdateStatus"]
#: Which way a scale went: ``llmscaler_scaler_scale_events_total{direction}``.
Direction = Literal["up", "down"]
DIRECTIONS: tuple[Direction, ...] = ("up", "down")


class SyncMetrics(Protocol):
    """Receives one observation per evaluated sync."""

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None: ...


class NoopSyncMetrics:
    """Reports nothing: the default, so the reconciler never checks for a missing sink."""

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None:
        """Nothing to record."""


class PrometheusSyncMetrics:
    """``llmscaler_scaler_syncs_total{result, reason}`` in ``registry``.

    Every (result, reason) pair the code can produce starts at 0, so a rate() over a reason
    that has never happened is 0 rather than absent, and alerts need no ``or vector(0)``.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.syncs = Counter(
            "llmscaler_scaler_syncs",
            "LLMScaler syncs by result and by the reason their status gives.",
            ["result", "reason"],
            registry=registry,
        )
        for reason in (*ConditionReason, FAILED_UPDATE_STATUS):
            for result in SYNC_RESULTS:
                self.syncs.labels(result=result, reason=str(reason))

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None:
        self.syncs.labels(result=result, reason=str(reason)).inc()


@runtime_checkable
class ScalerMetrics(SyncMetrics, Protocol):
    """The wider port: :class:`SyncMetrics` plus per-scaler series (see the module docstring).

    Every method is called from the reconcile of that one scaler, so an implementation sees
    the calls for one scaler in order; different scalers are reported from several workers.
    """

    def observe_evaluation(
        self,
        scaler: LLMScaler,
        target: TargetView,
        measurement: Measurement,
        plan: Plan,
        *,
        bounds: tuple[int, int],
    ) -> None:
        """A sync measured and paced: desired and ready replicas, the (min, max) bounds in
        force (a schedule's while one is open), metric figures."""
        ...

    def observe_scale(self, namespace: str, name: str, direction: Direction) -> None:
        """A new replica count was written."""
        ...

    def observe_scaler_sync(
        self, namespace: str, name: str, result: SyncResult, reason: SyncReason
    ) -> None:
        """How the scaler's sync ended; a ``retry`` counts as an error of that reason."""
        ...

    def set_fallback_active(self, namespace: str, name: str, active: bool) -> None:
        """Whether the scaler runs on its fallback replica count (``spec.fallback``): the
        fallback code calls this on every evaluation that enters, stays in or leaves it."""
        ...

    def forget_scaler(self, namespace: str, name: str) -> None:
        """The scaler was deleted: remove every series it had."""
        ...


class NoopScalerMetrics(NoopSyncMetrics):
    """Reports nothing per scaler either; the reconciler's default."""

    def observe_evaluation(
        self,
        scaler: LLMScaler,
        target: TargetView,
        measurement: Measurement,
        plan: Plan,
        *,
        bounds: tuple[int, int],
    ) -> None:
        """Nothing to record."""

    def observe_scale(self, namespace: str, name: str, direction: Direction) -> None:
        """Nothing to record."""

    def observe_scaler_sync(
        self, namespace: str, name: str, result: SyncResult, reason: SyncReason
    ) -> None:
        """Nothing to record."""

    def set_fallback_active(self, namespace: str, name: str, active: bool) -> None:
        """Nothing to record."""

    def forget_scaler(self, namespace: str, name: str) -> None:
        """Nothing to forget."""


@attrs.define
class _OnlySyncs(NoopScalerMetrics):
    """A plain :class:`SyncMetrics` seen through the wider port (an embedder's own sink)."""

    syncs: SyncMetrics

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None:
        self.syncs.observe_sync(result, reason)


def scaler_metrics(metrics: SyncMetrics | None) -> ScalerMetrics:
    """``metrics`` as the wider port: itself when it is one, no per-scaler series otherwise."""
    if metrics is None:
        return NoopScalerMetrics()
    if isinstance(metrics, ScalerMetrics):
        return metrics
    return _OnlySyncs(metrics)


def metric_label(reading: MetricReading, index: int) -> str:
    """The ``metric`` label of a spec's metric: its name, or its position when unnamed."""
    return reading.name or f"metrics[{index}]"


#: Every per-scaler metric name as Prometheus exposes it (counters with ``_total``): what
#: dashboards and alerts may reference.
SCALER_METRIC_NAMES = (
    "llmscaler_scaler_desired_replicas",
    "llmscaler_scaler_current_replicas",
    "llmscaler_scaler_min_replicas",
    "llmscaler_scaler_max_replicas",
    "llmscaler_scaler_metric_value",
    "llmscaler_scaler_metric_target",
    "llmscaler_scaler_errors_total",
    "llmscaler_scaler_scale_events_total",
    "llmscaler_scaler_fallback_active",
)

_SCALER = ("namespace", "name")


@attrs.define
class _Series:
    """The children of one evaluated scaler, so a sync sets values without label look-ups."""

    desired: Gauge
    current: Gauge
    min: Gauge
    max: Gauge
    scales: dict[str, Counter]
    metrics: dict[str, tuple[Gauge, Gauge]] = attrs.field(factory=dict)


class PrometheusScalerMetrics(PrometheusSyncMetrics):
    """Both ports in ``registry``: ``llmscaler_scaler_syncs_total`` and the per-scaler series
    (names and cardinality in the module docstring)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        by_scaler = "of the LLMScaler, labelled by its namespace and name."

        def gauge(name: str, doc: str, *extra: str) -> Gauge:
            return Gauge(name, doc, [*_SCALER, *extra], registry=registry)

        self.desired = gauge(
            "llmscaler_scaler_desired_replicas", f"status.desiredReplicas {by_scaler}"
        )
        self.current = gauge(
            "llmscaler_scaler_current_replicas",
            f"Ready replicas of the target (status.currentReplicas) {by_scaler}",
        )
        self.min = gauge("llmscaler_scaler_min_replicas", f"spec.minReplicas {by_scaler}")
        self.max = gauge("llmscaler_scaler_max_replicas", f"spec.maxReplicas {by_scaler}")
        self.metric_value = gauge(
            "llmscaler_scaler_metric_value",
            f"Last value of each metric (NaN while it fails) {by_scaler}",
            "metric",
        )
        self.metric_target = gauge(
            "llmscaler_scaler_metric_target", f"Target of each metric {by_scaler}", "metric"
        )
        self.errors = Counter(
            "llmscaler_scaler_errors",
            f"Syncs that ended in a retry, by the reason their status gives, {by_scaler}",
            [*_SCALER, "reason"],
            registry=registry,
        )
        self.scales = Counter(
            "llmscaler_scaler_scale_events",
            f"Replica counts written, by direction (up, down), {by_scaler}",
            [*_SCALER, "direction"],
            registry=registry,
        )
        self.fallback = gauge(
            "llmscaler_scaler_fallback_active",
            f"1 while the fallback replica count is in force, else 0, {by_scaler}",
        )
        self._lock = threading.Lock()
        # what exists per scaler, so that forget_scaler removes exactly that: the replica
        # series appear with the first evaluation (a scaler that never measured has no
        # desired count, and a 0 would be a lie), errors with their reason, fallback once used
        self._series: dict[tuple[str, str], _Series] = {}
        self._reasons: dict[tuple[str, str], set[str]] = {}
        self._fallback: set[tuple[str, str]] = set()

    def _of(self, namespace: str, name: str) -> _Series:
        key = (namespace, name)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series(
                    desired=self.desired.labels(namespace, name),
                    current=self.current.labels(namespace, name),
                    min=self.min.labels(namespace, name),
                    max=self.max.labels(namespace, name),
                    # both directions from 0, so increase() sees the first scale
                    scales={d: self.scales.labels(namespace, name, d) for d in DIRECTIONS},
                )
        return series

    def observe_evaluation(
        self,
        scaler: LLMScaler,
        target: TargetView,
        measurement: Measurement,
        plan: Plan,
        *,
        bounds: tuple[int, int],
    ) -> None:
        series = self._of(scaler.namespace, scaler.name)
        series.desired.set(plan.desired)
        series.current.set(target.ready_replicas)
        series.min.set(bounds[0])
        series.max.set(bounds[1])
        seen: set[str] = set()
        for i, reading in enumerate(measurement.readings):
            label = metric_label(reading, i)
            seen.add(label)
            children = series.metrics.get(label)
            if children is None:
                ns, name = scaler.namespace, scaler.name
                children = series.metrics[label] = (
                    self.metric_value.labels(ns, name, label),
                    self.metric_target.labels(ns, name, label),
                )
            children[0].set(math.nan if reading.value is None else reading.value)
            children[1].set(reading.target)
        if len(seen) != len(series.metrics):  # a metric left the spec (or was renamed)
            for label in [m for m in series.metrics if m not in seen]:
                del series.metrics[label]
                self.metric_value.remove(scaler.namespace, scaler.name, label)
                self.metric_target.remove(scaler.namespace, scaler.name, label)

    def observe_scale(self, namespace: str, name: str, direction: Direction) -> None:
        self._of(namespace, name).scales[direction].inc()

    def observe_scaler_sync(
        self, namespace: str, name: str, result: SyncResult, reason: SyncReason
    ) -> None:
        if result != "retry":
            return
        label = str(reason)
        with self._lock:
            self._reasons.setdefault((namespace, name), set()).add(label)
        self.errors.labels(namespace, name, label).inc()

    def set_fallback_active(self, namespace: str, name: str, active: bool) -> None:
        with self._lock:
            self._fallback.add((namespace, name))
        self.fallback.labels(namespace, name).set(1 if active else 0)

    def forget_scaler(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        with self._lock:
            series = self._series.pop(key, None)
            reasons = self._reasons.pop(key, set())
            fallback = key in self._fallback
            self._fallback.discard(key)
        if series is not None:
            for gauge in (self.desired, self.current, self.min, self.max):
                gauge.remove(namespace, name)
            for direction in DIRECTIONS:
                self.scales.remove(namespace, name, direction)
            for label in series.metrics:
                self.metric_value.remove(namespace, name, label)
                self.metric_target.remove(namespace, name, label)
        for reason in reasons:
            self.errors.remove(namespace, name, reason)
        if fallback:
            self.fallback.remove(namespace, name)
