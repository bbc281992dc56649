"""Per-scaler Prometheus series: their labels and values after real syncs, and that a deleted
scaler (or a metric removed from its spec) leaves no series behind."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND
from llmscaler_runtime.scaling.metrics import (
    SCALER_METRIC_NAMES,
    NoopScalerMetrics,
    PrometheusScalerMetrics,
    ScalerMetrics,
    scaler_metrics,
)
from llmscaler_runtime.scaling.types import Measurement, MetricReading

from .fakes import deployment, scaler_obj
from .test_reconciler import World


class Metered(World):
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.metrics = PrometheusScalerMetrics(self.registry)
        super().__init__()

    def new_reconciler(self, **kw: Any) -> Any:
        kw.setdefault("metrics", self.metrics)
        return super().new_reconciler(**kw)

    def value(self, sample: str, name: str = "s", **labels: str) -> float | None:
        return self.registry.get_sample_value(sample, {"namespace": "ns", "name": name, **labels})

    def series_of(self, name: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
        """Every per-scaler sample of scaler ``name``, as (sample name, sorted labels)."""
        return {
            (sample.name, tuple(sorted(sample.labels.items())))
            for family in self.registry.collect()
            for sample in family.samples
            if sample.labels.get("name") == name and sample.labels.get("namespace") == "ns"
        }


@pytest.fixture
def w() -> Metered:
    return Metered()


def test_an_evaluation_reports_replicas_bounds_and_each_metric(w: Metered) -> None:
    w.cluster.put(scaler_obj(min_replicas=2, max_replicas=9))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0, target=0.5)
    w.sync()
    assert w.value("llmscaler_scaler_desired_replicas") == 9  # ceil(3 * 2 / 0.5) = 12, clamped
    assert w.value("llmscaler_scaler_current_replicas") == 3
    assert w.value("llmscaler_scaler_min_replicas") == 2
    assert w.value("llmscaler_scaler_max_replicas") == 9
    assert w.value("llmscaler_scaler_metric_value", metric="m") == 2.0
    assert w.value("llmscaler_scaler_metric_target", metric="m") == 0.5
    assert w.value("llmscaler_scaler_scale_events_total", direction="up") == 1
    assert w.value("llmscaler_scaler_scale_events_total", direction="down") == 0


def test_scale_events_count_each_direction(w: Metered) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    for value in (2.0, 0.5, 1.0, 0.5):  # 3 -> 6 -> 3, steady, -> 2
        w.fetcher.set_value(value)
        w.sync()
        w.clock.step(15)
    assert w.replicas() == 2
    assert w.value("llmscaler_scaler_scale_events_total", direction="up") == 1
    assert w.value("llmscaler_scaler_scale_events_total", direction="down") == 2


def test_a_failing_metric_reads_nan_and_the_retry_counts_as_an_error_by_reason(
    w: Metered,
) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()
    assert w.value("llmscaler_scaler_errors_total", reason="FailedGetMetrics") is None
    w.fetcher.set_value(None, error="connection refused")
    w.sync()
    w.sync()
    value = w.value("llmscaler_scaler_metric_value", metric="m")
    assert value is not None and value != value  # NaN: a gap in the graph, not a stale figure
    assert w.value("llmscaler_scaler_errors_total", reason="FailedGetMetrics") == 2
    assert w.value("llmscaler_scaler_desired_replicas") == 3  # held


def test_a_scaler_that_never_measured_has_errors_but_no_replica_series(w: Metered) -> None:
    w.cluster.put(scaler_obj())  # no target
    w.sync()
    bad = scaler_obj("bad")
    bad["spec"]["minReplicas"] = -1
    w.cluster.put(bad)
    w.sync("bad")
    assert w.value("llmscaler_scaler_errors_total", reason="TargetNotFound") == 1
    assert w.value("llmscaler_scaler_errors_total", "bad", reason="InvalidSpec") == 1
    assert w.value("llmscaler_scaler_desired_replicas") is None  # not a made-up 0
    assert w.value("llmscaler_scaler_desired_replicas", "bad") is None


def test_a_deleted_scaler_leaves_no_series_and_the_others_keep_theirs(w: Metered) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(scaler_obj("other", target=("apps/v1", "Deployment", "web2")))
    w.cluster.put(deployment(replicas=3))
    w.cluster.put(deployment("web2", replicas=3))
    w.fetcher.set_value(None, error="down")
    w.sync()  # an error series too
    w.fetcher.set_value(2.0)
    w.sync()
    w.sync("other")
    w.metrics.set_fallback_active("ns", "s", True)
    assert {name for name, _ in w.series_of("s")} >= {
        "llmscaler_scaler_desired_replicas",
        "llmscaler_scaler_metric_value",
        "llmscaler_scaler_errors_total",
        "llmscaler_scaler_scale_events_total",
        "llmscaler_scaler_fallback_active",
    }
    others = w.series_of("other")
    w.cluster.remove(API_VERSION, KIND, "ns", "s")
    w.sync()
    assert w.series_of("s") == set()
    assert w.series_of("other") == others


def test_a_metric_removed_from_the_spec_loses_its_series(w: Metered) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.measurement = Measurement(
        "Prometheus",
        (MetricReading("a", "qa", 1.0, value=1.0), MetricReading("", "qb", 2.0, value=2.0)),
    )
    w.sync()
    assert w.value("llmscaler_scaler_metric_value", metric="a") == 1.0
    assert w.value("llmscaler_scaler_metric_value", metric="metrics[1]") == 2.0  # unnamed
    w.fetcher.set_value(1.0)  # now only "m"
    w.sync()
    assert w.value("llmscaler_scaler_metric_value", metric="a") is None
    assert w.value("llmscaler_scaler_metric_target", metric="metrics[1]") is None
    assert w.value("llmscaler_scaler_metric_value", metric="m") == 1.0


def test_the_fallback_gauge_is_zero_or_one(w: Metered) -> None:
    w.metrics.set_fallback_active("ns", "s", True)
    assert w.value("llmscaler_scaler_fallback_active") == 1
    w.metrics.set_fallback_active("ns", "s", False)
    assert w.value("llmscaler_scaler_fallback_active") == 0
    w.metrics.forget_scaler("ns", "s")
    assert w.value("llmscaler_scaler_fallback_active") is None


def test_every_exported_name_is_listed_for_dashboards_and_alerts(w: Metered) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(None, error="down")
    w.sync()
    w.fetcher.set_value(2.0)
    w.sync()
    w.metrics.set_fallback_active("ns", "s", False)
    exported = {name for name, _ in w.series_of("s")}
    # prometheus_client adds a <name>_created sample to every counter child
    created = {n.removesuffix("_total") + "_created" for n in SCALER_METRIC_NAMES if "_total" in n}
    assert exported == set(SCALER_METRIC_NAMES) | created


def test_a_plain_sync_metrics_sink_keeps_working_through_the_wider_port() -> None:
    seen: list[tuple[str, str]] = []

    class Plain:
        def observe_sync(self, result: str, reason: str) -> None:
            seen.append((result, reason))

    wide = scaler_metrics(Plain())  # type: ignore[arg-type]
    wide.observe_sync("success", "Scaling")
    wide.observe_scale("ns", "s", "up")  # dropped, no error
    wide.forget_scaler("ns", "s")
    assert seen == [("success", "Scaling")]
    assert isinstance(scaler_metrics(None), NoopScalerMetrics)
    metrics = PrometheusScalerMetrics(CollectorRegistry())
    assert scaler_metrics(metrics) is metrics
    assert isinstance(metrics, ScalerMetrics)


def test_an_advisory_scaler_reports_its_desired_count_but_no_scale_event(w: Metered) -> None:
    w.reconciler = w.new_reconciler(advisory=True)
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.sync()
    assert w.value("llmscaler_scaler_desired_replicas") == 6  # the advice
    assert w.value("llmscaler_scaler_scale_events_total", direction="up") == 0
