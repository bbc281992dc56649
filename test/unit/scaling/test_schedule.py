"""Syncs run on a wall-clock grid of the sync period, so identical queries meet in one tick."""

from __future__ import annotations

import pytest

from llmscaler_runtime.scaling.schedule import next_sync_delay, sync_tick


def test_delay_reaches_the_next_multiple_of_the_period() -> None:
    assert next_sync_delay(1_000.0, 15.0) == pytest.approx(5.0)  # 1000 = 66*15 + 10
    assert next_sync_delay(1_005.0, 15.0) == pytest.approx(15.0)  # exactly on a tick


def test_scalers_synced_at_different_times_meet_on_the_same_tick() -> None:
    ticks = {t + next_sync_delay(t, 15.0) for t in (1_005.5, 1_009.0, 1_013.9)}
    assert ticks == {1_020.0}


def test_a_sync_just_before_a_tick_is_not_rerun_a_moment_later() -> None:
    # a timer that fires a hair early must not cause two evaluations in one tick
    assert next_sync_delay(1_019.99, 15.0) == pytest.approx(15.01)
    assert next_sync_delay(1_019.0, 15.0) == pytest.approx(1.0)  # a real gap is kept


def test_tick_index_and_bad_period() -> None:
    assert sync_tick(1_019.99, 15.0) == 67
    assert sync_tick(1_020.0, 15.0) == 68
    with pytest.raises(ValueError):
        next_sync_delay(0.0, 0.0)


def _spec(**kw: object) -> object:
    from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec

    obj: dict[str, object] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "serverAddress": "http://prom:9090",
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [{"name": "kv", "query": "avg(kv)", "target": "0.8"}],
        **kw,
    }
    return LLMScalerSpec.from_dict(obj)


def test_scalers_asking_the_same_questions_share_a_phase_others_spread() -> None:
    from llmscaler_runtime.scaling.schedule import phase_of

    same = phase_of(_spec()), phase_of(_spec(minReplicas=2))  # bounds do not matter
    assert same[0] == same[1]
    assert 0.0 <= same[0] < 15.0
    phases = {
        phase_of(_spec(metrics=[{"name": "kv", "query": f"avg(kv{{app='a{i}'}})", "target": "1"}]))
        for i in range(200)
    }
    assert len(phases) > 190  # unrelated groups do not pile up on one instant
    assert max(phases) - min(phases) > 12.0  # and they cover the period


def test_phase_shifts_the_grid() -> None:
    assert next_sync_delay(1_000.0, 15.0, phase=3.0) == pytest.approx(8.0)  # ticks at ...,993,1008
    assert sync_tick(1_008.0, 15.0, phase=3.0) == sync_tick(1_022.9, 15.0, phase=3.0)


def test_a_time_a_float_hair_before_a_tick_start_belongs_to_that_tick() -> None:
    """A sync woken exactly at its tick computes (phase + offset) + wall in another order
    than the grid does; the rounding must not put it in the previous tick."""
    from llmscaler_runtime.scaling.schedule import TICK_EPSILON, sync_tick

    period, phase = 15.0, 3.123457
    start = phase + 120_000_001 * period
    assert sync_tick(start, period, phase) == 120_000_001
    assert sync_tick(start - 2e-7, period, phase) == 120_000_001  # float noise at 1.8e9 s
    assert sync_tick(start - 10 * TICK_EPSILON, period, phase) == 120_000_000
    for offset in (
        0.1,
        0.35,
        0.7,
        2.9,
    ):  # a virtual clock landing on the tick, summed as FakeClock does
        wall = (1_800_000_007.6 + offset) + 7.4
        tick = sync_tick(wall, period, offset + 0.0)
        assert tick == sync_tick(1_800_000_015.0 + offset, period, offset)
