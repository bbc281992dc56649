"""status.recentDecisions: what an entry says, that the list stays bounded and newest first, and
that it is written only together with a scale (never an extra write, nothing when steady)."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import (
    DECISION_TEXT_MAX,
    KIND,
    RECENT_DECISIONS_MAX,
    LLMScaler,
    LLMScalerStatus,
    ScaleDecision,
)
from llmscaler_runtime.scaling.record import decision_entry
from llmscaler_runtime.scaling.status import build_status, prepend, rfc3339
from llmscaler_runtime.scaling.types import (
    History,
    Measurement,
    MetricRecommendation,
    Plan,
    Recommendation,
)

from .fakes import deployment, internal_error, scaler_obj, writes_of
from .test_reconciler import World

T0 = 1_800_000_000.0
STAMP = rfc3339(T0)


def _spec(**kw: Any) -> Any:
    return LLMScaler.from_dict(scaler_obj(**kw)).spec


def _plan(current: int, replicas: int, desired: int | None = None, held_by: Any = None) -> Plan:
    return Plan(
        current, replicas if desired is None else desired, replicas, held_by, History(), History()
    )


def _entry(n: int) -> ScaleDecision:
    return ScaleDecision(time=rfc3339(T0 + n), from_replicas=n, to_replicas=n + 1)


# --- the entry ------------------------------------------------------------------------------


def test_a_metric_scale_names_the_winning_metric_with_its_value_and_target() -> None:
    votes = (
        MetricRecommendation("queue", 3.0, 10.0, 2),
        MetricRecommendation("kv-cache", 0.92, 0.6, 4),
        MetricRecommendation("later-tie", 8.0, 4.0, 4),
    )
    rec = Recommendation(4, 4, 2, per_metric=votes, reason="metric 'kv-cache': ceil(...) = 4")
    entry = decision_entry(STAMP, _spec(), Measurement("Prometheus"), rec, _plan(2, 4))
    assert entry == ScaleDecision(
        time=STAMP,
        from_replicas=2,
        to_replicas=4,
        desired=4,
        driver="Metric",
        metric="kv-cache",  # the first of the tied votes, as the recommender picks it
        value="0.92",
        target="0.6",
        reason="metric 'kv-cache': ceil(...) = 4",
    )


def test_a_clamped_metric_scale_still_names_the_metric_that_asked() -> None:
    votes = (MetricRecommendation("m", 50.0, 1.0, 150),)
    rec = Recommendation(10, 150, 3, limited="TooManyReplicas", per_metric=votes, reason="r")
    entry = decision_entry(STAMP, _spec(), Measurement("Prometheus"), rec, _plan(3, 10))
    assert (entry.driver, entry.metric, entry.value, entry.to_replicas) == ("Metric", "m", "50", 10)


def test_a_decision_server_scale_records_its_answer() -> None:
    rec = Recommendation(7, 7, 2, reason="decision server asked for 7 replicas")
    measurement = Measurement("Custom", decision=7)
    entry = decision_entry(STAMP, _spec(provider="Custom"), measurement, rec, _plan(2, 7))
    assert (entry.driver, entry.value, entry.metric, entry.target) == (
        "DecisionServer",
        "7",
        None,
        None,
    )
    assert entry.reason == "decision server asked for 7 replicas"


@pytest.mark.parametrize(
    ("current", "replicas", "why"),
    [(12, 10, "above maxReplicas (10)"), (0, 1, "below minReplicas (1)")],
)
def test_a_scale_to_a_violated_bound_is_driven_by_the_bounds(
    current: int, replicas: int, why: str
) -> None:
    rec = Recommendation(None, None, current, reason="every metric was skipped")
    plan = _plan(current, replicas, held_by="no-measurement")
    entry = decision_entry(STAMP, _spec(), Measurement("Prometheus"), rec, plan)
    assert (entry.driver, entry.reason, entry.held_by) == ("Bounds", why, "no-measurement")


def test_a_step_capped_scale_says_where_it_was_heading_and_what_held_it() -> None:
    votes = (MetricRecommendation("m", 0.1, 1.0, 1),)
    rec = Recommendation(1, 1, 10, per_metric=votes, reason="r")
    plan = _plan(10, 8, desired=1, held_by="step-cap")
    entry = decision_entry(STAMP, _spec(step=2), Measurement("Prometheus"), rec, plan)
    assert (entry.from_replicas, entry.to_replicas, entry.desired, entry.held_by) == (
        10,
        8,
        1,
        "step-cap",
    )


def test_long_text_is_cut_to_what_the_crd_accepts() -> None:
    long = "x" * (DECISION_TEXT_MAX + 50)
    votes = (MetricRecommendation(long, 2.0, 1.0, 4),)
    rec = Recommendation(4, 4, 2, per_metric=votes, reason=long)
    entry = decision_entry(STAMP, _spec(), Measurement("Prometheus"), rec, _plan(2, 4))
    assert len(entry.reason) == len(entry.metric or "") == DECISION_TEXT_MAX


def test_figures_keep_six_significant_digits() -> None:
    votes = (MetricRecommendation("m", 1234567.891, 0.000123456789, 4),)
    rec = Recommendation(4, 4, 2, per_metric=votes, reason="r")
    entry = decision_entry(STAMP, _spec(), Measurement("Prometheus"), rec, _plan(2, 4))
    assert (entry.value, entry.target) == ("1.23457e+06", "0.000123457")


# --- the list -------------------------------------------------------------------------------


def test_the_list_is_newest_first_and_bounded() -> None:
    recent: tuple[ScaleDecision, ...] = ()
    for n in range(RECENT_DECISIONS_MAX + 3):
        recent = prepend(_entry(n), recent)
    assert len(recent) == RECENT_DECISIONS_MAX
    newest = RECENT_DECISIONS_MAX + 2
    assert [e.from_replicas for e in recent] == list(range(newest, newest - len(recent), -1))


def test_build_status_records_the_decision_and_its_time_is_last_scale_time() -> None:
    old = LLMScalerStatus(recent_decisions=(_entry(1),), last_scale_time=rfc3339(T0 + 1))
    entry = _entry(9)
    new = build_status(
        old,
        [],
        now=T0 + 10,  # the entry's own time wins: the two fields never disagree
        generation=1,
        current_replicas=2,
        desired_replicas=3,
        scaled=True,
        decision=entry,
    )
    assert new.recent_decisions == (entry, _entry(1))
    assert new.last_scale_time == entry.time
    kept = build_status(
        new,
        [],
        now=T0 + 20,
        generation=1,
        current_replicas=3,
        desired_replicas=3,
        scaled=False,
    )
    assert kept.recent_decisions == new.recent_decisions
    assert kept.last_scale_time == entry.time


def test_a_damaged_list_in_the_status_is_dropped_entry_by_entry() -> None:
    status = LLMScalerStatus.from_dict(
        {
            "recentDecisions": [
                {"time": "yesterday", "from": 1, "to": 2},
                {"time": STAMP, "from": 2, "to": 3, "driver": "Metric"},
                "junk",
            ]
        },
        strict=False,
    )
    assert [(e.from_replicas, e.to_replicas) for e in status.recent_decisions] == [(2, 3)]


# --- through the reconciler -------------------------------------------------------------------


@pytest.fixture
def w() -> World:
    return World()


def _status_patches(w: World) -> list[Any]:
    return [c for c in writes_of(w.cluster, "patch", KIND) if c.subresource == "status"]


def test_a_scale_is_recorded_in_the_one_status_write_it_causes(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()  # first sync: status written, nothing scaled, nothing recorded
    assert "recentDecisions" not in w.status()
    w.cluster.calls.clear()
    w.clock.step(15)
    w.fetcher.set_value(2.0)
    w.sync()
    (patch,) = _status_patches(w)
    (entry,) = patch.body["status"]["recentDecisions"]
    assert entry == {
        "time": w.status()["lastScaleTime"],
        "from": 3,
        "to": 6,
        "desired": 6,
        "driver": "Metric",
        "metric": "m",
        "value": "2",
        "target": "1",
        "reason": "metric 'm': ceil(3 * 2 / 1) = 6",
    }
    assert [c.verb for c in w.cluster.calls] == ["apply", "patch"]  # the scale and its status


def test_a_steady_sync_records_nothing_and_writes_nothing(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.sync()
    assert len(w.status()["recentDecisions"]) == 1
    w.fetcher.set_value(1.0)  # ceil(6 * 1 / 1) = 6: steady at the new size
    w.clock.step(15)
    w.sync()  # the status catches up with the grown fleet (currentReplicas, AbleToScale)
    w.cluster.calls.clear()
    for _ in range(3):
        w.clock.step(15)
        w.sync()
    assert w.cluster.calls == []
    assert len(w.status()["recentDecisions"]) == 1


def test_many_scales_keep_the_last_few_newest_first(w: World) -> None:
    w.cluster.put(scaler_obj(max_replicas=100))
    w.cluster.put(deployment(replicas=1))
    sizes = list(range(2, 2 + RECENT_DECISIONS_MAX + 2))
    for n in sizes:
        w.clock.step(15)
        w.fetcher.set_value(float(n) / w.replicas())
        w.sync()
        assert w.replicas() == n
    recent = w.status()["recentDecisions"]
    assert [e["to"] for e in recent] == sizes[::-1][:RECENT_DECISIONS_MAX]
    assert [e["from"] for e in recent] == [n - 1 for n in sizes[::-1][:RECENT_DECISIONS_MAX]]
    assert recent[0]["time"] == w.status()["lastScaleTime"]
    assert recent[0]["time"] > recent[-1]["time"]


def test_a_failed_scale_records_nothing(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.cluster.fail["apply"] = internal_error()
    w.fetcher.set_value(2.0)
    w.sync()
    assert "recentDecisions" not in w.status() and "lastScaleTime" not in w.status()


def test_a_decision_server_scale_shows_the_servers_answer(w: World) -> None:
    w.cluster.put(scaler_obj(provider="Custom"))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_decision(5)
    w.sync()
    (entry,) = w.status()["recentDecisions"]
    assert (entry["driver"], entry["value"], entry["from"], entry["to"]) == (
        "DecisionServer",
        "5",
        3,
        5,
    )


def test_a_walk_down_records_each_step_with_the_step_cap(w: World) -> None:
    w.cluster.put(scaler_obj(step=2))
    w.cluster.put(deployment(replicas=10))
    w.fetcher.set_value(0.1)
    w.sync()
    w.clock.step(15)
    w.sync()
    first, second = w.status()["recentDecisions"][::-1]
    assert (first["from"], first["to"], first["desired"], first["heldBy"]) == (10, 8, 1, "step-cap")
    assert (second["from"], second["to"], second["heldBy"]) == (8, 6, "step-cap")


def test_an_advisory_scaler_records_nothing(w: World) -> None:
    """Advisory mode writes no replicas, so there is no scale to record (its advice is in the
    Advisory condition instead)."""
    w.reconciler = w.new_reconciler(advisory=True)
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.sync()
    assert w.replicas() == 3
    assert "recentDecisions" not in w.status() and "lastScaleTime" not in w.status()
