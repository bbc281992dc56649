"""Prometheus metrics with controller-runtime's names, on a per-Manager registry.

Dashboards and alerts written for Go operators (``controller_runtime_reconcile_total``,
``workqueue_depth``, ``leader_election_master_status`` ...) work unchanged against this one.
Every collector lives in the registry handed in (one per Manager by default): no module-level
global registry, so two managers in one test process never collide or share counts.

Two adapters connect the framework to these collectors without the controller and workqueue
packages importing prometheus_client:

- :class:`ControllerMetrics` itself implements ``controller.metrics.ControllerMetricsProvider``
  (what a controller reports about its reconciles and workers);
- :class:`QueueMetricsProvider` — client-go's ``MetricsProvider`` shape
  (``new_depth_metric(name)`` ... returning objects with ``inc``/``dec``/``set``/``observe``).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from llmscaler_runtime.controller.metrics import RESULTS
from llmscaler_runtime.workqueue.metrics import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    SettableGaugeMetric,
)

__all__ = [
    "RECONCILE_RESULTS",
    "ControllerMetrics",
    "QueueMetricsProvider",
]

#: Result labels pre-initialised to 0 for every controller, as controller-runtime does.
RECONCILE_RESULTS = RESULTS

# controller-runtime's reconcile_time_seconds buckets.
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip
# ExponentialBuckets(1e-8, 10, 12), as client-go's workqueue metrics.
_QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 4))


class ControllerMetrics:
    """All framework collectors, registered in ``registry`` (a fresh one if not given)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.terminal_reconcile_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_panics = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics (unexpected exceptions) per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=_RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        qlabels = ["name", "controller"]
        # controller-runtime labels depth by priority too (its priority queue); a plain queue
        # reports priority="" as controller-runtime's own provider does.
        self.workqueue_depth = Gauge(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            [*qlabels, "priority"],
            registry=r,
        )
        self.workqueue_adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", qlabels, registry=r
        )
        self.workqueue_queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            qlabels,
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.workqueue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            qlabels,
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.workqueue_unfinished_work = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration",
            qlabels,
            registry=r,
        )
        self.workqueue_longest_running_processor = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            qlabels,
            registry=r,
        )
        self.workqueue_retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            qlabels,
            registry=r,
        )
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master",
            ["name"],
            registry=r,
        )
        self._default_queue = QueueMetricsProvider(self)

    # -- controller.metrics.ControllerMetricsProvider --------------------------------------

    def controller_started(self, controller: str, max_concurrent_reconciles: int) -> None:
        """Set the concurrency gauge and create every series at 0, so rates work at once."""
        self.max_concurrent_reconciles.labels(controller=controller).set(max_concurrent_reconciles)
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller=controller, result=result)
        self.reconcile_errors.labels(controller=controller)
        self.terminal_reconcile_errors.labels(controller=controller)
        self.reconcile_panics.labels(controller=controller)
        self.active_workers.labels(controller=controller).set(0)

    def add_active_workers(self, controller: str, delta: int) -> None:
        self.active_workers.labels(controller=controller).inc(delta)

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """Count one finished reconcile under ``result`` (one of :data:`RECONCILE_RESULTS`)."""
        if result not in RECONCILE_RESULTS:
            raise ValueError(f"unknown reconcile result {result!r}; expected {RECONCILE_RESULTS}")
        self.reconcile_total.labels(controller=controller, result=result).inc()
        self.reconcile_time.labels(controller=controller).observe(seconds)

    def inc_reconcile_errors(self, controller: str) -> None:
        self.reconcile_errors.labels(controller=controller).inc()

    def inc_terminal_reconcile_errors(self, controller: str) -> None:
        self.terminal_reconcile_errors.labels(controller=controller).inc()

    def inc_reconcile_panics(self, controller: str) -> None:
        """An unexpected exception escaped the reconciler (Go's recovered panic)."""
        self.reconcile_panics.labels(controller=controller).inc()

    # -- workqueue and leader election ------------------------------------------------------

    def queue_provider(self, controller: str = "") -> QueueMetricsProvider:
        """A ``workqueue.metrics.QueueMetricsProvider`` for the queue(s) of ``controller``."""
        return QueueMetricsProvider(self, controller)

    # ControllerMetrics is itself a QueueMetricsProvider whose ``controller`` label is the queue
    # name, which is what the controller Builder uses (a controller names its queue after itself).

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._default_queue.new_depth_metric(name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._default_queue.new_adds_metric(name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._default_queue.new_latency_metric(name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._default_queue.new_work_duration_metric(name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._default_queue.new_unfinished_work_seconds_metric(name)

    def new_longest_running_processor_metric(self, name: str) -> SettableGaugeMetric:
        return self._default_queue.new_longest_running_processor_metric(name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._default_queue.new_retries_metric(name)

    def set_leader(self, lease_name: str, leading: bool) -> None:
        self.leader_election_master_status.labels(name=lease_name).set(1 if leading else 0)


class QueueMetricsProvider:
    """Implements ``workqueue.metrics.QueueMetricsProvider`` with prometheus_client children.

    Each method returns the labelled child for one queue ``name``; the ``controller`` label is
    the owning controller's name (the queue name when not given), as controller-runtime labels.
    """

    def __init__(self, metrics: ControllerMetrics, controller: str = "") -> None:
        self._m = metrics
        self.controller = controller

    def _labels(self, name: str) -> dict[str, str]:
        return {"name": name, "controller": self.controller or name}

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._m.workqueue_depth.labels(**self._labels(name), priority="")

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._m.workqueue_adds.labels(**self._labels(name))

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._m.workqueue_queue_duration.labels(**self._labels(name))

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._m.workqueue_work_duration.labels(**self._labels(name))

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._m.workqueue_unfinished_work.labels(**self._labels(name))

    def new_longest_running_processor_metric(self, name: str) -> SettableGaugeMetric:
        return self._m.workqueue_longest_running_processor.labels(**self._labels(name))

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._m.workqueue_retries.labels(**self._labels(name))
