"""The demo's traffic and vLLM behaviour model.

Pure functions of time and fleet shape, so the story is reproducible and unit-testable. Load is
measured in concurrent requests; each pod can run ``capacity`` of them, the rest wait. A pod's
KV-cache fills with the requests it runs and stays warm for a while after, so the oldest pods
that took the most traffic are the hottest and a freshly started pod is cold: exactly the
situation cache-aware scale-down exists for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs


@attrs.frozen
class LoadCurve:
    """Concurrent requests over time: a quiet base, a burst, then the traffic falls away."""

    duration: float = 60.0
    base: float = 4.0
    peak: float = 40.0

    def at(self, t: float) -> float:
        """Load at ``t`` seconds into the story (phases scale with ``duration``)."""
        d = self.duration
        rise_start, rise_end = 0.10 * d, 0.25 * d
        fall_start, fall_end = 0.50 * d, 0.65 * d
        if t < rise_start:
            return self.base
        if t < rise_end:
            return self.base + (self.peak - self.base) * (t - rise_start) / (rise_end - rise_start)
        if t < fall_start:
            # A small ripple keeps the plot honest-looking without changing the decisions.
            return self.peak + 0.05 * self.peak * math.sin(t)
        if t < fall_end:
            frac = (t - fall_start) / (fall_end - fall_start)
            return self.peak + (self.base - self.peak) * frac
        return self.base


@attrs.frozen
class PodMetrics:
    kv_cache_usage: float
    running: int
    waiting: int


def pod_metrics(
    load: float,
    ready_pods: Sequence[str],
    warmth: Mapping[str, float],
    *,
    capacity: int = 8,
) -> dict[str, PodMetrics]:
    """Spread ``load`` over the ready pods, weighted by cache warmth (routers favour warm caches).

    ``warmth`` is in [0, 1] per pod; a cold pod still takes a share (weight floor 0.3) so new
    capacity relieves the fleet as soon as it is ready.
    """
    if not ready_pods:
        return {}
    weights = {p: 0.3 + warmth.get(p, 0.0) for p in ready_pods}
    total = sum(weights.values())
    out: dict[str, PodMetrics] = {}
    for pod in ready_pods:
        share = load * weights[pod] / total
        running = min(capacity, math.floor(share))
        waiting = max(0, math.ceil(share - capacity))
        kv = min(0.99, 0.1 * warmth.get(pod, 0.0) + 0.9 * running / capacity)
        out[pod] = PodMetrics(kv_cache_usage=round(kv, 4), running=running, waiting=waiting)
    return out


def next_warmth(previous: float, kv_cache_usage: float, dt: float, *, tau: float = 10.0) -> float:
    """Warmth follows KV usage with time constant ``tau`` (caches fill fast, cool slowly)."""
    alpha = 1.0 - math.exp(-dt / tau)
    return previous + (kv_cache_usage - previous) * alpha
