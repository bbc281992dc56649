"""Exponential backoff with jitter, client-go's reflector defaults, driven by injected time.

Defaults: 0.8 s initial, doubling, capped at 30 s, jitter factor 1.0 (each delay is stretched
by up to 100 %), and reset to the initial delay once no failure happened for 2 minutes.
The clock (its monotonic reading) and random source are parameters so tests get exact
sequences without sleeping.
"""

from __future__ import annotations

import random
import threading

from ..clock import SYSTEM_CLOCK, Clock

__all__ = ["Backoff"]


class Backoff:
    """Stateful delay generator; call :meth:`next_delay` after every failure."""

    def __init__(
        self,
        initial: float = 0.8,
        factor: float = 2.0,
        cap: float = 30.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or factor < 1 or cap < initial or jitter < 0 or reset_after <= 0:
            raise ValueError("backoff needs 0 < initial <= cap, factor >= 1, jitter >= 0")
        self.initial = initial
        self.factor = factor
        self.cap = cap
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._next = initial
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        """The delay before the next attempt; grows the base for the following failure."""
        with self._lock:
            now = self._clock.monotonic()
            if self._last_failure is not None and now - self._last_failure > self.reset_after:
                self._next = self.initial  # healthy long enough: start over
            self._last_failure = now
            base = self._next
            self._next = min(self._next * self.factor, self.cap)
            return base + self._rng.random() * self.jitter * base

    def reset(self) -> None:
        """Forget past failures."""
        with self._lock:
            self._next = self.initial
            self._last_failure = None
