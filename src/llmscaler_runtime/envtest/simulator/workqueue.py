"""The simulator's work queue: dirty keys in arrival order, plus a timer heap that re-queues a
key once the (possibly fake) clock reaches its time.

Controllers only add to it (``enqueue``, ``schedule``); the simulator's core drains it. Kept
apart from the core so that the controllers can be handed the queue without the core, which
imports them.
"""

from __future__ import annotations

import heapq
import threading
import time

from .util import Clock

Key = tuple[str, str | None, str]


class WorkQueue:
    """Level-triggered: a key that is already queued is not queued twice."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: list[Key] = []
        self._dirty: set[Key] = set()
        self._timers: list[tuple[float, int, Key]] = []
        self._timer_seq = 0
        self._stopping = False

    def enqueue(self, key: Key) -> None:
        with self._cond:
            if key in self._dirty:
                return
            self._dirty.add(key)
            self._queue.append(key)
            self._cond.notify()

    def schedule(self, key: Key, at: float) -> None:
        """Re-sync ``key`` once the clock reaches ``at`` (monotonic seconds)."""
        with self._cond:
            self._timer_seq += 1
            heapq.heappush(self._timers, (at, self._timer_seq, key))
            self._cond.notify()

    def next_timer(self) -> float | None:
        """When the earliest pending timer fires (clock seconds)."""
        with self._cond:
            return self._timers[0][0] if self._timers else None

    def release_due(self) -> None:
        """Queue the keys whose timers are due."""
        now = self._clock.now()
        with self._cond:
            while self._timers and self._timers[0][0] <= now:
                _, _, key = heapq.heappop(self._timers)
                if key not in self._dirty:
                    self._dirty.add(key)
                    self._queue.append(key)

    def pop(self) -> Key | None:
        with self._cond:
            if not self._queue:
                return None
            key = self._queue.pop(0)
            self._dirty.discard(key)
            return key

    # ---- the background worker's side -------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping

    def resume(self) -> None:
        self._stopping = False

    def halt(self) -> None:
        """Wake the worker and make it return."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def wait(self, resync_every: float, last_resync: float) -> bool:
        """Block until a key is queued, a timer is due or a resync is due (``time.monotonic``
        seconds since ``last_resync``); False once the queue was halted."""
        with self._cond:
            while not self._stopping and not self._queue:
                now = self._clock.now()
                if self._timers and self._timers[0][0] <= now:
                    break
                wait = resync_every
                if self._timers:
                    wait = min(wait, max(self._timers[0][0] - now, 0.001))
                self._cond.wait(wait)
                if time.monotonic() - last_resync >= resync_every:
                    break
            return not self._stopping


__all__ = ["Key", "WorkQueue"]
