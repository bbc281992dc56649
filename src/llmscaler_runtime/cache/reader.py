"""InformerCache: what reconcilers read from instead of the API server.

One SharedInformer per (apiVersion, kind), created on first use, so a controller only pays
for the kinds it touches. Reads are served from memory.

Objects returned by :meth:`InformerCache.get` and :meth:`InformerCache.list` are the cache's
own, shared with every other reader and with the informer: never mutate them. Take a private
copy with :func:`llmscaler_runtime.kube.deep_copy` before changing anything.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..clock import Clock
from .informer import SharedInformer
from .reflector import ListerWatcher
from .selector import LabelSelector, parse_selector
from .store import NAMESPACE_INDEX, IndexFunc

__all__ = ["CacheNotStarted", "CacheNotSynced", "InformerCache"]


class CacheNotStarted(RuntimeError):
    """Read before :meth:`InformerCache.start`: memory would be empty, not authoritative."""


class CacheNotSynced(TimeoutError):
    """An informer created on demand did not finish its first list in time."""


class InformerCache:
    """Lazily creates, starts and reads shared informers; thread-safe.

    ``clock`` times every informer's reflector (backoff reset, short-watch detection); the
    manager passes its own so one injected clock reaches the cache too.
    """

    def __init__(
        self,
        client: ListerWatcher,
        namespace: str | None = None,
        *,
        resync_period: float | None = None,
        sync_timeout: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.namespace = namespace
        self._resync_period = resync_period
        self._sync_timeout = sync_timeout
        self._lock = threading.Lock()
        self._informers: dict[tuple[str, str], SharedInformer] = {}
        self._started = False

    def get_informer(self, api_version: str, kind: str) -> SharedInformer:
        """The informer for this kind, created (and started, if the cache is) on first use."""
        key = (api_version, kind)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = SharedInformer(
                    self._client,
                    api_version,
                    kind,
                    self.namespace,
                    resync_period=self._resync_period,
                    clock=self._clock,
                )
                self._informers[key] = informer
            if self._started:
                informer.start()
            return informer

    def informers(self) -> list[SharedInformer]:
        """All informers created so far."""
        with self._lock:
            return list(self._informers.values())

    def _synced_informer(self, api_version: str, kind: str) -> SharedInformer:
        if not self._started:
            raise CacheNotStarted(f"cache read of {kind} before InformerCache.start()")
        informer = self.get_informer(api_version, kind)
        if not informer.wait_for_sync(self._sync_timeout):
            raise CacheNotSynced(f"informer for {api_version} {kind} did not sync in time")
        return informer

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """The cached object or None; shared, do not mutate."""
        return self._synced_informer(api_version, kind).store.get_by_key(namespace, name)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
    ) -> list[dict[str, Any]]:
        """Cached objects, optionally of one namespace and matching a label selector.

        Shared objects, do not mutate. A malformed selector raises ValueError.
        """
        selector = parse_selector(label_selector)
        store = self._synced_informer(api_version, kind).store
        items = store.by_index(NAMESPACE_INDEX, namespace) if namespace else store.list()
        if not selector.requirements:
            return items
        return [obj for obj in items if selector.matches_object(obj)]

    def add_indexers(self, api_version: str, kind: str, indexers: Mapping[str, IndexFunc]) -> None:
        """Add secondary indexes to a kind's store (e.g. pods by owner); works at any time."""
        self.get_informer(api_version, kind).store.add_indexers(indexers)

    def by_index(
        self, api_version: str, kind: str, index_name: str, value: str
    ) -> builtins.list[dict[str, Any]]:
        """Cached objects whose index ``index_name`` yields ``value``; shared, do not mutate."""
        return self._synced_informer(api_version, kind).store.by_index(index_name, value)

    def start(self) -> None:
        """Start every informer created so far; later ones start on creation."""
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def stop(self) -> None:
        """Stop all informers."""
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            informer.stop()

    def has_synced(self) -> bool:
        """True when every informer created so far has synced."""
        return all(i.has_synced() for i in self.informers())

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait for all current informers to sync within ``timeout`` seconds overall."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self.informers():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.wait_for_sync(remaining):
                return False
        return True
