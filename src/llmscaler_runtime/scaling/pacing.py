"""Pacing: stabilization windows, step caps and the settle guard.

Scale-up is applied at once unless ``spec.scaleUp`` says otherwise; scale-down is damped three
ways:

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

Scale-up pacing (both off by default) mirrors the HPA's scale-up behavior:

* stabilization (scaleUp.stabilizationWindowSeconds): grow only to the *lowest* recommendation
  within the window, so a burst must last the whole window before it adds replicas. It is kept
  apart from the scale-down window (its own samples, the ones that can still be the minimum)
  and never reset by a write, as the HPA records every raw recommendation. The restart seed
  and the hold of a sync that measured nothing count here too: after a restart, or a failed
  measurement, a scale-up needs a full window of good measurements, for the same reason a
  flapping source must not shrink the fleet on its first good answer. A failed write stores
  the same samples (``history_if_failed``), so the window keeps holding across failed syncs.
* step cap (scaleUp.maxStepReplicas) bounds how many replicas one write adds; the next step
  comes at the next sync. There is no settle guard on the way up: pods that fail readiness
  under overload must not stop the fleet from growing.

The bound is not damped here either: a fleet below minReplicas is raised to it in one write.

The pacer itself is pure; per-scaler history lives in :class:`HistoryStore`. Times are the
monotonic clock's (the reconciler passes ``Clock.monotonic()``), so a stepping wall clock
neither ends a window early nor stretches it, and nothing of this is written to the API.
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
        up_window = float(spec.scale_up.stabilization_window_seconds)
        if history is None:
            # Seed as if the current count had just been decided. Pods still terminating mean a
            # scale-down (perhaps by the previous leader) is in flight, so the settle guard
            # applies to the next step too; an unready pod alone does not block the first one.
            seed = ((now, current),)
            history = History(
                seed,
                stepping_down=bool(target.terminating_replicas),
                up_samples=seed if up_window > 0 else (),
            )
        kept = tuple((t, r) for (t, r) in history.samples if now - t < window)
        kept_up = tuple((t, r) for (t, r) in history.up_samples if now - t < up_window)
        stepping = history.stepping_down and not is_settled(target)

        if recommendation.replicas is None:
            # Nothing measurable: hold (within the bounds). The hold counts as a recommendation
            # of the current count, so no scale-down follows within a window of a sync that
            # failed: a flapping source cannot shrink the fleet on its first good answer (nor,
            # with a scale-up window, grow it).
            up = _lowest(kept_up, now, current, up_window)
            held = History(
                (*((t, r) for (t, r) in kept if r > current), (now, current)), stepping, up
            )
            bounded, _ = clamp(current, spec)
            if bounded == current:
                return Plan(current, current, current, "no-measurement", held, held)
            if bounded < current:
                written = History(((now, bounded),), True, up)
            else:
                written = History(
                    (*((t, r) for (t, r) in kept if r > bounded), (now, bounded)), up_samples=up
                )
            return Plan(current, bounded, bounded, "no-measurement", written, held)

        rec = recommendation.replicas
        # An older sample no larger than the new one can never be the window's maximum again
        # (it leaves the window first), so dropping it keeps the history short without
        # changing any stabilized value.
        samples = (*((t, r) for (t, r) in kept if r > rec), (now, rec))
        up_samples = _lowest(kept_up, now, rec, up_window)
        if rec > current and up_samples:
            # scale-up stabilization: no higher than the lowest recommendation in the window
            desired = max(current, min(r for (_, r) in up_samples))
        elif rec >= current:
            desired = rec
        else:
            window_max = max(r for (_, r) in samples)
            desired = min(current, window_max)
        desired, _ = clamp(desired, spec)

        held_by: HeldBy | None = None
        if rec < desired:
            held_by = "stabilization"
        elif rec > desired:
            held_by = "scale-up-stabilization"
        replicas = desired
        if desired < current:
            if stepping:
                replicas, held_by = current, "settle"
            else:
                cap = spec.scale_down.max_step_replicas
                if cap > 0 and current - desired > cap:
                    replicas, held_by = current - cap, "step-cap"
        elif desired > current:
            up_cap = spec.scale_up.max_step_replicas
            # the step cap paces only what lies above minReplicas (the bound is not damped)
            stepped = max(current + up_cap, spec.min_replicas)
            if up_cap > 0 and stepped < desired:
                replicas, held_by = stepped, "scale-up-step-cap"

        if replicas > spec.max_replicas:
            # Above maxReplicas (the user just lowered it): go to the bound at once, as the HPA
            # does; the step cap and settle guard only pace what lies below the bound.
            replicas = spec.max_replicas
            if desired == replicas:  # neither the cap nor the guard holds anything back now
                held_by = "stabilization" if rec < desired else None

        unwritten = History(samples, stepping, up_samples)
        if replicas < current:
            written = History(((now, replicas),), True, up_samples)
        elif replicas > current:
            written = History(samples, False, up_samples)
        else:
            written = unwritten
        return Plan(current, desired, replicas, held_by, written, unwritten)


def _lowest(
    kept: tuple[tuple[float, int], ...], now: float, replicas: int, window: float
) -> tuple[tuple[float, int], ...]:
    """The scale-up window's samples after recording ``replicas`` now (empty while it is off).

    An older sample no smaller than the new one can never be the window's minimum again (it
    leaves the window first), so it is dropped: the history stays short (at most one sample
    per distinct lower count) without changing any stabilized value."""
    if window <= 0:
        return ()
    return (*((t, r) for (t, r) in kept if r < replicas), (now, replicas))


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
