"""When a scaler is evaluated next: on a wall-clock grid of its sync period, at its group's phase.

The HPA controller evaluates every HPA on one shared resync tick. We keep the useful half of
that and drop the harmful half. Useful: scalers that ask the same questions (same provider,
server and queries) are evaluated in the same instant, so the transport coalesces their
identical requests into one and Prometheus load grows with unique queries, not with scalers.
Harmful: thousands of unrelated scalers firing in one instant make a burst that delays the
last of them by the whole burst. So each *group* of identical scalers gets its own phase, a
stable hash of what it asks, spreading unrelated groups evenly over the period.

Ticks are counted from the Unix epoch, so a manager restart or a leader hand-over keeps every
scaler's phase. A sync that lands just before its tick (a timer firing a hair early, or a new
scaler) is not re-run a moment later: a gap shorter than ``min_fraction`` of the period is
pushed to the following tick.
"""

from __future__ import annotations

import hashlib
import math

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, MetricProvider

__all__ = ["TICK_EPSILON", "next_sync_delay", "phase_of", "sync_tick"]


def phase_of(spec: LLMScalerSpec) -> float:
    """The scaler's offset into its period: equal for scalers asking the same questions."""
    if spec.metric_provider == MetricProvider.CUSTOM and spec.custom_provider is not None:
        asks = [spec.custom_provider.path, spec.custom_provider.service_id]
    else:
        asks = sorted(m.query for m in spec.metrics)
    key = "\n".join([spec.metric_provider.value, spec.server_address, *asks])
    digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
    return (digest % 1_000_000) / 1_000_000 * spec.sync_period_seconds


#: How close (in seconds) to a tick's start counts as the tick itself. Epoch seconds near
#: 1.8e9 carry about 2e-7 s of float precision, so a sync woken exactly at a tick's start (a
#: virtual clock does that, and ``next_sync_delay`` aims there) can compute a time a hair
#: before it and be counted in the old tick, where it would reuse the old tick's answer.
TICK_EPSILON = 1e-6


def sync_tick(now: float, period: float, phase: float = 0.0) -> int:
    """Index of the grid tick that ``now`` (epoch seconds) falls in; a time within
    ``TICK_EPSILON`` before a tick's start belongs to that tick."""
    return math.floor((now - phase + TICK_EPSILON) / period)


def next_sync_delay(
    now: float, period: float, phase: float = 0.0, *, min_fraction: float = 0.05
) -> float:
    """Seconds from ``now`` to the next tick of the ``period`` grid shifted by ``phase``
    (never less than ``min_fraction * period``)."""
    if period <= 0:
        raise ValueError(f"period must be positive, got {period}")
    delay = phase + (sync_tick(now, period, phase) + 1) * period - now
    if delay < min_fraction * period:
        delay += period
    return delay
