"""When a scaler is evaluated next: on a wall-clock grid of its sync period.

The HPA controller evaluates every HPA on one shared resync tick; we do the same by rounding
each successful sync's requeue up to the next multiple of ``syncPeriodSeconds`` (counted from
the Unix epoch). Two things follow. Every scaler that shares a query asks for it in the same
tick, so the transport's coalescing turns N identical queries into one and Prometheus load
grows with unique queries, not with scalers. And because a tick is the same instant in every
process, a manager restart or a leader hand-over does not shift a scaler's phase.

A sync that lands just before a tick boundary (the timer fired a hair early, or the scaler was
just created) is not re-run a moment later: a gap shorter than ``min_fraction`` of the period
is pushed to the following tick.
"""

from __future__ import annotations

import math

__all__ = ["next_sync_delay", "sync_tick"]


def sync_tick(now: float, period: float) -> int:
    """Index of the grid tick that ``now`` (epoch seconds) falls in."""
    return math.floor(now / period)


def next_sync_delay(now: float, period: float, *, min_fraction: float = 0.2) -> float:
    """Seconds from ``now`` to the next tick of a ``period``-second grid (never less than
    ``min_fraction * period``)."""
    if period <= 0:
        raise ValueError(f"period must be positive, got {period}")
    delay = (sync_tick(now, period) + 1) * period - now
    if delay < min_fraction * period:
        delay += period
    return delay
