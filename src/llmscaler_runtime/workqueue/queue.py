"""The basic work queue, with client-go's ``workqueue.Typed`` semantics.

Three collections carry the whole contract:

* ``queue``      FIFO of items waiting for a worker (each item at most once);
* ``dirty``      items that need processing (queued, or re-added while being processed);
* ``processing`` items handed out by :meth:`Queue.get` and not yet :meth:`Queue.done`.

Consequences that controllers rely on: adding an item already waiting is a no-op (bursts of
events collapse into one reconcile); an item added while a worker processes it is *not* handed
to a second worker — it is parked in ``dirty`` and re-queued when the first worker calls
``done``; so one key is never processed concurrently and no update is lost.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.workqueue.metrics import NoopQueueMetricsProvider, QueueMetricsProvider

__all__ = ["Queue"]

T = TypeVar("T", bound=Hashable)


class _QueueMetrics(Generic[T]):
    """Per-queue bookkeeping behind the metric series (client-go's ``defaultQueueMetrics``)."""

    def __init__(self, name: str, provider: QueueMetricsProvider, clock: Clock) -> None:
        self.clock = clock
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished = provider.new_unfinished_work_seconds_metric(name)
        self.longest = provider.new_longest_running_processor_metric(name)
        self.retries = provider.new_retries_metric(name)
        self.add_times: dict[T, float] = {}
        self.processing_starts: dict[T, float] = {}

    def add(self, item: T) -> None:
        self.adds.inc()
        self.depth.inc()
        if item not in self.add_times:
            self.add_times[item] = self.clock.monotonic()

    def get(self, item: T) -> None:
        self.depth.dec()
        now = self.clock.monotonic()
        self.processing_starts[item] = now
        added = self.add_times.pop(item, None)
        if added is not None:
            self.latency.observe(now - added)

    def done(self, item: T) -> None:
        start = self.processing_starts.pop(item, None)
        if start is not None:
            self.work_duration.observe(self.clock.monotonic() - start)

    def update_unfinished_work(self) -> None:
        now = self.clock.monotonic()
        total = 0.0
        oldest = 0.0
        for start in self.processing_starts.values():
            age = now - start
            total += age
            oldest = max(oldest, age)
        self.unfinished.set(total)
        self.longest.set(oldest)


class Queue(Generic[T]):
    """A thread-safe deduplicating FIFO work queue (client-go ``workqueue.Interface``).

    Items must be hashable and not ``None`` (``None`` is what :meth:`get` returns when there is
    no item). Every item obtained from :meth:`get` must be passed to :meth:`done` exactly once,
    typically in a ``finally`` block.
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics: QueueMetricsProvider | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque[T] = collections.deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._metrics: _QueueMetrics[T] | None = (
            _QueueMetrics(name, metrics, self._clock)
            if metrics is not None and not isinstance(metrics, NoopQueueMetricsProvider)
            else None
        )

    @property
    def clock(self) -> Clock:
        """The clock this queue measures time with (shared with its timer thread)."""
        return self._clock

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing; a no-op once shutting down."""
        if item is None:
            raise TypeError("workqueue items must not be None")
        with self._cond:
            if self._shutting_down:
                return
            if item in self._dirty:
                return
            if self._metrics is not None:
                self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                # Parked: done() re-queues it, so no second worker gets it meanwhile.
                return
            self._queue.append(item)
            self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def len(self) -> int:
        """Number of items waiting for a worker; informational only (it changes at once)."""
        return self.__len__()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Block until an item is available or the queue shuts down.

        Returns ``(item, False)``; ``(None, True)`` once the queue is shutting down and empty
        (items queued before the shutdown are still handed out, as in client-go); and
        ``(None, False)`` if ``timeout`` real seconds passed without an item.
        """
        with self._cond:
            if not self._queue and not self._shutting_down:
                if timeout is None:
                    while not self._queue and not self._shutting_down:
                        self._cond.wait()
                else:
                    deadline = time.monotonic() + timeout
                    while not self._queue and not self._shutting_down:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return None, False
                        self._cond.wait(remaining)
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            if self._metrics is not None:
                self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item, False

    def done(self, item: T) -> None:
        """Finish processing ``item``; re-queue it if it was added again meanwhile."""
        with self._cond:
            if self._metrics is not None:
                self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing and self._drain:
                self._cond.notify_all()

    def shut_down(self) -> None:
        """Stop accepting items and wake every blocked :meth:`get`; does not wait."""
        with self._cond:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Like :meth:`shut_down`, then wait until every handed-out item is ``done``.

        ``timeout`` is in real seconds (it bounds how long a process shutdown blocks, which a
        fake clock must not stretch). Returns True when processing drained, False on timeout
        or when :meth:`shut_down` cancelled the drain.
        """
        with self._cond:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._processing and self._drain:
                if deadline is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
            return not self._processing

    def shutting_down(self) -> bool:
        """True once :meth:`shut_down` or :meth:`shut_down_with_drain` was called."""
        with self._cond:
            return self._shutting_down

    def update_unfinished_work(self) -> None:
        """Refresh the unfinished-work gauges; the delaying queue's timer calls it every 0.5 s."""
        if self._metrics is None:
            return
        with self._cond:
            self._metrics.update_unfinished_work()

    def _metrics_enabled(self) -> bool:
        return self._metrics is not None

    def _record_retry(self) -> None:
        if self._metrics is not None:
            self._metrics.retries.inc()
