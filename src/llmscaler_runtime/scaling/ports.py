"""What the scaling pipeline needs from the world, as protocols and nothing else.

The reconciler and its steps see Kubernetes only through these ports, so a library user can
run the pipeline on fakes (the unit tests), on a virtual cluster (the what-if simulator) or on
the real manager (``scaling.setup``) without the pipeline knowing which. Every member the
pipeline uses is declared here: nothing is probed with ``getattr``, so ``mypy --strict`` checks
each implementation against the same contract.

The real implementations are ``kube.Client`` (:class:`ScalerClient`), ``cache.InformerCache``
(:class:`ScalerCache`), ``events.EventRecorder`` (:class:`EventSink`) and
``manager.Manager`` (:class:`ScalerManager`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from prometheus_client import CollectorRegistry

from llmscaler_runtime.clock import Clock
from llmscaler_runtime.controller.builder import InformerSource, ManagerLike
from llmscaler_runtime.kube.client import PatchType

__all__ = [
    "EventSink",
    "EventType",
    "IndexFunc",
    "IndexedScalerCache",
    "ManagerCache",
    "ObjectGetter",
    "ResourceMapper",
    "ScalerCache",
    "ScalerClient",
    "ScalerManager",
    "WriteClient",
]

EventType = Literal["Normal", "Warning"]
IndexFunc = Callable[[dict[str, Any]], list[str]]


class ScalerCache(Protocol):
    """The reads the reconciler makes from the informer cache (objects are shared: read only)."""

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None: ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | Mapping[str, Any] | None = None,
    ) -> builtins.list[dict[str, Any]]: ...

    def by_index(
        self, api_version: str, kind: str, index_name: str, value: str
    ) -> builtins.list[dict[str, Any]]:
        """Objects whose index ``index_name`` yields ``value``; ``KeyError`` when the cache
        was wired without that index (the reconciler then lists the namespace instead)."""
        ...


class ResourceMapper(Protocol):
    """Kind -> resource lookup; raises ``LookupError`` for a kind the server does not serve."""

    def resource_for(self, api_version: str, kind: str) -> object: ...


class ObjectGetter(Protocol):
    """One object straight from the API (the target when the cache lacks it; a Secret)."""

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


class WriteClient(Protocol):
    """The writes of a scaling decision: the replica apply, pod annotations, the status."""

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


class ScalerClient(ObjectGetter, WriteClient, Protocol):
    """The direct API calls the reconciler makes (a subset of ``kube.Client``)."""

    @property
    def mapper(self) -> ResourceMapper | None:
        """The RESTMapper, so an unknown target kind is found before the cache is asked for
        it (which would start an informer that can never sync); None skips that check."""
        ...

    def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], str]: ...


class EventSink(Protocol):
    """Where Kubernetes Events go (``events.EventRecorder`` aggregates repeats)."""

    def event(self, obj: dict[str, Any], type_: EventType, reason: str, message: str) -> None: ...


class IndexedScalerCache(ScalerCache, Protocol):
    """A cache that also takes secondary indexes (``setup`` adds the target index)."""

    def add_indexers(
        self, api_version: str, kind: str, indexers: Mapping[str, IndexFunc]
    ) -> None: ...


class ManagerCache(IndexedScalerCache, InformerSource, Protocol):
    """The manager's cache: the reconciler's reads, indexes, and informers for the watches."""


class ScalerManager(ManagerLike, Protocol):
    """The part of ``manager.Manager`` that :func:`scaling.setup` wires the reconciler into
    (``ManagerLike`` adds what ``controller.Builder`` needs: ``add`` and the informers)."""

    @property
    def client(self) -> ScalerClient: ...

    @property
    def cache(self) -> ManagerCache: ...

    @property
    def clock(self) -> Clock:
        """The manager's one clock; the reconciler and its steps share it."""
        ...

    @property
    def registry(self) -> CollectorRegistry:
        """The manager's Prometheus registry, served on its metrics endpoint."""
        ...

    def event_recorder(self, component: str) -> EventSink: ...

    def is_leader(self) -> bool:
        """False while another replica holds the lease; True without leader election."""
        ...


if TYPE_CHECKING:  # the real implementations satisfy the ports (checked by mypy, never run)
    from llmscaler_runtime.cache import InformerCache
    from llmscaler_runtime.events import EventRecorder
    from llmscaler_runtime.kube import Client
    from llmscaler_runtime.manager import Manager

    def _client(c: Client) -> ScalerClient:
        return c

    def _cache(c: InformerCache) -> ManagerCache:
        return c

    def _events(e: EventRecorder) -> EventSink:
        return e

    def _manager(m: Manager) -> ScalerManager:
        return m
