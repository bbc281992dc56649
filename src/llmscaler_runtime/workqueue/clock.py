"""Injectable clocks for the workqueue and rate limiters.

Every timing rule of the queue (delays, token buckets, latency metrics) reads time through a
``Clock`` so unit tests can drive time by hand with :class:`FakeClock` instead of sleeping.
The delaying queue's timer thread also *waits* through the clock: a real clock waits on its
condition with a timeout, a fake clock waits until a test steps time, and ``step`` returns only
once every waiting timer thread has looked at the new time — so a test can assert the queue's
state right after ``step`` without polling or races.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "RealClock"]


@runtime_checkable
class Clock(Protocol):
    """Monotonic time source plus a way for timer threads to wait on it."""

    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful."""
        ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on ``cond`` (held by the caller) for at most ``timeout`` clock seconds.

        May return early (a notify on ``cond`` or a spurious wake-up); callers loop and re-read
        :meth:`now`. The caller must hold ``cond`` for the whole time it is not inside ``wait``.
        """
        ...

    def forget_waiter(self, cond: threading.Condition) -> None:
        """Called (with ``cond`` held) when a timer thread using ``cond`` stops for good."""
        ...


class RealClock:
    """Wall-independent real time (``time.monotonic``)."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(timeout)

    def forget_waiter(self, cond: threading.Condition) -> None:
        """Nothing to forget: a real clock keeps no record of its waiters."""


class _Waiter:
    __slots__ = ("cond", "settled")

    def __init__(self, cond: threading.Condition) -> None:
        self.cond = cond
        # True while the waiter sits in wait() having seen the latest time.
        self.settled = True


class FakeClock:
    """A clock that moves only when told to.

    ``step``/``set`` wake every timer thread waiting through this clock and block until each
    has processed the new time and gone back to waiting (bounded by ``settle_timeout`` real
    seconds, after which a ``RuntimeError`` says which waiter hung). Time never goes backwards.
    """

    def __init__(self, now: float = 0.0, *, settle_timeout: float = 10.0) -> None:
        self._lock = threading.Lock()
        self._settled_cv = threading.Condition(self._lock)
        self._now = float(now)
        self._settle_timeout = settle_timeout
        self._waiters: dict[int, _Waiter] = {}

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` (>= 0) and let timer threads catch up."""
        if seconds < 0:
            raise ValueError(f"FakeClock.step: cannot go back in time (seconds={seconds})")
        with self._lock:
            target = self._now + seconds
        self.set(target)

    def set(self, t: float) -> None:
        """Jump to absolute time ``t`` (>= now) and let timer threads catch up."""
        with self._lock:
            if t < self._now:
                raise ValueError(f"FakeClock.set: {t} is before the current time {self._now}")
            self._now = float(t)
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
                        f"{self._settle_timeout}s after the clock moved to {self._now}"
                    )
                self._settled_cv.wait(remaining)

    def has_waiters(self) -> bool:
        """True when some timer thread currently waits through this clock."""
        with self._lock:
            return bool(self._waiters)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        # The timeout is expressed in fake seconds: it can only elapse through step()/set(),
        # which notifies every waiter, so waiting for a notification is exact.
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
