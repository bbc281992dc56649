"""The one clock of the runtime: wall time and monotonic time, injected once and shared.

Every timing rule in the runtime reads time through a :class:`Clock`: the workqueue's delays
and token buckets, the reflector's backoff, leader election's lease timing, Event aggregation,
the metric client's budgets, and the scaling pipeline (its sync grid, stabilization window and
coalescing tick). One object serves all of them, so a test that injects a fake clock moves
every rule at once; with separate clocks, a test that faked one and not the other (say, the
reconciler's grid but not the providers' coalescing tick) silently broke the rule between
them.

The two readings have different jobs:

- :meth:`Clock.now` is wall time, seconds since the epoch: timestamps, and the sync grid every
  scaler and every manager must agree on. It may step (NTP, a resumed VM).
- :meth:`Clock.monotonic` is for every interval: windows, budgets, backoff, lease deadlines.
  A stepping wall clock must neither expire a window early nor freeze it.

Timer threads also *wait* through the clock (:meth:`Clock.wait`): a real clock waits on its
condition with a timeout; the test kit's ``FakeClock`` waits until a test moves time, and its
``step`` returns only once every waiting timer thread has seen the new time.

The fake lives in :mod:`llmscaler_runtime.testkit.clock`, outside the runtime's import graph.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Wall and monotonic time, plus a way for timer threads to wait on monotonic time."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch (may step)."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds; only differences are meaningful."""
        ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on ``cond`` (held by the caller) for at most ``timeout`` monotonic seconds.

        May return early (a notify on ``cond`` or a spurious wake-up); callers loop and re-read
        :meth:`monotonic`. The caller must hold ``cond`` for the whole time it is not inside
        ``wait``.
        """
        ...

    def forget_waiter(self, cond: threading.Condition) -> None:
        """Called (with ``cond`` held) when a timer thread using ``cond`` stops for good."""
        ...


class SystemClock:
    """The real clocks: ``time.time`` and ``time.monotonic``."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(timeout)

    def forget_waiter(self, cond: threading.Condition) -> None:
        """Nothing to forget: a real clock keeps no record of its waiters."""


#: The process's real clock; the default wherever no clock is injected.
SYSTEM_CLOCK: Clock = SystemClock()
