"""Fallback: the replica count a scaler goes to once its signal has failed too often in a row.

The seed rule is that a signal which cannot be read holds the fleet where it is: a failing
query is never read as zero, so a broken metric source never scales a fleet down. That is
still what happens without ``spec.fallback``, and for the first ``failureThreshold`` failures
with it. After that the user's fallback count becomes the recommendation (KEDA's ``fallback``;
the count must pass the threshold, as KEDA's ``NumberOfFailures > failureThreshold`` does):

* ``Static`` goes to ``fallback.replicas`` whatever the fleet has now, so it may scale down.
  That is deliberate and the user's explicit choice: they wrote the count a blind fleet should
  run at, for example to stop paying for a peak-sized fleet through a long Prometheus outage.
  ``CurrentReplicasIfHigher`` is the choice that keeps the seed rule: the higher of the
  fallback count and the current ``spec.replicas`` wins, so it only ever adds capacity.
* The fallback count is a recommendation like any other, clamped to the bounds in force (a
  schedule's too) and paced by the same rules: a scale-down waits out the stabilization window
  (the failed syncs before it count as holds at the current size) and moves in steps.
* The first evaluation that measures anything ends it; scaling follows the signal again.

"Failed" means the fetch ran and nothing was measurable (every metric skipped, no usable
decision). A sync that stopped before measuring (target missing, refused address, unreadable
Secret) or was deferred by the rollout guard neither counts as a failure nor ends a run.

The count of consecutive failures lives in the reconciler's memory (:class:`FailureCounter`),
not in the status, so counting costs no API write. A manager restart or a new leader starts
it from zero: a source that is still down needs ``failureThreshold`` more failed syncs before
the fallback applies again, and until then the fleet is held where the fallback left it, which
is the safe side of the rule above.
"""

from __future__ import annotations

import threading

from llmscaler_runtime.api.v1alpha1 import Fallback, FallbackBehavior, LLMScalerSpec
from llmscaler_runtime.scaling.recommend import clamp
from llmscaler_runtime.scaling.types import Recommendation, TargetView

__all__ = ["FailureCounter", "fallback_applies", "fallback_recommendation"]


def fallback_applies(fallback: Fallback | None, failures: int) -> bool:
    """Whether ``failures`` consecutive failed evaluations put a scaler into its fallback."""
    return fallback is not None and failures > fallback.failure_threshold


def fallback_recommendation(
    spec: LLMScalerSpec, target: TargetView, baseline: int, failures: int
) -> Recommendation | None:
    """The fallback count as this sync's recommendation, or None while it does not apply.

    ``spec`` carries the bounds in force (a schedule may have replaced the spec's), so the
    count is clamped to them; ``baseline`` is only reported, as for any recommendation.
    """
    fallback = spec.fallback
    if fallback is None or not fallback_applies(fallback, failures):
        return None
    wanted = fallback.replicas
    how = f"fallback after {failures} failed evaluations in a row: {fallback.replicas} replicas"
    if (
        fallback.behavior == FallbackBehavior.CURRENT_REPLICAS_IF_HIGHER
        and target.spec_replicas > wanted
    ):
        wanted = target.spec_replicas
        how += f", or the current {wanted} (CurrentReplicasIfHigher)"
    replicas, limited = clamp(wanted, spec)
    return Recommendation(replicas, wanted, baseline, limited, reason=how)


class FailureCounter:
    """Consecutive failed evaluations per scaler uid (see the module docstring); thread-safe,
    since workers reconcile different scalers at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_uid: dict[str, int] = {}

    def failed(self, uid: str) -> int:
        """Count one more failure in a row; returns the new count."""
        with self._lock:
            count = self._by_uid.get(uid, 0) + 1
            self._by_uid[uid] = count
            return count

    def succeeded(self, uid: str) -> int:
        """End the run of failures; returns how long it was."""
        with self._lock:
            return self._by_uid.pop(uid, 0)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._by_uid.pop(uid, None)
