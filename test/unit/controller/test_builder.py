"""Builder wiring against a fake manager."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.controller import (
    Builder,
    Controller,
    GenerationChangedPredicate,
    Request,
    Result,
    new_predicate_funcs,
)
from llmscaler_runtime.testkit import FakeClock
from test.unit.controller.fakes import FakeManager, RecordingControllerMetrics, ScriptedReconciler

API = "autoscaling.modelsphere.dev/v1alpha1"


def scaler(name: str, gen: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "LLMScaler",
        "metadata": {"namespace": "ns", "name": name, "generation": gen},
    }


def deployment(owner: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": "d",
            "ownerReferences": [
                {
                    "apiVersion": API,
                    "kind": "LLMScaler",
                    "name": owner,
                    "controller": True,
                    "uid": "u",
                }
            ],
        }
    }


def test_builder_wires_for_owns_watches_and_registers_the_controller() -> None:
    mgr = FakeManager()
    ctrl = (
        Builder(mgr)
        .for_(API, "LLMScaler", predicates=[GenerationChangedPredicate()])
        .owns("apps/v1", "Deployment")
        .watches("v1", "ConfigMap", lambda obj: [Request("ns", "from-cm")])
        .with_options(max_concurrent_reconciles=2)
        .complete(ScriptedReconciler())
    )
    try:
        assert isinstance(ctrl, Controller)
        assert mgr.runnables == [ctrl]
        assert ctrl.name == "llmscaler" and ctrl.max_concurrent_reconciles == 2
        assert ctrl.need_leader_election is True
        inf = mgr.cache.informers
        assert set(inf) == {(API, "LLMScaler"), ("apps/v1", "Deployment"), ("v1", "ConfigMap")}

        inf[(API, "LLMScaler")].fire_update(scaler("s", 1), scaler("s", 1))  # filtered
        assert len(ctrl.queue) == 0
        inf[(API, "LLMScaler")].fire_update(scaler("s", 1), scaler("s", 2))
        inf[("apps/v1", "Deployment")].fire_add(deployment("owner"))
        inf[("v1", "ConfigMap")].fire_add({"metadata": {"namespace": "ns", "name": "cm"}})
        got = set()
        for _ in range(3):
            item, _shutdown = ctrl.queue.get(timeout=1)
            assert item is not None
            got.add(item)
            ctrl.queue.done(item)
        assert got == {Request("ns", "s"), Request("ns", "owner"), Request("ns", "from-cm")}
    finally:
        ctrl.stop(timeout=1)


def test_event_filter_applies_to_every_watch_and_name_override() -> None:
    mgr = FakeManager()
    deny = new_predicate_funcs(create=lambda o: False)
    ctrl = (
        Builder(mgr)
        .named("custom")
        .for_(API, "LLMScaler")
        .owns("apps/v1", "Deployment")
        .with_event_filter(deny)
        .complete(ScriptedReconciler())
    )
    try:
        assert ctrl.name == "custom"
        mgr.cache.informers[(API, "LLMScaler")].fire_add(scaler("s"))
        mgr.cache.informers[("apps/v1", "Deployment")].fire_add(deployment("o"))
        assert len(ctrl.queue) == 0
    finally:
        ctrl.stop(timeout=1)


def test_manager_metrics_are_picked_up() -> None:
    metrics = RecordingControllerMetrics()
    mgr = FakeManager(metrics=metrics)
    ctrl = Builder(mgr).for_(API, "LLMScaler").complete(ScriptedReconciler(Result()))
    try:
        assert ctrl.metrics is metrics
        ctrl.start()
        ctrl.enqueue([Request("ns", "a")])
        assert metrics.wait_results(1) == ["success"]
    finally:
        ctrl.stop(timeout=1)


def test_controllers_use_the_manager_clock_unless_given_their_own() -> None:
    mgr = FakeManager(clock=FakeClock())
    shared = Builder(mgr).for_(API, "LLMScaler").complete(ScriptedReconciler())
    own = FakeClock()
    builder = Builder(mgr).named("own").for_(API, "LLMScaler").with_options(clock=own)
    separate = builder.complete(ScriptedReconciler())
    try:
        assert shared.queue.clock is mgr.clock
        assert separate.queue.clock is own
    finally:
        shared.stop(timeout=1)
        separate.stop(timeout=1)


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda b: b.complete(ScriptedReconciler()), ValueError),
        (
            lambda b: b.named("x").owns("apps/v1", "Deployment").complete(ScriptedReconciler()),
            ValueError,
        ),
        (lambda b: b.for_(API, "LLMScaler").for_(API, "LLMScaler"), ValueError),
        (lambda b: b.for_("", "LLMScaler"), ValueError),
        (lambda b: b.for_("a/b/c", "LLMScaler"), ValueError),
        (lambda b: b.for_(API, "llmscaler"), ValueError),
        (lambda b: b.named(""), ValueError),
        (lambda b: b.watches("v1", "ConfigMap", "not-callable"), TypeError),
    ],
)
def test_builder_rejects_misuse(build: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        build(Builder(FakeManager()))


def test_complete_twice_fails() -> None:
    b = Builder(FakeManager()).for_(API, "LLMScaler")
    ctrl = b.complete(ScriptedReconciler())
    try:
        with pytest.raises(RuntimeError):
            b.complete(ScriptedReconciler())
    finally:
        ctrl.stop(timeout=1)
