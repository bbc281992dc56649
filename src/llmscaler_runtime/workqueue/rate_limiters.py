"""Rate limiters deciding how long a failed item waits before its retry (client-go semantics).

A limiter answers :meth:`RateLimiter.when` ("how long should this item wait now?"), counting
the call as one more failure; :meth:`RateLimiter.forget` resets an item after a success so the
next failure starts from the shortest delay again.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]


@runtime_checkable
class RateLimiter(Protocol):
    """Per-item retry delays."""

    def when(self, item: Hashable) -> float:
        """Seconds ``item`` should wait before being added again; records one more failure."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded); its next delay starts over."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are currently counted."""
        ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures`` seconds per item, capped at ``cap``.

    With the defaults the delays run 5 ms, 10 ms, 20 ms, ... and reach the 1000 s cap after
    about 18 consecutive failures; a huge failure count can never overflow into a short delay.
    """

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        if not base > 0:
            raise ValueError(f"base delay must be > 0, got {base}")
        if not cap >= base:
            raise ValueError(f"cap ({cap}) must be >= base delay ({base})")
        self.base = base
        self.cap = cap
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        try:
            backoff = math.ldexp(self.base, exp)
        except OverflowError:
            return self.cap
        return min(backoff, self.cap)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """``fast_delay`` for an item's first ``max_fast_attempts`` failures, then ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        if fast_delay < 0 or slow_delay < 0:
            raise ValueError("delays must be >= 0")
        if max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts must be >= 0, got {max_fast_attempts}")
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._failures.get(item, 0) + 1
            self._failures[item] = n
        return self.fast_delay if n <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket shared by all items: ``burst`` immediate retries, then ``qps`` per second.

    Like ``golang.org/x/time/rate``'s ``Reserve().Delay()``: every call takes a token, the
    bucket may go into debt, and the returned delay is the time until that debt is repaid. It
    bounds the *overall* retry rate of a controller, whatever the per-item backoff says. It does
    not track items, so ``forget`` is a no-op and ``num_requeues`` is always 0.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be > 0, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.qps = float(qps)
        self.burst = burst
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self._clock.monotonic()
            elapsed = max(0.0, now - self._last)
            self._last = max(self._last, now)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        """The bucket is global: one item's success does not refund tokens."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of its limiters asks for (every limiter sees every failure)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters: tuple[RateLimiter, ...] = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter:
    """controller-runtime's default: per-item 5 ms..1000 s exponential, overall 10 qps burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter:
    """client-go's ``DefaultItemBasedRateLimiter``: 1 ms..1000 s exponential per item."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
