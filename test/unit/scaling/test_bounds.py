"""spec.schedules: which bounds are in force at a wall-clock instant, across zones and DST."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec, Schedule
from llmscaler_runtime.scaling.bounds import Bounds, effective_bounds, is_open, with_bounds
from llmscaler_runtime.testkit import FakeClock

from .fakes import deployment, scaler_obj
from .test_reconciler import SYNC, World

PARIS = "Europe/Paris"


def at(zone: str, *when: int) -> float:
    """The epoch instant of a wall-clock time in ``zone`` (the first of a repeated hour)."""
    return dt.datetime(*when, tzinfo=zoneinfo.ZoneInfo(zone)).timestamp()  # type: ignore[misc]


def utc(*when: int) -> float:
    return dt.datetime(*when, tzinfo=dt.UTC).timestamp()  # type: ignore[misc]


def window(start: str, end: str, zone: str = PARIS, days: tuple[str, ...] = (), **kw: Any) -> Any:
    raw = {"name": kw.pop("name", "w"), "timeZone": zone, "start": start, "end": end, **kw}
    if days:
        raw["days"] = list(days)
    if "minReplicas" not in raw and "maxReplicas" not in raw:
        raw["minReplicas"] = 3
    return raw


def spec(*schedules: dict[str, Any], lo: int = 1, hi: int = 10) -> LLMScalerSpec:
    raw = scaler_obj(min_replicas=lo, max_replicas=hi)["spec"]
    raw["schedules"] = list(schedules)
    return LLMScalerSpec.from_dict(raw)


def one(raw: dict[str, Any]) -> Schedule:
    (schedule,) = spec(raw).schedules
    return schedule


# --- a window at an instant --------------------------------------------------------------------


def test_a_weekday_window_opens_at_start_and_closes_at_end() -> None:
    office = one(window("08:00", "18:00", days=("Mon", "Tue", "Wed", "Thu", "Fri")))
    # Monday 2026-06-01
    assert not is_open(office, at(PARIS, 2026, 6, 1, 7, 59))
    assert is_open(office, at(PARIS, 2026, 6, 1, 8, 0))
    assert is_open(office, at(PARIS, 2026, 6, 1, 17, 59, 59))
    assert not is_open(office, at(PARIS, 2026, 6, 1, 18, 0))
    assert not is_open(office, at(PARIS, 2026, 6, 6, 10, 0))  # Saturday


def test_the_days_are_read_in_the_windows_own_time_zone() -> None:
    # Sunday 23:30 UTC is already Monday 08:30 in Tokyo, still Sunday 19:30 in New York
    instant = utc(2026, 5, 31, 23, 30)
    tokyo = one(window("08:00", "09:00", "Asia/Tokyo", days=("Mon",)))
    new_york = one(window("19:00", "20:00", "America/New_York", days=("Mon",)))
    assert is_open(tokyo, instant)
    assert not is_open(new_york, instant)
    assert is_open(one(window("19:00", "20:00", "America/New_York", days=("Sun",))), instant)


def test_a_window_ending_at_24_00_closes_at_midnight() -> None:
    late = one(window("22:00", "24:00"))
    assert is_open(late, at(PARIS, 2026, 6, 1, 23, 59, 59))
    assert not is_open(late, at(PARIS, 2026, 6, 2, 0, 0))


def test_08_00_stays_08_00_on_the_wall_clock_across_the_spring_change() -> None:
    morning = one(window("08:00", "09:00"))
    # Friday before the change (CET, UTC+1) and Monday after it (CEST, UTC+2)
    assert is_open(morning, utc(2026, 3, 27, 7, 0)) and not is_open(morning, utc(2026, 3, 27, 6, 0))
    assert is_open(morning, utc(2026, 3, 30, 6, 0)) and not is_open(morning, utc(2026, 3, 30, 7, 0))


def test_a_window_in_the_skipped_spring_hour_never_opens_that_day() -> None:
    # Europe/Paris jumps from 02:00 to 03:00 on 2026-03-29
    skipped = one(window("02:00", "03:00"))
    straddling = one(window("01:30", "02:30"))
    instants = [utc(2026, 3, 28, 22, 0) + minute * 60 for minute in range(6 * 60)]
    assert not any(is_open(skipped, t) for t in instants)
    opened = [t for t in instants if is_open(straddling, t)]
    assert (opened[0], opened[-1]) == (utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 0, 59))


def test_a_window_in_the_repeated_autumn_hour_is_open_through_both() -> None:
    # Europe/Paris goes back from 03:00 to 02:00 on 2026-10-25: 02:xx happens twice
    repeated = one(window("02:00", "03:00"))
    instants = [utc(2026, 10, 24, 22, 0) + minute * 60 for minute in range(6 * 60)]
    opened = [t for t in instants if is_open(repeated, t)]
    assert len(opened) == 120
    assert (opened[0], opened[-1]) == (utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 1, 59))


# --- the bounds in force -----------------------------------------------------------------------


NOON = at(PARIS, 2026, 6, 1, 12, 0)


def test_without_an_open_window_the_bounds_are_the_specs_own() -> None:
    assert effective_bounds(spec(lo=2, hi=7), NOON) == Bounds(2, 7)
    closed = spec(window("20:00", "21:00", minReplicas=5), lo=2, hi=7)
    assert effective_bounds(closed, NOON) == Bounds(2, 7)
    assert with_bounds(closed, Bounds(2, 7)) is closed


def test_an_open_window_replaces_the_bounds_it_sets_and_keeps_the_others() -> None:
    floor = spec(window("08:00", "18:00", name="peak", minReplicas=4), lo=1, hi=10)
    assert effective_bounds(floor, NOON) == Bounds(4, 10, ("peak",))
    cap = spec(window("08:00", "18:00", name="cap", maxReplicas=2), lo=1, hi=10)
    assert effective_bounds(cap, NOON) == Bounds(1, 2, ("cap",))


def test_overlapping_windows_the_highest_minimum_and_the_highest_maximum_win() -> None:
    both = spec(
        window("08:00", "18:00", name="day", minReplicas=2, maxReplicas=6),
        window("11:00", "14:00", name="lunch", minReplicas=5, maxReplicas=8),
        window("11:00", "14:00", name="audit", maxReplicas=7),
        window("20:00", "21:00", name="evening", minReplicas=9),
    )
    assert effective_bounds(both, NOON) == Bounds(5, 8, ("day", "lunch", "audit"))


def test_a_minimum_above_another_windows_maximum_raises_that_maximum() -> None:
    clash = spec(
        window("00:00", "24:00", name="cap", maxReplicas=3),
        window("11:00", "14:00", name="launch", minReplicas=6),
    )
    assert effective_bounds(clash, NOON) == Bounds(6, 6, ("cap", "launch"))


def test_with_bounds_copies_only_when_the_bounds_differ() -> None:
    s = spec(lo=1, hi=10)
    assert with_bounds(s, Bounds(1, 10)) is s
    moved = with_bounds(s, Bounds(4, 10, ("peak",)))
    assert (moved.min_replicas, moved.max_replicas) == (4, 10)
    assert moved.metrics == s.metrics and moved.schedules == s.schedules


# --- the validation rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (window("18:00", "08:00"), "end must be later than start"),
        (window("08:00", "08:00"), "end must be later than start"),
        (window("08:00", "09:00", zone="Mars/Olympus"), "unknown time zone 'Mars/Olympus'"),
        (window("08:00", "09:00", zone="Local"), "timeZone must be an IANA time zone name"),
        (window("08:00", "09:00", zone="Europe"), "unknown time zone 'Europe'"),
        (window("08:00", "09:00", zone="+05:00"), "does not match"),
        (window("8:00", "09:00"), "does not match"),
        (window("08:00", "24:01"), "does not match"),
        (window("08:00", "09:00", days=("Monday",)), "must be one of Mon, Tue"),
        (
            {"name": "n", "timeZone": PARIS, "start": "08:00", "end": "09:00"},
            "must set minReplicas",
        ),
        (window("08:00", "09:00", minReplicas=11), "each schedule must keep minReplicas <="),
        (window("08:00", "09:00", maxReplicas=0), "'w': [1, 0]"),
    ],
)
def test_bad_schedules_are_refused_by_the_parser(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(Exception, match=r"spec\.schedules") as info:
        spec(raw)
    assert problem in str(info.value)


# --- through the reconciler, on the fake clock's wall time -------------------------------------


MONDAY_0759 = at(PARIS, 2026, 6, 1, 7, 59)


def _scheduled_world(**schedule: Any) -> World:
    w = World()
    w.clock = FakeClock(wall=MONDAY_0759)
    w.reconciler = w.new_reconciler()
    obj = scaler_obj(min_replicas=1, max_replicas=10)
    obj["spec"]["schedules"] = [window("08:00", "10:00", name="morning", minReplicas=4, **schedule)]
    w.cluster.put(obj)
    w.cluster.put(deployment(replicas=1))
    return w


def test_a_window_raises_the_floor_when_it_opens_and_lets_go_when_it_closes() -> None:
    w = _scheduled_world()
    w.fetcher.set_value(1.0)  # one replica's worth of load: the signal wants 1
    assert w.sync() == SYNC and w.applies() == []

    w.clock.step(60)  # 08:00: the window opens
    assert w.sync() == SYNC
    assert w.replicas() == 4
    limited = w.condition("ScalingLimited")
    assert (limited["status"], limited["reason"]) == ("True", "TooFewReplicas")
    assert "minReplicas (4) while schedule 'morning' is open" in limited["message"]
    rescale = [m for _, r, m in w.recorder.events if r == "SuccessfulRescale"]
    assert rescale == ["New size: 4 (was 1); below minReplicas (4)"]

    # while it stays open nothing is written
    w.cluster.put(deployment(replicas=4))
    w.fetcher.set_value(0.25)  # the same load over 4 replicas
    w.clock.step(15)
    w.sync()
    w.cluster.calls.clear()
    w.clock.step(15)
    assert w.sync() == SYNC and w.cluster.calls == []

    w.clock.step(2 * 3600)  # 10:00 and after: the spec's bounds again, the signal decides
    assert w.sync() == SYNC
    assert w.replicas() == 1
    assert w.condition("ScalingLimited")["message"] == "The recommendation is within [1, 10]."


def test_a_window_opening_raises_the_floor_even_while_nothing_can_be_measured() -> None:
    w = _scheduled_world()
    w.fetcher.set_value(None, error="no series")
    w.sync()
    assert w.applies() == []
    w.clock.step(60)
    w.sync()
    assert w.replicas() == 4
    assert "respect the bounds [4, 10]" in w.condition("AbleToScale")["message"]
    # and closing it never scales a failing scaler down
    w.cluster.put(deployment(replicas=4))
    w.clock.step(2 * 3600)
    w.sync()
    assert w.replicas() == 4
