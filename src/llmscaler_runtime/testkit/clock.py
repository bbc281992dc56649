"""The fake :class:`~llmscaler_runtime.clock.Clock`: time moves only when a test says so.

One fake for every timing rule of the runtime (workqueue, backoff, leases, events, the scaling
pipeline), so a test injects it once, as the manager injects the real clock once.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from llmscaler_runtime.clock import Clock

__all__ = ["DEFAULT_WALL_START", "FakeClock"]

#: Where the fake wall clock starts unless told: a fixed, plausible epoch (2027-01-15).
DEFAULT_WALL_START = 1_800_000_000.0


class _Waiter:
    __slots__ = ("cond", "settled")

    def __init__(self, cond: threading.Condition) -> None:
        self.cond = cond
        # True while the waiter sits in wait() having seen the latest time.
        self.settled = True


class FakeClock:
    """Monotonic and wall time that move only when told to.

    :meth:`step` and :meth:`set` move both clocks, as time passing does; :meth:`step_wall`
    moves only the wall clock, as NTP or a resumed VM does. Moving time wakes every timer
    thread waiting through this clock and blocks until each has processed the new time and
    gone back to waiting (bounded by ``settle_timeout`` real seconds, after which a
    ``RuntimeError`` says how many hung). Monotonic time never goes backwards.
    """

    def __init__(
        self,
        monotonic: float = 0.0,
        *,
        wall: float = DEFAULT_WALL_START,
        settle_timeout: float = 10.0,
    ) -> None:
        self._lock = threading.Lock()
        self._settled_cv = threading.Condition(self._lock)
        self._mono = float(monotonic)
        # invariant: now() == self._mono + self._wall_offset
        self._wall_offset = float(wall) - self._mono
        self._settle_timeout = settle_timeout
        self._waiters: dict[int, _Waiter] = {}

    def now(self) -> float:
        with self._lock:
            return self._mono + self._wall_offset

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def step(self, seconds: float) -> None:
        """Advance both clocks by ``seconds`` (>= 0) and let timer threads catch up."""
        if seconds < 0:
            raise ValueError(f"FakeClock.step: cannot go back in time (seconds={seconds})")
        with self._lock:
            target = self._mono + seconds
        self.set(target)

    def step_wall(self, seconds: float) -> None:
        """Move only the wall clock, by ``seconds`` (either sign): a clock step, not time."""
        with self._lock:
            self._wall_offset += seconds

    def set(self, monotonic: float) -> None:
        """Jump monotonic time to ``monotonic`` (>= now; the wall clock moves with it) and let
        timer threads catch up."""
        with self._lock:
            if monotonic < self._mono:
                raise ValueError(
                    f"FakeClock.set: {monotonic} is before the current time {self._mono}"
                )
            self._mono = float(monotonic)
            waiters = list(self._waiters.values())
        for w in waiters:
            # Holding the waiter's condition means its thread is inside cond.wait() (it holds
            # the condition at every other moment), so marking it unsettled here cannot race
            # with it reading the old time.
            with w.cond:
                with self._lock:
                    if self._waiters.get(id(w.cond)) is w:
                        w.settled = False
                w.cond.notify_all()
        deadline = time.monotonic() + self._settle_timeout
        with self._lock:
            while True:
                pending = [w for w in self._waiters.values() if not w.settled]
                if not pending:
                    return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(
                        f"FakeClock: {len(pending)} timer thread(s) did not settle within "
                        f"{self._settle_timeout}s after the clock moved to {self._mono}"
                    )
                self._settled_cv.wait(remaining)

    def has_waiters(self) -> bool:
        """True when some timer thread currently waits through this clock."""
        with self._lock:
            return bool(self._waiters)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        # The timeout is in fake seconds: it can only elapse through step()/set(), which
        # notifies every waiter, so waiting for a notification is exact.
        with self._lock:
            w = self._waiters.get(id(cond))
            if w is None:
                w = _Waiter(cond)
                self._waiters[id(cond)] = w
            w.settled = True
            self._settled_cv.notify_all()
        if timeout is not None and timeout <= 0:
            return
        cond.wait()

    def forget_waiter(self, cond: threading.Condition) -> None:
        with self._lock:
            self._waiters.pop(id(cond), None)
            self._settled_cv.notify_all()


if TYPE_CHECKING:
    _proof: Clock = FakeClock()
