"""A thread-safe object store with named secondary indexes (client-go's Indexer).

Informers keep the last known state of every watched object here, and controllers look
objects up by key or by an index (all pods of a namespace, all pods owned by a ReplicaSet)
without scanning. Stored objects are shared with every reader and must never be mutated.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import structlog

__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "Store",
    "namespace_index",
    "object_key",
]

log = structlog.get_logger(__name__)

IndexFunc = Callable[[dict[str, Any]], list[str]]
NAMESPACE_INDEX = "namespace"


@attrs.frozen
class DeletedFinalStateUnknown:
    """A delete observed only as "gone after a relist": ``obj`` is the last state we knew.

    The object may have changed between that state and its deletion, so handlers must not
    trust it for anything but identity (key, uid, owner references).
    """

    key: str
    obj: dict[str, Any]


def object_key(obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise ValueError("object has no metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def namespace_index(obj: dict[str, Any]) -> list[str]:
    """The built-in index: the object's namespace ("" for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    return [str(meta.get("namespace") or "")]


class Store:
    """Key -> object map plus indexes, safe for concurrent readers and one writer."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        self._indices: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}}
        self._resource_version = ""
        if indexers:
            self.add_indexers(indexers)

    # -- indexing ---------------------------------------------------------------------------

    def _values(self, name: str, func: IndexFunc, obj: dict[str, Any]) -> list[str]:
        try:
            return list(func(obj))
        except Exception:
            # one bad object must not break the store for everyone; it is just not indexed
            log.exception("store.index_func_failed", index=name, key=object_key(obj))
            return []

    def _index(self, key: str, obj: dict[str, Any]) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in self._values(name, func, obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: dict[str, Any]) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in self._values(name, func, obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indexes; existing objects are indexed at once."""
        with self._lock:
            for name in indexers:
                if name in self._indexers:
                    raise ValueError(f"indexer {name!r} already exists")
            for name, func in indexers.items():
                self._indexers[name] = func
                index: dict[str, set[str]] = {}
                self._indices[name] = index
                for key, obj in self._items.items():
                    for value in self._values(name, func, obj):
                        index.setdefault(value, set()).add(key)

    # -- writes -----------------------------------------------------------------------------

    def add(self, obj: dict[str, Any]) -> None:
        """Insert or replace the object under its key."""
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            self._index(key, obj)

    update = add

    def delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        """Remove the object with this object's key (absent keys are ignored)."""
        key = object_key(obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)

    def replace(self, items: Iterable[dict[str, Any]], resource_version: str) -> None:
        """Swap the whole content for a fresh list (after a LIST)."""
        fresh = {object_key(obj): obj for obj in items}
        with self._lock:
            self._items = fresh
            self._indices = {name: {} for name in self._indexers}
            for key, obj in fresh.items():
                self._index(key, obj)
            self._resource_version = resource_version

    # -- reads ------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the last replace (the list the content started from)."""
        return self._resource_version

    def get(self, key: str) -> dict[str, Any] | None:
        """The shared object under ``key`` (do not mutate it)."""
        with self._lock:
            return self._items.get(key)

    def get_by_key(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Lookup by namespace and name; ``namespace`` None or "" for cluster-scoped kinds."""
        return self.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[dict[str, Any]]:
        """All objects (a new list of shared objects)."""
        with self._lock:
            return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        """All keys."""
        with self._lock:
            return list(self._items)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """A consistent key -> object copy of the map (objects still shared)."""
        with self._lock:
            return dict(self._items)

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Keys of the objects whose index function yielded ``value``."""
        with self._lock:
            index = self._indices.get(index_name)
            if index is None:
                raise KeyError(f"no indexer named {index_name!r}")
            return sorted(index.get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[dict[str, Any]]:
        """Objects whose index function yielded ``value``; KeyError for an unknown index."""
        with self._lock:
            return [self._items[key] for key in self.index_keys(index_name, value)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items
