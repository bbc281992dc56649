"""Metrics hooks of the workqueue, shaped like client-go's ``workqueue.MetricsProvider``.

The queue never imports a metrics library: it asks a :class:`QueueMetricsProvider` for one
metric object per series when it is created (passing the queue's ``name``) and then only calls
``inc``/``dec``/``set``/``observe`` on them. A prometheus_client implementation therefore needs
nothing but ``Gauge(...).labels(name=name, controller=name)`` and friends — prometheus_client's
labelled children already satisfy :class:`GaugeMetric`, :class:`CounterMetric` and
:class:`HistogramMetric`. The controller-runtime series names the provider is expected to back:

============================================  =====================================
provider method                               controller-runtime series
============================================  =====================================
``new_depth_metric``                          ``workqueue_depth`` (gauge)
``new_adds_metric``                           ``workqueue_adds_total`` (counter)
``new_latency_metric``                        ``workqueue_queue_duration_seconds``
``new_work_duration_metric``                  ``workqueue_work_duration_seconds``
``new_unfinished_work_seconds_metric``        ``workqueue_unfinished_work_seconds``
``new_longest_running_processor_metric``      ``workqueue_longest_running_processor_seconds``
``new_retries_metric``                        ``workqueue_retries_total`` (counter)
============================================  =====================================

All values are seconds. Without a provider the queue uses no-op metrics and skips the clock
reads that only metrics need, so the hot path stays cheap.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = [
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "NoopMetric",
    "NoopQueueMetricsProvider",
    "QueueMetricsProvider",
    "SettableGaugeMetric",
]


class CounterMetric(Protocol):
    """A monotonically increasing count."""

    def inc(self) -> None: ...


class GaugeMetric(Protocol):
    """A value that goes up and down by one (queue depth)."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    """A gauge set to an absolute value (unfinished work, longest running processor)."""

    def set(self, value: float) -> None: ...


class HistogramMetric(Protocol):
    """A distribution of observed durations, in seconds."""

    def observe(self, value: float) -> None: ...


@runtime_checkable
class QueueMetricsProvider(Protocol):
    """Creates the metric objects of one named queue; called once per queue at construction."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...


class NoopMetric:
    """Satisfies every metric protocol and records nothing."""

    def inc(self) -> None:
        """Deliberately records nothing."""

    def dec(self) -> None:
        """Deliberately records nothing."""

    def set(self, value: float) -> None:
        """Deliberately records nothing."""

    def observe(self, value: float) -> None:
        """Deliberately records nothing."""


_NOOP = NoopMetric()


class NoopQueueMetricsProvider:
    """The default provider: every series is a :class:`NoopMetric`."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP

    def new_longest_running_processor_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP
