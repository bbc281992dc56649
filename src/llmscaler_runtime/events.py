"""Kubernetes Events for reconcilers, with repeat aggregation and off-thread writes.

A controller that fails on every sync would otherwise create one Event per attempt and flood etcd
and ``kubectl describe``. Like client-go's event correlator, a repeat of the same
(object, type, reason, message) inside ``window`` seconds PATCHes the existing Event's ``count``
and ``lastTimestamp`` instead of creating a new object. Messages that differ on every attempt
(an error text with a changing number in it) would defeat that, so, again like client-go's
``EventAggregator``, once ``max_similar`` distinct messages with the same (object, type, reason)
were seen inside the window, further ones fold into a single Event whose message is
"(combined from similar events): <latest message>". The correlation caches are bounded TTL/LRU
caches, so memory stays flat however many objects a controller touches.

Writes happen on one background thread fed by a bounded queue: a slow or failing API server must
never block or break a reconcile, so :meth:`EventRecorder.event` only enqueues, and write failures
are logged and dropped (Events are best-effort diagnostics, not state).
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from typing import Any, Literal, Protocol

import attrs
import cachetools

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.kube.times import rfc3339
from llmscaler_runtime.log import get_logger

__all__ = ["EventClient", "EventRecorder", "EventType"]

EventType = Literal["Normal", "Warning"]
_EVENT_TYPES = ("Normal", "Warning")

#: Longer messages are cut; the API server rejects very large Events and nobody reads them.
MAX_MESSAGE_LENGTH = 1024
#: Prefix of an Event that stands for many similar ones (client-go's wording).
COMBINED_PREFIX = "(combined from similar events): "

_log = get_logger(__name__)


class EventClient(Protocol):
    """The slice of ``llmscaler_runtime.kube.Client`` the recorder uses."""

    def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]: ...

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: Literal["merge"] = "merge",
    ) -> dict[str, Any]: ...


@attrs.define
class _Series:
    """What the recorder remembers about one aggregated Event."""

    name: str
    namespace: str
    count: int
    first_timestamp: str


@attrs.frozen
class _Write:
    key: tuple[str, ...]
    involved: dict[str, Any]
    namespace: str
    type_: str
    reason: str
    message: str
    at: float


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class EventRecorder:
    """Records core/v1 Events about objects on behalf of ``component``.

    ``clock``'s wall time (:meth:`~llmscaler_runtime.clock.Clock.now`) stamps Events and ages
    the aggregation window (inject a fake one in tests). ``window`` is how long a repeat is folded
    into the previous Event; ``max_series`` bounds the aggregation cache; ``max_pending`` bounds
    the write queue (events beyond it are dropped with a log line rather than growing memory).
    """

    def __init__(
        self,
        client: EventClient,
        component: str,
        *,
        clock: Clock | None = None,
        host: str | None = None,
        window: float = 600.0,
        max_series: int = 4096,
        max_pending: int = 1000,
        max_similar: int = 10,
    ) -> None:
        if not component:
            raise ValueError("component must be a non-empty string")
        if window <= 0:
            raise ValueError(f"window must be > 0 seconds, got {window}")
        if max_similar < 2:
            raise ValueError(f"max_similar must be >= 2, got {max_similar}")
        self.max_similar = max_similar
        self._client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._series: cachetools.TTLCache[tuple[str, ...], _Series] = cachetools.TTLCache(
            maxsize=max_series, ttl=window, timer=self._clock.now
        )
        # (object, type, reason) -> distinct messages seen in the window; only the writer thread
        # touches it. Re-inserting on every event restarts its window, as client-go's record does.
        self._similar: cachetools.TTLCache[tuple[str, ...], set[str]] = cachetools.TTLCache(
            maxsize=max_series, ttl=window, timer=self._clock.now
        )
        self._queue: queue.Queue[_Write | None] = queue.Queue(maxsize=max_pending)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._seq = 0
        #: Counters for tests and debugging: Events created, patched, failed writes, dropped.
        self.created = 0
        self.patched = 0
        self.failed = 0
        self.dropped = 0

    # -- public API -------------------------------------------------------------------------

    def event(self, obj: dict[str, Any], type_: EventType, reason: str, message: str) -> None:
        """Queue an Event about ``obj``; returns at once and never raises on API failure.

        Raises ``ValueError`` only for programming errors (unknown type, empty reason, an
        object without ``kind``/``metadata.name``), which no retry could fix.
        """
        if type_ not in _EVENT_TYPES:
            raise ValueError(f"event type must be 'Normal' or 'Warning', got {type_!r}")
        if not reason:
            raise ValueError("event reason must be non-empty")
        involved = self._involved_object(obj)
        if len(message) > MAX_MESSAGE_LENGTH:
            message = message[: MAX_MESSAGE_LENGTH - 3] + "..."
        namespace = involved.get("namespace") or "default"
        key = (
            involved.get("uid", ""),
            involved["apiVersion"],
            involved["kind"],
            namespace,
            involved["name"],
            type_,
            reason,
            message,
        )
        write = _Write(key, involved, namespace, type_, reason, message, self._clock.now())
        with self._lock:
            if self._stopped:
                self.dropped += 1
                _log.warning("event dropped: recorder stopped", reason=reason)
                return
            self._ensure_thread()
        try:
            self._queue.put_nowait(write)
        except queue.Full:
            with self._lock:
                self.dropped += 1
            _log.warning("event dropped: write queue full", reason=reason, object=involved["name"])

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued Event has been written (or failed). True if drained in time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def stop(self, timeout: float | None = 5.0) -> None:
        """Write what is queued (up to ``timeout``), then stop the writer thread."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            thread = self._thread
        if thread is None:
            return
        self.flush(timeout)
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            # Writer is stuck on a slow API and the queue is full: it is a daemon thread and
            # will exit with the process; do not block shutdown on diagnostics.
            return
        thread.join(timeout)

    # -- internals --------------------------------------------------------------------------

    def _involved_object(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        kind = obj.get("kind")
        name = meta.get("name")
        if not kind or not name:
            raise ValueError("event object needs 'kind' and 'metadata.name'")
        ref: dict[str, Any] = {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": kind,
            "name": name,
        }
        for src, dst in (
            ("namespace", "namespace"),
            ("uid", "uid"),
            ("resourceVersion", "resourceVersion"),
        ):
            if meta.get(src):
                ref[dst] = meta[src]
        return ref

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"events-{self.component}", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._write(item)
            except Exception as exc:  # never let one bad write kill the writer
                with self._lock:
                    self.failed += 1
                _log.warning("event write failed", error=str(exc), exc_type=type(exc).__name__)
            finally:
                self._queue.task_done()

    def _aggregate(self, w: _Write) -> _Write:
        """``w`` itself, or its "combined" stand-in once too many similar messages were seen."""
        similar_key = w.key[:-1]  # everything but the message
        messages = self._similar.get(similar_key)
        if messages is None:
            messages = set()
        messages.add(w.message)
        self._similar[similar_key] = messages
        if len(messages) < self.max_similar:
            return w
        messages.pop()  # stay bounded, as client-go does
        message = (COMBINED_PREFIX + w.message)[:MAX_MESSAGE_LENGTH]
        return attrs.evolve(w, key=(*similar_key, COMBINED_PREFIX), message=message)

    def _write(self, w: _Write) -> None:
        w = self._aggregate(w)
        ts = rfc3339(w.at)
        series = self._series.get(w.key)
        if series is not None:
            series.count += 1
            try:
                self._client.patch(
                    "v1",
                    "Event",
                    series.name,
                    # the message too: a combined Event shows the latest of its messages
                    {"count": series.count, "lastTimestamp": ts, "message": w.message},
                    series.namespace,
                    patch_type="merge",
                )
                with self._lock:
                    self.patched += 1
                # Re-insert to restart the window from this occurrence, as a repeat keeps the
                # series alive.
                self._series[w.key] = series
                return
            except Exception as exc:
                if _status(exc) != 404:
                    raise
                # The Event was garbage-collected (events have a TTL server-side): start anew.
                self._series.pop(w.key, None)
        name = self._event_name(w)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": w.namespace},
            "involvedObject": w.involved,
            "reason": w.reason,
            "message": w.message,
            "type": w.type_,
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
        }
        self._client.create(body, namespace=w.namespace)
        with self._lock:
            self.created += 1
        self._series[w.key] = _Series(name, w.namespace, 1, ts)

    def _event_name(self, w: _Write) -> str:
        # client-go names events "<object>.<hex unix nanos>"; a sequence number keeps two events
        # in the same nanosecond (fake clocks) distinct.
        self._seq += 1
        return f"{w.involved['name']}.{int(w.at * 1e9) + self._seq:x}"
