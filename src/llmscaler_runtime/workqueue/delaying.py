"""A work queue that can hold items back until a moment in the future (client-go ``AddAfter``).

Waiting items live in one binary heap ordered by ready time, served by ONE timer thread per
queue, so ten thousand pending requeues cost ten thousand heap entries, not ten thousand
threads or timers. An item already waiting keeps the *earlier* of its two ready times: a
reconcile asked "again in 5 s" and then "again in 30 s" runs after 5 s.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from typing import Any

from llmscaler_runtime.clock import Clock
from llmscaler_runtime.workqueue.metrics import QueueMetricsProvider
from llmscaler_runtime.workqueue.queue import Queue, T

__all__ = ["DelayingQueue"]

# Heap entry layout: [ready_at, sequence, item, valid]. The sequence keeps FIFO order among equal
# ready times and guarantees items themselves are never compared. Replacing an entry with an
# earlier ready time invalidates the old one (lazy deletion) instead of re-heapifying.
_READY, _SEQ, _ITEM, _VALID = 0, 1, 2, 3


class DelayingQueue(Queue[T]):
    """A :class:`Queue` with :meth:`add_after`.

    The timer thread starts with the queue and ends at :meth:`shut_down` (or the drain
    variant), which owners must call: a queue that is merely dropped keeps its daemon thread.
    """

    #: Longest the timer thread sleeps without looking at the heap (client-go's heartbeat).
    MAX_WAIT = 10.0
    #: Period of the unfinished-work gauge refresh when metrics are enabled (client-go: 500 ms).
    UNFINISHED_WORK_PERIOD = 0.5

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics: QueueMetricsProvider | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics=metrics)
        self._delay_cond = threading.Condition(threading.Lock())
        self._heap: list[list[Any]] = []
        self._waiting: dict[T, list[Any]] = {}
        self._seq = itertools.count()
        self._timer_stopped = False
        self._timer = threading.Thread(
            target=self._waiting_loop, name=f"workqueue-timer-{name or id(self)}", daemon=True
        )
        self._timer.start()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed; ``delay <= 0`` adds it now."""
        if item is None:
            raise TypeError("workqueue items must not be None")
        if self.shutting_down():
            return
        # Counted before the delay check, as client-go does: every add_after (rate-limited
        # requeue, requeue_after, a zero delay included) is one retry in workqueue_retries_total.
        self._record_retry()
        if delay <= 0:
            self.add(item)
            return
        with self._delay_cond:
            if self._timer_stopped:
                return
            ready_at = self._clock.monotonic() + delay
            existing = self._waiting.get(item)
            if existing is not None:
                if existing[_READY] <= ready_at:
                    return
                existing[_VALID] = False
            entry = [ready_at, next(self._seq), item, True]
            heapq.heappush(self._heap, entry)
            self._waiting[item] = entry
            if self._heap[0] is entry:
                # New earliest deadline: the timer must shorten its sleep.
                self._delay_cond.notify()

    def num_waiting(self) -> int:
        """Items held back by :meth:`add_after` and not yet added."""
        with self._delay_cond:
            return len(self._waiting)

    def shut_down(self) -> None:
        super().shut_down()
        self._stop_timer()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        self._stop_timer()
        return super().shut_down_with_drain(timeout)

    def _stop_timer(self) -> None:
        with self._delay_cond:
            self._timer_stopped = True
            self._heap.clear()
            self._waiting.clear()
            self._delay_cond.notify_all()

    def _waiting_loop(self) -> None:
        clock = self._clock
        heap = self._heap
        with self._delay_cond:
            try:
                next_metrics_update = clock.monotonic()
                while not self._timer_stopped:
                    now = clock.monotonic()
                    while heap and (not heap[0][_VALID] or heap[0][_READY] <= now):
                        entry = heapq.heappop(heap)
                        if entry[_VALID]:
                            del self._waiting[entry[_ITEM]]
                            # Lock order is always timer condition -> queue lock.
                            self.add(entry[_ITEM])
                    timeout = self.MAX_WAIT
                    if heap:
                        timeout = min(timeout, heap[0][_READY] - now)
                    if self._metrics_enabled():
                        if now >= next_metrics_update:
                            self.update_unfinished_work()
                            next_metrics_update = now + self.UNFINISHED_WORK_PERIOD
                        timeout = min(timeout, next_metrics_update - now)
                    clock.wait(self._delay_cond, timeout)
            finally:
                clock.forget_waiter(self._delay_cond)
