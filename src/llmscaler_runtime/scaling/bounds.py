"""Scheduled bounds: the replica bounds in force at a moment, from ``spec.schedules``.

A schedule is a weekly window in its own IANA time zone (days, ``start`` inclusive, ``end``
exclusive, no window across midnight) whose ``minReplicas``/``maxReplicas`` replace the
spec's while it is open. The rules, all pure functions of the spec and one wall-clock instant:

* each bound a window sets replaces the spec's; a bound no open window sets stays the spec's;
* overlapping windows: the highest minimum wins, and so does the highest maximum (windows
  overlap to add capacity, a special event on top of a working day, rarely to cut it); if the
  winning minimum is above the winning maximum (one window raises the floor, another caps the
  ceiling) the maximum is raised to it, so the floor wins: the user asked for that capacity;
* local time comes from the instant through ``zoneinfo``, so daylight saving time is followed:
  08:00 stays 08:00 on the wall clock, a window inside the skipped spring hour never opens
  that day, and one inside the repeated autumn hour is open through both of them.

The reconciler evaluates the bounds at every sync on the one clock's wall time (``Clock.now``)
and hands recommendation and pacing a spec carrying them (:func:`with_bounds`), so nothing
downstream knows schedules exist and the bounds are enforced as the spec's are: a fleet
outside them is brought to the violated bound in one write, even when nothing could be
measured. No timer is needed for a window's edges: the sync period is, so an edge takes effect
at the first sync at or after it, within ``syncPeriodSeconds``.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Sequence

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, Schedule, Weekday

__all__ = ["Bounds", "effective_bounds", "is_open", "with_bounds"]

_WEEK = tuple(Weekday)  # datetime.weekday(): Monday is 0


@attrs.frozen
class Bounds:
    """The replica bounds in force, and the open windows that set them (in spec order)."""

    min_replicas: int
    max_replicas: int
    schedules: tuple[str, ...] = ()


def _minutes(hh_mm: str) -> int:
    hours, _, minutes = hh_mm.partition(":")
    return int(hours) * 60 + int(minutes)


def is_open(schedule: Schedule, wall: float) -> bool:
    """Whether ``schedule`` is open at the epoch instant ``wall`` (see the module docstring)."""
    local = dt.datetime.fromtimestamp(wall, zoneinfo.ZoneInfo(schedule.time_zone))
    if schedule.days and _WEEK[local.weekday()] not in schedule.days:
        return False
    now = local.hour * 60 + local.minute
    return _minutes(schedule.start) <= now < _minutes(schedule.end)


def effective_bounds(spec: LLMScalerSpec, wall: float) -> Bounds:
    """The bounds in force at ``wall``: the spec's, or those of the windows open then."""
    opened: Sequence[Schedule] = [s for s in spec.schedules if is_open(s, wall)]
    if not opened:
        return Bounds(spec.min_replicas, spec.max_replicas)
    lows = [s.min_replicas for s in opened if s.min_replicas is not None]
    highs = [s.max_replicas for s in opened if s.max_replicas is not None]
    low = max(lows) if lows else spec.min_replicas
    high = max(highs) if highs else spec.max_replicas
    return Bounds(low, max(low, high), tuple(s.name for s in opened))


def with_bounds(spec: LLMScalerSpec, bounds: Bounds) -> LLMScalerSpec:
    """``spec`` with ``bounds`` as its minReplicas/maxReplicas; ``spec`` itself when they are
    its own, so a scaler without an open window costs no copy."""
    if (bounds.min_replicas, bounds.max_replicas) == (spec.min_replicas, spec.max_replicas):
        return spec
    return attrs.evolve(spec, min_replicas=bounds.min_replicas, max_replicas=bounds.max_replicas)
