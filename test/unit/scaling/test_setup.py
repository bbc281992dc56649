"""setup(): the controller watches LLMScalers, filtering status-only updates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND
from llmscaler_runtime.scaling import HttpOptions, setup
from llmscaler_runtime.scaling.conflicts import TARGET_INDEX
from llmscaler_runtime.scaling.pause import PAUSED_ANNOTATION, PAUSED_REPLICAS_ANNOTATION
from llmscaler_runtime.scaling.reconciler import LLMScalerReconciler

from .fakes import FakeCache, FakeClient, FakeClock, FakeCluster, FakeRecorder, scaler_obj


class FakeInformer:
    def __init__(self) -> None:
        self.on_add: Any = None
        self.on_update: Any = None

    def add_event_handler(
        self,
        handler: Any = None,
        *,
        on_add: Any = None,
        on_update: Any = None,
        on_delete: Any = None,
    ) -> None:
        self.on_add = on_add or getattr(handler, "on_add", None)
        self.on_update = on_update or getattr(handler, "on_update", None)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return True

    def has_synced(self) -> bool:
        return True


class InformingCache(FakeCache):
    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(cluster)
        self.informers: dict[tuple[str, str], FakeInformer] = {}
        self.indexers: dict[tuple[str, str], set[str]] = {}

    def add_indexers(self, api_version: str, kind: str, indexers: Mapping[str, Any]) -> None:
        self.indexers.setdefault((api_version, kind), set()).update(indexers)

    def get_informer(self, api_version: str, kind: str) -> FakeInformer:
        return self.informers.setdefault((api_version, kind), FakeInformer())


class FakeManager:
    def __init__(self) -> None:
        self.cluster = FakeCluster()
        self.client = FakeClient(self.cluster)
        self.cache = InformingCache(self.cluster)
        self.clock = FakeClock()
        self.metrics = None
        self.registry = CollectorRegistry()
        self.added: list[Any] = []
        self.recorders: list[str] = []

    def add(self, runnable: Any) -> None:
        self.added.append(runnable)

    def event_recorder(self, component: str) -> FakeRecorder:
        self.recorders.append(component)
        return FakeRecorder()

    def is_leader(self) -> bool:
        return True


def test_setup_registers_a_generation_filtered_llmscaler_controller() -> None:
    mgr = FakeManager()
    controller = setup(mgr, max_concurrent_reconciles=3, http_options=HttpOptions(timeout=1))
    assert mgr.added == [controller]
    assert controller.max_concurrent_reconciles == 3
    assert isinstance(controller.reconciler, LLMScalerReconciler)
    assert mgr.recorders == ["llmscaler-operator"]
    assert mgr.cache.indexers == {(API_VERSION, KIND): {TARGET_INDEX}}
    assert controller.reconciler.leader_check == mgr.is_leader
    assert controller.reconciler.clock is mgr.clock  # one clock, shared with the manager
    assert controller.reconciler.advisory is False
    assert setup(FakeManager(), advisory=True).reconciler.advisory is True
    informer = mgr.cache.informers[(API_VERSION, KIND)]
    old = scaler_obj()
    status_only = {**old, "status": {"currentReplicas": 3}}
    informer.on_update(old, status_only)
    assert len(controller.queue) == 0
    spec_change = {**old, "metadata": {**old["metadata"], "generation": 2}}
    informer.on_update(old, spec_change)
    assert len(controller.queue) == 1


def test_a_pause_annotation_wakes_the_scaler_and_other_annotations_do_not() -> None:
    mgr = FakeManager()
    controller = setup(mgr)
    informer = mgr.cache.informers[(API_VERSION, KIND)]
    old = scaler_obj()

    def annotated(**annotations: str) -> dict[str, Any]:
        return {**old, "metadata": {**old["metadata"], "annotations": annotations}}

    informer.on_update(old, annotated(**{"kubectl.kubernetes.io/last-applied-configuration": "{}"}))
    assert len(controller.queue) == 0
    informer.on_update(old, annotated(**{PAUSED_ANNOTATION: "true"}))
    assert len(controller.queue) == 1
    item, _ = controller.queue.get()  # handled; the removal below must enqueue it again
    controller.queue.done(item)
    assert len(controller.queue) == 0
    informer.on_update(annotated(**{PAUSED_REPLICAS_ANNOTATION: "2"}), old)
    assert len(controller.queue) == 1
