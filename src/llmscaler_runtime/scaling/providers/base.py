"""The metric-fetch step: protocols and the dispatcher between the two providers.

The provider is chosen by ``spec.metricProvider``; Prometheus and Custom are alternatives, never
a fallback chain (falling back would let a broken decision server silently hand control to a
different signal). A provider never raises for a bad source: failures come back inside the
:class:`~llmscaler_runtime.scaling.types.Measurement` so the reconciler can hold the fleet and
report them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler, LLMScalerSpec, MetricProvider
from llmscaler_runtime.scaling.schedule import phase_of, sync_tick
from llmscaler_runtime.scaling.types import Measurement

__all__ = ["CostSource", "MetricError", "MetricFetcher", "ProviderFetcher", "coalesce_token"]


def coalesce_token(spec: LLMScalerSpec, now: float) -> tuple[int, float, int]:
    """The sharing token for a scaler's fetch: its period, phase and the tick ``now`` is in.

    Scalers asking the same questions share a phase (``scaling.schedule``) and are evaluated
    in the same tick, so they share one fetch; the next tick, or a scaler on another grid,
    never sees that answer.
    """
    period, phase = spec.sync_period_seconds, phase_of(spec)
    return period, phase, sync_tick(now, float(period), phase)


class MetricError(Exception):
    """A metric source answered nothing usable; the message says what and where."""


class MetricFetcher(Protocol):
    """Fetches the scaling signal for one scaler within ``budget`` seconds."""

    def fetch(self, scaler: LLMScaler, budget: float) -> Measurement: ...


class CostSource(Protocol):
    """Per-pod deletion costs for cache-aware victim selection; raises MetricError."""

    def pod_costs(self, scaler: LLMScaler, budget: float) -> Mapping[str, int]: ...


@attrs.frozen
class ProviderFetcher:
    """Routes each scaler to the provider its spec names."""

    prometheus: MetricFetcher
    custom: MetricFetcher

    def fetch(self, scaler: LLMScaler, budget: float) -> Measurement:
        if scaler.spec.metric_provider == MetricProvider.CUSTOM:
            return self.custom.fetch(scaler, budget)
        return self.prometheus.fetch(scaler, budget)
