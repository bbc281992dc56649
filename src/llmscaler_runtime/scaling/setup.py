"""Wiring the LLMScaler reconciler into a manager.

Kept apart from the reconciler so the pipeline can be used (and tested) without a manager,
and so an embedder can wire a customised :class:`~.steps.Steps` the same way. Custom steps
should be built with ``default_steps(clock=manager.clock)`` (then ``attrs.evolve``): the
providers' coalescing tick must come from the same clock as the reconciler's sync grid.
"""

from __future__ import annotations

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND
from llmscaler_runtime.controller import (
    AnnotationChangedPredicate,
    Builder,
    Controller,
    GenerationChangedPredicate,
    or_,
)
from llmscaler_runtime.scaling.addresses import AddressPolicy
from llmscaler_runtime.scaling.conflicts import TARGET_INDEX, target_index
from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient
from llmscaler_runtime.scaling.metrics import PrometheusScalerMetrics, SyncMetrics
from llmscaler_runtime.scaling.pause import PAUSE_ANNOTATIONS
from llmscaler_runtime.scaling.ports import ScalerManager
from llmscaler_runtime.scaling.reconciler import LLMScalerReconciler
from llmscaler_runtime.scaling.steps import Steps, default_steps

__all__ = ["CONTROLLER_NAME", "EVENT_COMPONENT", "setup"]

CONTROLLER_NAME = "llmscaler"
EVENT_COMPONENT = "llmscaler-operator"


def setup(
    manager: ScalerManager,
    *,
    max_concurrent_reconciles: int = 1,
    http_options: HttpOptions | None = None,
    steps: Steps | None = None,
    address_policy: AddressPolicy | None = None,
    metrics: SyncMetrics | None = None,
    advisory: bool = False,
) -> Controller:
    """Register the LLMScaler controller with ``manager`` and return the Controller.

    LLMScalers are watched with GenerationChangedPredicate, so the controller's own status
    writes do not trigger a reconcile (periodic evaluation comes from ``requeue_after``), or'd
    with a change of the pause annotations, which do not bump the generation but must take
    effect at once.
    ``address_policy`` restricts where metric requests may go (default: anywhere). The field
    manager of the replica write is the one of ``steps.writer`` (``llmscaler-operator`` by
    default): it is how the one-writer rule is seen in ``managedFields``. Sync outcomes
    (``llmscaler_scaler_syncs_total``) and the per-scaler series (``llmscaler_scaler_*``, see
    ``scaling.metrics``) go to the manager's registry unless ``metrics`` says otherwise.
    ``advisory`` makes every scaler advisory (``scaling.advisory``): the manager then writes
    nothing to any target.
    """
    clock = manager.clock  # one clock: the sync grid, the coalescing tick and every budget
    if steps is None:
        steps = default_steps(MetricHttpClient(http_options, clock=clock), clock=clock)
    manager.cache.add_indexers(API_VERSION, KIND, {TARGET_INDEX: target_index})
    reconciler = LLMScalerReconciler(
        manager.client,
        manager.cache,
        manager.event_recorder(EVENT_COMPONENT),
        steps=steps,
        clock=clock,
        leader_check=manager.is_leader,
        address_policy=address_policy,
        metrics=metrics or PrometheusScalerMetrics(manager.registry),
        advisory=advisory,
    )
    return (
        Builder(manager)
        .named(CONTROLLER_NAME)
        .for_(
            API_VERSION,
            KIND,
            predicates=[
                or_(GenerationChangedPredicate(), AnnotationChangedPredicate(PAUSE_ANNOTATIONS))
            ],
        )
        .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
        .complete(reconciler)
    )
