"""Pausing a scaler by annotation: the rules of ``scaling.pause`` and the reconciler's branch."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScalerStatus
from llmscaler_runtime.scaling.pause import (
    PAUSED_ANNOTATION,
    PAUSED_REPLICAS_ANNOTATION,
    InvalidPause,
    Pause,
    pause_of,
)

from .fakes import deployment, internal_error, scaler_obj, writes_of
from .test_reconciler import RETRY, SYNC, World


@pytest.fixture
def w() -> World:
    return World()


def annotated(**annotations: str) -> dict[str, Any]:
    obj = scaler_obj()
    obj["metadata"]["annotations"] = dict(annotations)
    return obj


def paused_obj(value: str = "true", **more: str) -> dict[str, Any]:
    return annotated(**{PAUSED_ANNOTATION: value}, **more)


def replicas_obj(value: str) -> dict[str, Any]:
    return annotated(**{PAUSED_REPLICAS_ANNOTATION: value})


# -- the rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, None),
        ({"other": "true"}, None),
        ({PAUSED_ANNOTATION: "true"}, Pause()),
        ({PAUSED_ANNOTATION: "1"}, Pause()),
        ({PAUSED_ANNOTATION: "True"}, Pause()),
        ({PAUSED_ANNOTATION: "false"}, None),
        ({PAUSED_ANNOTATION: "0"}, None),
        ({PAUSED_ANNOTATION: "F"}, None),
        ({PAUSED_REPLICAS_ANNOTATION: "0"}, Pause(0)),
        ({PAUSED_REPLICAS_ANNOTATION: "10"}, Pause(10)),
        ({PAUSED_REPLICAS_ANNOTATION: " 3 "}, Pause(3)),
        # paused-replicas wins over paused, whatever paused says (KEDA's precedence)
        ({PAUSED_ANNOTATION: "false", PAUSED_REPLICAS_ANNOTATION: "2"}, Pause(2)),
        ({PAUSED_ANNOTATION: "true", PAUSED_REPLICAS_ANNOTATION: "2"}, Pause(2)),
    ],
)
def test_pause_of_reads_the_annotations_as_keda_does(
    annotations: dict[str, str], expected: Pause | None
) -> None:
    assert pause_of(annotated(**annotations), max_replicas=10) == expected


def test_a_non_boolean_paused_value_pauses_and_says_how_it_was_read() -> None:
    pause = pause_of(paused_obj("yes please"), max_replicas=10)
    assert isinstance(pause, Pause) and pause.replicas is None
    assert "'yes please' is not a boolean" in pause.note


@pytest.mark.parametrize("value", ["-1", "two", "1.5", "", "+3", "11", "1e3", "9" * 11])
def test_a_paused_replicas_value_outside_0_to_max_is_invalid(value: str) -> None:
    pause = pause_of(replicas_obj(value), max_replicas=10)
    assert isinstance(pause, InvalidPause)
    assert PAUSED_REPLICAS_ANNOTATION in pause.message and "maxReplicas (10)" in pause.message


def test_an_invalid_value_is_quoted_clipped() -> None:
    pause = pause_of(replicas_obj("x" * 500), max_replicas=10)
    assert isinstance(pause, InvalidPause) and len(pause.message) < 300


def test_already_set_is_remembered_in_the_status_not_in_memory() -> None:
    status = LLMScalerStatus.from_dict(
        {
            "desiredReplicas": 2,
            "conditions": [
                {
                    "type": "AbleToScale",
                    "status": "False",
                    "reason": "PausedReplicas",
                    "message": "m",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    )
    assert Pause(2).already_set(status, spec_replicas=5)  # set once; a hand edit since stays
    assert not Pause(3).already_set(status, spec_replicas=5)  # a new N is set again
    assert Pause(3).already_set(status, spec_replicas=3)  # the target has it already
    assert not Pause(2).already_set(LLMScalerStatus(), spec_replicas=5)
    assert Pause().already_set(LLMScalerStatus(), spec_replicas=5)


# -- the reconciler ---------------------------------------------------------------------------


def test_a_paused_scaler_reads_nothing_and_writes_its_status_once(w: World) -> None:
    w.cluster.put(paused_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(9.0)  # would scale to 10 if it were asked
    assert w.sync() == SYNC
    assert w.fetcher.calls == 0
    assert [c.verb for c in w.cluster.calls] == ["patch"]  # the status, saying so
    able = w.condition("AbleToScale")
    assert (able["status"], able["reason"]) == ("False", "Paused")
    assert PAUSED_ANNOTATION in able["message"]
    assert w.condition("ScalingActive")["reason"] == "Paused"
    assert (w.condition("Ready")["status"], w.condition("Ready")["reason"]) == ("True", "Paused")
    w.cluster.calls.clear()
    w.cluster.put(deployment(replicas=4, ready=2))  # the fleet moves by hand meanwhile
    for _ in range(3):
        w.clock.step(15)
        assert w.sync() == SYNC
    assert w.cluster.calls == [] and w.recorder.events == []
    assert w.fetcher.calls == 0
    assert w.replicas() == 4


def test_a_paused_scaler_does_not_even_look_for_its_target(w: World) -> None:
    w.cluster.put(paused_obj())  # no Deployment at all
    assert w.sync() == SYNC
    assert w.condition("AbleToScale")["reason"] == "Paused"
    assert w.recorder.events == [] and w.cluster.reads == 0


def test_unpausing_resumes_on_the_next_sync_with_a_fresh_window(w: World) -> None:
    w.cluster.put(scaler_obj(window=300))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.sync()
    assert w.replicas() == 6
    w.cluster.put(paused_obj() | {"spec": w.scaler()["spec"], "status": w.status()})
    w.clock.step(400)  # longer than the window
    w.sync()
    assert w.condition("AbleToScale")["reason"] == "Paused"
    w.cluster.put({**w.scaler(), "metadata": {**w.scaler()["metadata"], "annotations": {}}})
    w.fetcher.set_value(0.5)  # asks for 3: a scale-down
    assert w.sync() == SYNC
    # the history was dropped while paused: seeded with 6 now, so the window holds the fleet
    assert w.replicas() == 6
    assert w.condition("AbleToScale")["reason"] == "ScaleDownStabilized"
    w.clock.step(301)
    w.sync()
    assert w.replicas() == 3


def test_paused_replicas_sets_n_once_then_holds(w: World) -> None:
    w.cluster.put(replicas_obj("1"))
    w.cluster.put(deployment(replicas=3))
    assert w.sync() == SYNC
    assert w.fetcher.calls == 0
    (apply,) = w.applies()
    assert apply.body["spec"] == {"replicas": 1}
    assert writes_of(w.cluster, "patch", "Pod") == []  # no victim hints: an override
    assert w.condition("AbleToScale")["reason"] == "PausedReplicas"
    assert w.status()["desiredReplicas"] == 1 and w.status()["lastScaleTime"]
    ((kind, reason, message),) = w.recorder.events
    assert (kind, reason) == ("Normal", "SuccessfulRescale")
    assert message == f"New size: 1 (was 3); {PAUSED_REPLICAS_ANNOTATION}"
    # someone scales by hand during the pause: left alone, and nothing is written at all
    w.cluster.put(deployment(replicas=2))
    w.cluster.calls.clear()
    w.recorder.events.clear()
    for _ in range(2):
        w.clock.step(15)
        assert w.sync() == SYNC
    assert w.cluster.calls == [] and w.recorder.events == []
    assert w.replicas() == 2
    # a restarted manager (no memory) reads "set once" from the status and does not write
    w.reconciler = w.new_reconciler()
    w.sync()
    assert w.cluster.calls == []
    # a new N is set once more
    w.cluster.put({**w.scaler(), **replicas_obj("4")} | {"status": w.status()})
    w.sync()
    assert w.replicas() == 4 and w.status()["desiredReplicas"] == 4


def test_paused_replicas_below_min_replicas_parks_the_fleet(w: World) -> None:
    w.cluster.put(replicas_obj("0"))  # minReplicas is 1
    w.cluster.put(deployment(replicas=3))
    w.sync()
    assert w.replicas() == 0


def test_paused_replicas_already_at_n_writes_only_the_status(w: World) -> None:
    w.cluster.put(replicas_obj("3"))
    w.cluster.put(deployment(replicas=3))
    w.sync()
    assert w.applies() == [] and w.recorder.events == []
    assert w.condition("AbleToScale")["reason"] == "PausedReplicas"
    assert "lastScaleTime" not in w.status()


def test_a_failed_paused_replicas_write_is_retried(w: World) -> None:
    w.cluster.put(replicas_obj("1"))
    w.cluster.put(deployment(replicas=3))
    w.cluster.fail["apply"] = internal_error()
    assert w.sync() == RETRY
    assert w.condition("AbleToScale")["reason"] == "FailedUpdateScale"
    assert "FailedRescale" in w.recorder.reasons()
    del w.cluster.fail["apply"]
    assert w.sync() == SYNC
    assert w.replicas() == 1


def test_paused_replicas_respects_the_one_writer_rule(w: World) -> None:
    w.cluster.put(scaler_obj("old", created="2025-01-01T00:00:00Z"))
    w.cluster.put(replicas_obj("1"))  # "s", newer
    w.cluster.put(deployment(replicas=3))
    assert w.sync() == RETRY
    assert w.applies() == []
    assert w.condition("Ready")["reason"] == "TargetOwnedByAnotherScaler"


def test_an_invalid_paused_replicas_holds_and_warns(w: World) -> None:
    w.cluster.put(replicas_obj("eleven"))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(9.0)
    assert w.sync() == RETRY
    assert w.applies() == [] and w.fetcher.calls == 0
    able = w.condition("AbleToScale")
    assert (able["status"], able["reason"]) == ("False", "InvalidPausedReplicas")
    assert w.condition("Ready")["status"] == "False"
    assert [(t, r) for t, r, _ in w.recorder.events] == [("Warning", "InvalidPausedReplicas")]
    assert "'eleven'" in w.recorder.events[0][2]
