"""The manager's prometheus implementation plugs into the controller and queue hooks."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from llmscaler_runtime.controller import ControllerMetricsProvider, Request, Result
from llmscaler_runtime.controller.builder import Builder
from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.workqueue import QueueMetricsProvider
from test.unit.controller.fakes import FakeManager, ScriptedReconciler, wait_until

manager_metrics = pytest.importorskip("llmscaler_runtime.manager.metrics")


def test_controller_reports_into_controller_runtime_series() -> None:
    registry = CollectorRegistry()
    metrics = manager_metrics.ControllerMetrics(registry=registry)
    assert isinstance(metrics, ControllerMetricsProvider)
    assert isinstance(metrics, QueueMetricsProvider)
    ctrl = (
        Builder(FakeManager(metrics=metrics))
        .named("demo")
        .for_("v1", "ConfigMap")
        .with_options(clock=FakeClock())
        .complete(ScriptedReconciler(RuntimeError("x"), Result(requeue_after=5)))
    )
    try:
        ctrl.start()
        ctrl.enqueue([Request("ns", "a")])

        def value(metric: str, **labels: str) -> float:
            return registry.get_sample_value(metric, labels) or 0.0

        wait_until(
            lambda: (
                value("controller_runtime_reconcile_total", controller="demo", result="error") == 1
            ),
            what="error counted",
        )
        assert value("controller_runtime_reconcile_errors_total", controller="demo") == 1
        assert value("workqueue_adds_total", name="demo", controller="demo") == 1
        assert value("workqueue_retries_total", name="demo", controller="demo") == 1
        assert value("controller_runtime_max_concurrent_reconciles", controller="demo") == 1
    finally:
        ctrl.stop(timeout=5)
