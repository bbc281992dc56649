"""What the scaling pipeline reports to Prometheus about its syncs.

Every failure of a scaler is caught inside ``reconcile`` on purpose (handed to the controller
it would land in exponential backoff), so the controller's ``controller_runtime_reconcile_errors
_total`` never sees a failing scaler. ``llmscaler_scaler_syncs_total`` does: one increment per
sync, labelled with its result and the reason the status gives for it.

Cardinality is bounded by the code, not by the fleet: ``result`` has two values and ``reason``
is a member of :class:`~.reasons.ConditionReason` or ``FailedUpdateStatus``; there is no
per-scaler label (count syncs per reason across the fleet; find the scaler with
``kubectl get llmscaler`` and its conditions).
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

from prometheus_client import CollectorRegistry, Counter

from llmscaler_runtime.scaling.reasons import ConditionReason

__all__ = [
    "FAILED_UPDATE_STATUS",
    "SYNC_RESULTS",
    "NoopSyncMetrics",
    "PrometheusSyncMetrics",
    "SyncMetrics",
    "SyncReason",
    "SyncResult",
]

#: ``success``: the next sync is on the period grid; ``retry``: at the retry period.
SyncResult = Literal["success", "retry"]
SYNC_RESULTS: tuple[SyncResult, ...] = ("success", "retry")
#: The reason of a sync whose own status write failed (no condition can carry it).
FAILED_UPDATE_STATUS: Final = "FailedUpdateStatus"
#: What a sync's outcome is counted under: the reason its status gives, or the failed write.
SyncReason = ConditionReason | Literal["FailedUpdateStatus"]


class SyncMetrics(Protocol):
    """Receives one observation per evaluated sync."""

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None: ...


class NoopSyncMetrics:
    """Reports nothing: the default, so the reconciler never checks for a missing sink."""

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None:
        """Nothing to record."""


class PrometheusSyncMetrics:
    """``llmscaler_scaler_syncs_total{result, reason}`` in ``registry``.

    Every (result, reason) pair the code can produce starts at 0, so a rate() over a reason
    that has never happened is 0 rather than absent, and alerts need no ``or vector(0)``.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.syncs = Counter(
            "llmscaler_scaler_syncs",
            "LLMScaler syncs by result and by the reason their status gives.",
            ["result", "reason"],
            registry=registry,
        )
        for reason in (*ConditionReason, FAILED_UPDATE_STATUS):
            for result in SYNC_RESULTS:
                self.syncs.labels(result=result, reason=str(reason))

    def observe_sync(self, result: SyncResult, reason: SyncReason) -> None:
        self.syncs.labels(result=result, reason=str(reason)).inc()
