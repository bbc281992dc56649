"""controller-runtime style builder: declare what a controller watches, get it registered.

    Builder(manager).for_("autoscaling.modelsphere.dev/v1alpha1", "LLMScaler",
                          predicates=[GenerationChangedPredicate()]) \\
        .owns("apps/v1", "Deployment") \\
        .with_options(max_concurrent_reconciles=2) \\
        .complete(reconciler)

The manager only has to offer ``cache.get_informer(api_version, kind)``, ``add(runnable)`` and
``clock``: its controllers time retries and reconciles with the manager's one clock unless
``with_options(clock=...)`` says otherwise, so a fake clock injected into the manager reaches
every controller it builds. Its ``metrics`` (None for none) is used for every controller when
it implements :class:`~llmscaler_runtime.controller.metrics.ControllerMetricsProvider` and/or
:class:`~llmscaler_runtime.workqueue.QueueMetricsProvider` (one object may implement both, as
``manager.ControllerMetrics`` does; hence one member checked against each protocol).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import attrs

from llmscaler_runtime.clock import Clock
from llmscaler_runtime.controller.controller import Controller, Informer
from llmscaler_runtime.controller.handlers import Mapper, enqueue_for_object, enqueue_for_owner
from llmscaler_runtime.controller.metrics import ControllerMetricsProvider
from llmscaler_runtime.controller.predicates import Predicate
from llmscaler_runtime.controller.types import Reconciler
from llmscaler_runtime.workqueue import QueueMetricsProvider, RateLimiter

__all__ = ["Builder", "InformerSource", "ManagerLike"]


class InformerSource(Protocol):
    """The part of the informer cache the builder uses."""

    def get_informer(self, api_version: str, kind: str) -> Informer: ...


class ManagerLike(Protocol):
    """The part of the manager the builder uses."""

    @property
    def cache(self) -> InformerSource: ...

    @property
    def clock(self) -> Clock:
        """The clock every controller of this manager uses unless given its own."""
        ...

    @property
    def metrics(self) -> object:
        """The manager's metrics (None for none): used for every controller it builds when it
        implements ``ControllerMetricsProvider`` and/or ``QueueMetricsProvider``."""
        ...

    def add(self, runnable: Any) -> None: ...


@attrs.frozen
class _Watch:
    api_version: str
    kind: str
    mapper: Mapper | None  # None: resolved at complete() (owner mapping needs the For kind)
    predicates: tuple[Predicate, ...]


def _check_gvk(api_version: str, kind: str) -> None:
    if not api_version or api_version.count("/") > 1 or api_version.endswith("/"):
        raise ValueError(f"invalid apiVersion {api_version!r} (want 'v1' or 'group/version')")
    if not kind or not kind[0].isupper():
        raise ValueError(f"invalid kind {kind!r} (want a CamelCase kind such as 'Deployment')")


class Builder:
    """Collects a controller's watches and options; :meth:`complete` builds and registers it."""

    def __init__(self, manager: ManagerLike) -> None:
        self._manager = manager
        self._name: str | None = None
        self._for: _Watch | None = None
        self._owns: list[_Watch] = []
        self._watches: list[_Watch] = []
        self._global_predicates: list[Predicate] = []
        self._options: dict[str, Any] = {}
        self._completed = False

    def named(self, name: str) -> Builder:
        """Controller name (metrics label, log field); default: the For kind in lower case."""
        if not name:
            raise ValueError("controller name must not be empty")
        self._name = name
        return self

    def for_(self, api_version: str, kind: str, *, predicates: Sequence[Predicate] = ()) -> Builder:
        """The kind this controller reconciles; its own events enqueue its own key."""
        if self._for is not None:
            raise ValueError(f"for_() already set to {self._for.kind}; call it once")
        _check_gvk(api_version, kind)
        self._for = _Watch(api_version, kind, enqueue_for_object, tuple(predicates))
        return self

    def owns(self, api_version: str, kind: str, *, predicates: Sequence[Predicate] = ()) -> Builder:
        """A kind this controller creates; its events enqueue the controlling For-kind owner."""
        _check_gvk(api_version, kind)
        self._owns.append(_Watch(api_version, kind, None, tuple(predicates)))
        return self

    def watches(
        self,
        api_version: str,
        kind: str,
        mapper: Mapper,
        *,
        predicates: Sequence[Predicate] = (),
    ) -> Builder:
        """Any other kind, mapped to Requests by ``mapper``."""
        _check_gvk(api_version, kind)
        if not callable(mapper):
            raise TypeError("watches() needs a callable mapper(obj) -> Iterable[Request]")
        self._watches.append(_Watch(api_version, kind, mapper, tuple(predicates)))
        return self

    def with_event_filter(self, predicate: Predicate) -> Builder:
        """A predicate applied to every watch of this controller."""
        self._global_predicates.append(predicate)
        return self

    def with_options(
        self,
        *,
        max_concurrent_reconciles: int | None = None,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        metrics: ControllerMetricsProvider | None = None,
        queue_metrics: QueueMetricsProvider | None = None,
        cache_sync_timeout: float | None = None,
    ) -> Builder:
        """Controller options; ``None`` keeps the default (or the manager's clock and metrics)."""
        given = {
            "max_concurrent_reconciles": max_concurrent_reconciles,
            "rate_limiter": rate_limiter,
            "clock": clock,
            "metrics": metrics,
            "queue_metrics": queue_metrics,
            "cache_sync_timeout": cache_sync_timeout,
        }
        self._options.update({k: v for k, v in given.items() if v is not None})
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Create the controller, wire every watch, add it to the manager, return it."""
        if self._completed:
            raise RuntimeError("Builder.complete() was already called")
        if self._for is None and self._name is None:
            raise ValueError("call for_() or named() before complete()")
        if self._owns and self._for is None:
            raise ValueError("owns() needs for_(): owners are mapped to the For kind")
        name = self._name or (self._for.kind.lower() if self._for is not None else "")
        options = dict(self._options)
        options.setdefault("clock", self._manager.clock)
        manager_metrics = self._manager.metrics
        if "metrics" not in options and isinstance(manager_metrics, ControllerMetricsProvider):
            options["metrics"] = manager_metrics
        if "queue_metrics" not in options and isinstance(manager_metrics, QueueMetricsProvider):
            options["queue_metrics"] = manager_metrics
        controller = Controller(name, reconciler, **options)
        watches: list[_Watch] = []
        if self._for is not None:
            watches.append(self._for)
            owner_mapper = enqueue_for_owner(self._for.api_version, self._for.kind)
            watches.extend(attrs.evolve(w, mapper=owner_mapper) for w in self._owns)
        watches.extend(self._watches)
        for w in watches:
            informer = self._manager.cache.get_informer(w.api_version, w.kind)
            controller.watch(informer, w.mapper, [*self._global_predicates, *w.predicates])
        self._manager.add(controller)
        self._completed = True
        return controller
