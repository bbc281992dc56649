"""EventRecorder: core/v1 Event shape, aggregation of repeats, bounded window, and that a
failing or slow API never reaches (or blocks) the caller."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from llmscaler_runtime.events import EventRecorder
from llmscaler_runtime.kube.errors import InternalError
from llmscaler_runtime.testkit import FakeClock

from .manager.fakes import FakeClient

POD = {
    "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
    "kind": "LLMScaler",
    "metadata": {"name": "s1", "namespace": "team", "uid": "u-1", "resourceVersion": "7"},
}


def fake_clock() -> FakeClock:
    """Wall time 1_800_000_000, 2027-01-15T08:00:00Z: the timestamps asserted below."""
    return FakeClock(wall=1_800_000_000.0)


def recorder(client: Any, clock: FakeClock, **kw: Any) -> EventRecorder:
    return EventRecorder(client, "llmscaler", clock=clock, host="node-1", **kw)


def test_first_event_is_a_complete_core_v1_event() -> None:
    client = FakeClient()
    rec = recorder(client, fake_clock())
    rec.event(POD, "Warning", "MetricsUnavailable", "prometheus: timeout")
    assert rec.flush(5)
    [ev] = client.of_kind("Event")
    assert ev["apiVersion"] == "v1"
    assert ev["metadata"]["namespace"] == "team"
    assert ev["metadata"]["name"].startswith("s1.")
    assert ev["involvedObject"] == {
        "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
        "kind": "LLMScaler",
        "name": "s1",
        "namespace": "team",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert (ev["type"], ev["reason"], ev["message"]) == (
        "Warning",
        "MetricsUnavailable",
        "prometheus: timeout",
    )
    assert ev["source"] == {"component": "llmscaler", "host": "node-1"}
    assert ev["count"] == 1
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2027-01-15T08:00:00Z"
    rec.stop()


def test_repeats_within_window_patch_one_event() -> None:
    client = FakeClient()
    clock = fake_clock()
    rec = recorder(client, clock)
    for _ in range(5):
        rec.event(POD, "Warning", "MetricsUnavailable", "prometheus: timeout")
        clock.step(30)
    assert rec.flush(5)
    [ev] = client.of_kind("Event")
    assert ev["count"] == 5
    assert ev["firstTimestamp"] == "2027-01-15T08:00:00Z"
    assert ev["lastTimestamp"] == "2027-01-15T08:02:00Z"
    assert (rec.created, rec.patched) == (1, 4)
    # A different message, reason or type is a different Event.
    rec.event(POD, "Warning", "MetricsUnavailable", "prometheus: 500")
    rec.event(POD, "Normal", "MetricsUnavailable", "prometheus: timeout")
    assert rec.flush(5)
    assert len(client.of_kind("Event")) == 3
    rec.stop()


def test_repeat_after_window_starts_a_new_event() -> None:
    client = FakeClient()
    clock = fake_clock()
    rec = recorder(client, clock, window=600)
    rec.event(POD, "Normal", "Scaled", "2 -> 3")
    clock.step(599)
    rec.event(POD, "Normal", "Scaled", "2 -> 3")
    assert rec.flush(5)
    assert [e["count"] for e in client.of_kind("Event")] == [2]
    clock.step(601)
    rec.event(POD, "Normal", "Scaled", "2 -> 3")
    assert rec.flush(5)
    assert sorted(e["count"] for e in client.of_kind("Event")) == [1, 2]
    rec.stop()


def test_event_deleted_server_side_is_recreated() -> None:
    client = FakeClient()
    rec = recorder(client, fake_clock())
    rec.event(POD, "Normal", "Scaled", "x")
    assert rec.flush(5)
    with client.store.lock:
        client.store.objects.clear()
    rec.event(POD, "Normal", "Scaled", "x")
    assert rec.flush(5)
    [ev] = client.of_kind("Event")
    assert ev["count"] == 1
    rec.stop()


def test_many_similar_messages_fold_into_one_combined_event() -> None:
    # A failing scaler whose message changes every sync (a number in the error text) must
    # not create one Event per sync either: client-go's aggregator combines them after 10.
    client = FakeClient()
    clock = fake_clock()
    rec = recorder(client, clock)
    for i in range(25):
        rec.event(POD, "Warning", "ScaleFailed", f"attempt {i}: conflict")
        clock.step(10)
    rec.event(POD, "Warning", "OtherReason", "attempt 0: conflict")
    assert rec.flush(5)
    events = client.of_kind("Event")
    plain = [e for e in events if not e["message"].startswith("(combined")]
    [combined] = [e for e in events if e["message"].startswith("(combined")]
    assert len(plain) == 9 + 1  # the first nine distinct messages, and the other reason
    assert combined["message"] == "(combined from similar events): attempt 24: conflict"
    assert combined["count"] == 16
    assert combined["reason"] == "ScaleFailed"
    # After a quiet window the messages start counting from zero again.
    clock.step(601)
    rec.event(POD, "Warning", "ScaleFailed", "attempt 99: conflict")
    assert rec.flush(5)
    assert any(e["message"] == "attempt 99: conflict" for e in client.of_kind("Event"))
    with pytest.raises(ValueError):
        recorder(client, clock, max_similar=1)
    rec.stop()


def test_aggregation_memory_is_bounded() -> None:
    client = FakeClient()
    rec = recorder(client, fake_clock(), max_series=3)
    for i in range(10):
        rec.event(POD, "Normal", "R", f"m{i}")
    assert rec.flush(5)
    assert len(rec._series) == 3
    rec.stop()


def test_api_failures_are_logged_not_raised() -> None:
    class Failing(FakeClient):
        def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
            raise InternalError(500, "InternalError", "etcd down")

    rec = recorder(Failing(), fake_clock())
    rec.event(POD, "Warning", "R", "m")  # must not raise
    assert rec.flush(5)
    assert rec.failed == 1 and rec.created == 0
    rec.event(POD, "Warning", "R", "m")  # the writer thread survived
    assert rec.flush(5)
    assert rec.failed == 2
    rec.stop()


def test_slow_api_never_blocks_the_caller_and_overflow_is_dropped() -> None:
    gate = threading.Event()

    class Slow(FakeClient):
        def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
            gate.wait(10)
            return super().create(obj, namespace=namespace)

    client = Slow()
    rec = recorder(client, fake_clock(), max_pending=2)
    t0 = time.monotonic()
    for i in range(10):
        rec.event(POD, "Normal", "R", f"m{i}")
    assert time.monotonic() - t0 < 1.0
    assert rec.dropped >= 7  # one in flight, two queued
    gate.set()
    assert rec.flush(5)
    assert rec.created == 10 - rec.dropped
    rec.stop()


def test_bad_input_is_a_clear_error() -> None:
    rec = recorder(FakeClient(), fake_clock())
    with pytest.raises(ValueError, match="Normal"):
        rec.event(POD, "Error", "R", "m")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reason"):
        rec.event(POD, "Normal", "", "m")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        rec.event({"kind": "Pod", "metadata": {}}, "Normal", "R", "m")
    with pytest.raises(ValueError, match="component"):
        EventRecorder(FakeClient(), "")


def test_long_messages_are_truncated_and_cluster_scoped_objects_go_to_default() -> None:
    client = FakeClient()
    rec = recorder(client, fake_clock())
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "x"}}
    rec.event(node, "Normal", "R", "y" * 5000)
    assert rec.flush(5)
    [ev] = client.of_kind("Event")
    assert ev["metadata"]["namespace"] == "default"
    assert "namespace" not in ev["involvedObject"]
    assert len(ev["message"]) == 1024 and ev["message"].endswith("...")
    rec.stop()
    rec.event(node, "Normal", "R", "after stop")  # dropped, not raised
    assert rec.dropped == 1
