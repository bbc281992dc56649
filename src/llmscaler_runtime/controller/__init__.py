"""Controllers in the controller-runtime mould: Requests, Results, workers, predicates, builder.

A :class:`Controller` turns informer events (filtered by :mod:`.predicates`, mapped by
:mod:`.handlers`) into :class:`Request` keys on a rate-limited queue and runs a
:class:`Reconciler` on them from ``max_concurrent_reconciles`` worker threads. The
:class:`Builder` wires watches from a manager's informer cache.
"""

from llmscaler_runtime.controller.builder import Builder, InformerSource, ManagerLike
from llmscaler_runtime.controller.controller import Controller, Informer
from llmscaler_runtime.controller.handlers import (
    EnqueueHandler,
    Mapper,
    enqueue_for_object,
    enqueue_for_owner,
    unwrap_tombstone,
)
from llmscaler_runtime.controller.metrics import (
    RESULTS,
    ControllerMetricsProvider,
    NoopControllerMetrics,
)
from llmscaler_runtime.controller.predicates import (
    AnnotationChangedPredicate,
    Funcs,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    ResourceVersionChangedPredicate,
    and_,
    label_selector_predicate,
    new_predicate_filter,
    new_predicate_funcs,
    not_,
    or_,
)
from llmscaler_runtime.controller.selectors import LabelSelector, Requirement, parse_selector
from llmscaler_runtime.controller.types import Reconciler, Request, Result, TerminalError

__all__ = [
    "RESULTS",
    "AnnotationChangedPredicate",
    "Builder",
    "Controller",
    "ControllerMetricsProvider",
    "EnqueueHandler",
    "Funcs",
    "GenerationChangedPredicate",
    "Informer",
    "InformerSource",
    "LabelChangedPredicate",
    "LabelSelector",
    "ManagerLike",
    "Mapper",
    "NoopControllerMetrics",
    "Predicate",
    "Reconciler",
    "Request",
    "Requirement",
    "ResourceVersionChangedPredicate",
    "Result",
    "TerminalError",
    "and_",
    "enqueue_for_object",
    "enqueue_for_owner",
    "label_selector_predicate",
    "new_predicate_filter",
    "new_predicate_funcs",
    "not_",
    "or_",
    "parse_selector",
    "unwrap_tombstone",
]
