"""Watch fan-out: the open watches and the in-process listeners every commit is offered to.

Apart from the versioned store because delivery has its own concurrency: watches queue events
for their HTTP threads, and listeners (the simulator, the garbage collector) run on one
dispatcher thread of their own, so a slow or broken listener never holds the storage lock.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .common import Key, Listener, Obj, fast_copy

_log = logging.getLogger("llmscaler_runtime.envtest.storage")


class Watcher:
    """A registered watch: filters events of one resource and queues them for one client."""

    def __init__(
        self,
        key: Key,
        namespace: str | None,
        label_pred: Callable[[Mapping[str, str]], bool],
        field_pred: Callable[[Mapping[str, Any]], bool],
    ) -> None:
        self.key = key
        self.namespace = namespace
        self.label_pred = label_pred
        self.field_pred = field_pred
        self.events: queue.SimpleQueue[tuple[str, Obj] | None] = queue.SimpleQueue()
        self.closed = False
        self.last_rv = 0

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.label_pred(meta.get("labels") or {}) and self.field_pred(obj)

    def offer(self, etype: str, obj: Obj, old: Obj | None) -> None:
        now_match = self.matches(obj)
        was_match = self.matches(old) if old is not None else now_match
        if etype == "MODIFIED":
            if now_match and not was_match:
                etype = "ADDED"
            elif was_match and not now_match:
                etype = "DELETED"
            elif not now_match:
                return
        elif not now_match:
            return
        self.events.put((etype, obj))

    def close(self) -> None:
        self.closed = True
        self.events.put(None)


class Fanout:
    """The watches and listeners; ``publish`` runs with the storage lock held, so the order of
    events on every watch is the order of commits."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._watchers: set[Watcher] = set()
        self._listeners: list[Listener] = []
        self._dispatch: queue.SimpleQueue[tuple[str, Obj] | None] = queue.SimpleQueue()
        self._dispatcher = threading.Thread(
            target=self._dispatch_loop, name="envtest-storage-listeners", daemon=True
        )
        self._dispatcher.start()

    def publish(self, key: Key, etype: str, obj: Obj, old: Obj | None) -> None:
        """Offer one committed event to the watches of its resource and queue it for the
        listeners (lock held)."""
        for w in self._watchers:
            if w.key == key and not w.closed:
                w.offer(etype, obj, old)
        if self._listeners:
            self._dispatch.put((etype, obj))

    def add_listener(self, cb: Listener) -> None:
        with self._lock:
            self._listeners.append(cb)

    def add(self, w: Watcher) -> None:
        """Register a watch (lock held, right after its initial events were collected)."""
        self._watchers.add(w)

    def stop(self, w: Watcher) -> None:
        with self._lock:
            self._watchers.discard(w)
        w.closed = True

    def drop(self, key: Key | None = None) -> int:
        """End every watch of ``key`` (all watches when None); returns how many ended."""
        with self._lock:
            victims = [w for w in self._watchers if key is None or w.key == key]
            for w in victims:
                w.close()
                self._watchers.discard(w)
        return len(victims)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._watchers)

    def close(self) -> None:
        """Stop the listener dispatcher and end every open watch."""
        self._dispatch.put(None)
        self.drop()

    def _dispatch_loop(self) -> None:
        while True:
            item = self._dispatch.get()
            if item is None:
                return
            etype, obj = item
            for cb in list(self._listeners):
                try:
                    cb(etype, fast_copy(obj))
                except Exception:  # a broken listener must not stop event delivery
                    _log.exception("storage listener failed")
