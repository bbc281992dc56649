"""Scale-down pacing: stabilization window, step cap and settle guard.

Scale-up is applied at once; scale-down is damped three ways:

* stabilization: hold at the largest recommendation seen within the window, so a brief dip
  does not throw away warm caches. After a scale-down write the history is replaced by the
  count written, so the next step waits a full window too. The stabilized value is clamped
  again, so lowering maxReplicas takes effect at once even if older, higher samples remain.
* seeding: a scaler's first sync (after a restart or leader hand-over) seeds the history with
  the target's current spec.replicas, so a restart never skips the window (the HPA does the
  same), and with the settle guard armed when pods are still terminating from a step taken
  before the restart.
* step cap (maxStepReplicas) bounds how many replicas one write removes, and the settle guard
  waits, between the steps of a walk-down, for the fleet to reach its size (ready ==
  spec.replicas, nothing terminating) before the next step.

The bounds are the user's explicit instruction, not a measurement, so they are never damped:
like the HPA controller (which sets a workload above maxReplicas straight to maxReplicas and
one below minReplicas straight to minReplicas, before looking at metrics), a fleet outside
[minReplicas, maxReplicas] is brought to the violated bound in one write, whatever the window,
the step cap or the settle guard say, and even in a sync where nothing could be measured.
Only the part of a scale-down below maxReplicas is paced.

The pacer itself is pure; per-scaler history lives in :class:`HistoryStore`.
"""

from __future__ import annotations

import threading
from typing import Protocol

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec
from llmscaler_runtime.scaling.recommend import clamp
from llmscaler_runtime.scaling.types import HeldBy, History, Plan, Recommendation, TargetView

__all__ = ["HistoryStore", "Pacer", "ScaleDownPacer", "is_settled"]


class Pacer(Protocol):
    """Turns a recommendation into this sync's write, given the scaler's history."""

    def pace(
        self,
        history: History | None,
        spec: LLMScalerSpec,
        target: TargetView,
        recommendation: Recommendation,
        now: float,
    ) -> Plan: ...


def is_settled(target: TargetView) -> bool:
    """The fleet has reached its size: every requested replica ready, none terminating."""
    return target.ready_replicas == target.spec_replicas and not target.terminating_replicas


@attrs.frozen
class ScaleDownPacer:
    """The default pacer (see module docstring)."""

    def pace(
        self,
        history: History | None,
        spec: LLMScalerSpec,
        target: TargetView,
        recommendation: Recommendation,
        now: float,
    ) -> Plan:
        current = target.spec_replicas
        window = float(spec.scale_down.stabilization_window_seconds)
        if history is None:
            # Seed as if the current count had just been decided. Pods still terminating mean a
            # scale-down (perhaps by the previous leader) is in flight, so the settle guard
            # applies to the next step too; an unready pod alone does not block the first one.
            history = History(((now, current),), stepping_down=bool(target.terminating_replicas))
        kept = tuple((t, r) for (t, r) in history.samples if now - t < window)
        stepping = history.stepping_down and not is_settled(target)

        if recommendation.replicas is None:
            # Nothing measurable: hold (within the bounds). The hold counts as a recommendation
            # of the current count, so no scale-down follows within a window of a sync that
            # failed: a flapping source cannot shrink the fleet on its first good answer.
            held = History((*((t, r) for (t, r) in kept if r > current), (now, current)), stepping)
            bounded, _ = clamp(current, spec)
            if bounded == current:
                return Plan(current, current, current, "no-measurement", held, held)
            if bounded < current:
                written = History(((now, bounded),), True)
            else:
                written = History((*((t, r) for (t, r) in kept if r > bounded), (now, bounded)))
            return Plan(current, bounded, bounded, "no-measurement", written, held)

        rec = recommendation.replicas
        # An older sample no larger than the new one can never be the window's maximum again
        # (it leaves the window first), so dropping it keeps the history short without
        # changing any stabilized value.
        samples = (*((t, r) for (t, r) in kept if r > rec), (now, rec))
        if rec >= current:
            desired = rec
        else:
            window_max = max(r for (_, r) in samples)
            desired = min(current, window_max)
        desired, _ = clamp(desired, spec)

        held_by: HeldBy | None = "stabilization" if rec < desired else None
        replicas = desired
        if desired < current:
            if stepping:
                replicas, held_by = current, "settle"
            else:
                cap = spec.scale_down.max_step_replicas
                if cap > 0 and current - desired > cap:
                    replicas, held_by = current - cap, "step-cap"

        if replicas > spec.max_replicas:
            # Above maxReplicas (the user just lowered it): go to the bound at once, as the HPA
            # does; the step cap and settle guard only pace what lies below the bound.
            replicas = spec.max_replicas
            if desired == replicas:  # neither the cap nor the guard holds anything back now
                held_by = "stabilization" if rec < desired else None

        unwritten = History(samples, stepping)
        if replicas < current:
            written = History(((now, replicas),), True)
        elif replicas > current:
            written = History(samples, False)
        else:
            written = unwritten
        return Plan(current, desired, replicas, held_by, written, unwritten)


class HistoryStore:
    """Per-scaler pacing history keyed by the scaler's UID; dropped when the scaler goes away.

    Keyed by UID rather than name so a scaler deleted and re-created under the same name
    starts afresh. Thread-safe: reconciles of different scalers run concurrently.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_uid: dict[str, History] = {}

    def get(self, uid: str) -> History | None:
        with self._lock:
            return self._by_uid.get(uid)

    def put(self, uid: str, history: History) -> None:
        with self._lock:
            self._by_uid[uid] = history

    def forget(self, uid: str) -> None:
        with self._lock:
            self._by_uid.pop(uid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uid)
