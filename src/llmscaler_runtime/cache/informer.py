"""SharedInformer: one reflector, one store, many event handlers.

The reflector thread only updates the store and queues notifications; each handler has its
own dispatch thread and unbounded queue (client-go's processorListener), so a slow handler
delays only itself, never the watch or the other handlers. Every handler sees the events of
one object in the order they happened.

On a relist (start-up, or after 410 Gone) the new list is compared with the store: new keys
are adds, changed resourceVersions are updates, and keys that vanished are deletes carrying a
:class:`DeletedFinalStateUnknown` tombstone, since the final state was never observed.
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import structlog

from ..clock import Clock
from .backoff import Backoff
from .reflector import ListerWatcher, Reflector
from .store import DeletedFinalStateUnknown, IndexFunc, Store, object_key
from .transform import strip_managed_fields

__all__ = ["FuncHandler", "ResourceEventHandler", "SharedInformer"]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]


@runtime_checkable
class ResourceEventHandler(Protocol):
    """Receives informer events; ``on_delete`` may get a DeletedFinalStateUnknown.

    Objects are shared with the cache and every other handler: never mutate them.
    """

    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None: ...


class FuncHandler:
    """Adapts optional plain functions to ResourceEventHandler."""

    def __init__(
        self,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj | DeletedFinalStateUnknown], None] | None = None,
    ) -> None:
        self._add, self._update, self._delete = on_add, on_update, on_delete

    def on_add(self, obj: Obj) -> None:
        if self._add is not None:
            self._add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self._update is not None:
            self._update(old, new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if self._delete is not None:
            self._delete(obj)


_STOP = object()


class _Listener:
    """One handler's queue and dispatch thread."""

    def __init__(self, handler: ResourceEventHandler, name: str) -> None:
        self.handler = handler
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def push(self, notification: tuple[Any, ...]) -> None:
        self._queue.put(notification)

    def stop(self, timeout: float | None) -> None:
        self._queue.put(_STOP)
        if self._started:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            kind = item[0]
            try:
                if kind == "add":
                    self.handler.on_add(item[1])
                elif kind == "update":
                    self.handler.on_update(item[1], item[2])
                else:
                    self.handler.on_delete(item[1])
            except Exception:
                # a broken handler must not kill its dispatch thread and lose later events
                log.exception("informer.handler_failed", notification=kind)


class SharedInformer:
    """Watches one kind (optionally one namespace / label selector) into :attr:`store`."""

    def __init__(
        self,
        client: ListerWatcher,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resync_period: float | None = None,
        transform: Transform | None = strip_managed_fields,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        backoff: Backoff | None = None,
        min_watch_timeout: float = 300.0,
        max_watch_timeout: float = 600.0,
    ) -> None:
        if resync_period is not None and resync_period < 1.0 and resync_period != 0:
            # client-go's minimum; a smaller value is almost always a units mistake
            raise ValueError("resync_period must be >= 1 second (or None to disable)")
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.store = Store(indexers)
        self._resync_period = resync_period or None
        self._lock = threading.RLock()
        self._listeners: list[_Listener] = []
        self._synced = threading.Event()
        self._stopped = threading.Event()
        self._started = False
        self._threads: list[threading.Thread] = []
        self._reflector = Reflector(
            client,
            api_version,
            kind,
            self,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            transform=transform,
            clock=clock,
            sleep=sleep,
            rng=rng,
            backoff=backoff,
            min_watch_timeout=min_watch_timeout,
            max_watch_timeout=max_watch_timeout,
        )

    @property
    def reflector(self) -> Reflector:
        """The underlying reflector (for its last resourceVersion, in diagnostics)."""
        return self._reflector

    # -- handlers ---------------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: ResourceEventHandler | None = None,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj | DeletedFinalStateUnknown], None] | None = None,
    ) -> None:
        """Register a handler (object or functions); it first gets adds for current content."""
        if handler is None:
            if on_add is None and on_update is None and on_delete is None:
                raise ValueError("give a handler or at least one of on_add/on_update/on_delete")
            handler = FuncHandler(on_add, on_update, on_delete)
        elif on_add is not None or on_update is not None or on_delete is not None:
            raise ValueError("give either a handler object or functions, not both")
        with self._lock:
            listener = _Listener(handler, f"informer-{self.kind}-handler-{len(self._listeners)}")
            for obj in self.store.list():
                listener.push(("add", obj))
            self._listeners.append(listener)
            if self._started:
                listener.start()

    def _dispatch(self, notification: tuple[Any, ...]) -> None:
        for listener in self._listeners:
            listener.push(notification)

    # -- ReflectorSink (called from the reflector thread) ----------------------------------

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """Swap in a fresh list and tell handlers what changed since the store's content."""
        with self._lock:
            old = self.store.snapshot()
            self.store.replace(items, resource_version)
            seen: set[str] = set()
            for obj in items:
                key = object_key(obj)
                seen.add(key)
                previous = old.get(key)
                if previous is None:
                    self._dispatch(("add", obj))
                elif _rv(previous) != _rv(obj):
                    self._dispatch(("update", previous, obj))
            for key, previous in old.items():
                if key not in seen:
                    self._dispatch(("delete", DeletedFinalStateUnknown(key, previous)))
            self._synced.set()

    def add(self, obj: Obj) -> None:
        """ADDED event (an update if the key is known, e.g. after a resumed watch)."""
        self._upsert(obj)

    def update(self, obj: Obj) -> None:
        """MODIFIED event."""
        self._upsert(obj)

    def _upsert(self, obj: Obj) -> None:
        with self._lock:
            previous = self.store.get(object_key(obj))
            self.store.add(obj)
            if previous is None:
                self._dispatch(("add", obj))
            else:
                self._dispatch(("update", previous, obj))

    def delete(self, obj: Obj) -> None:
        """DELETED event: handlers get the final state the server sent."""
        with self._lock:
            self.store.delete(obj)
            self._dispatch(("delete", obj))

    # -- lifecycle --------------------------------------------------------------------------

    def resync(self) -> None:
        """Replay every stored object to all handlers as an update with old == new."""
        with self._lock:
            for obj in self.store.list():
                self._dispatch(("update", obj, obj))

    def _resync_loop(self, period: float) -> None:
        while not self._stopped.wait(period):
            if self._synced.is_set():
                self.resync()

    def start(self) -> None:
        """Start the reflector, dispatch and resync threads; calling again does nothing."""
        with self._lock:
            if self._started or self._stopped.is_set():
                return
            self._started = True
            for listener in self._listeners:
                listener.start()
            name = f"informer-{self.kind}-{self.namespace or 'all'}"
            self._threads.append(
                threading.Thread(target=self._reflector.run, name=name, daemon=True)
            )
            if self._resync_period:
                self._threads.append(
                    threading.Thread(
                        target=self._resync_loop,
                        args=(self._resync_period,),
                        name=name + "-resync",
                        daemon=True,
                    )
                )
            for thread in self._threads:
                thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop watching and dispatching; queued notifications are still delivered first."""
        with self._lock:
            self._stopped.set()
            listeners = list(self._listeners)
        self._reflector.stop()
        for thread in self._threads:
            thread.join(timeout)
        for listener in listeners:
            listener.stop(timeout)

    @property
    def started(self) -> bool:
        """True once start() has run."""
        return self._started

    def has_synced(self) -> bool:
        """True once the first complete list is in the store and its events are queued."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until synced or ``timeout`` seconds; return whether it synced."""
        return self._synced.wait(timeout)


def _rv(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")
