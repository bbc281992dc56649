"""Pins add_after: fake-clock timing, ordering, earlier-ready-time wins, one timer thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.workqueue import DelayingQueue
from test.unit.workqueue.fakes import RecordingProvider


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(100.0)


@pytest.fixture
def q(clock: FakeClock) -> Iterator[DelayingQueue[str]]:
    queue: DelayingQueue[str] = DelayingQueue(name="d", clock=clock)
    yield queue
    queue.shut_down()


def drain(q: DelayingQueue[str]) -> list[str]:
    """Everything currently queued, in order (FakeClock.step already settled the timer)."""
    out: list[str] = []
    while True:
        item, _ = q.get(timeout=0)
        if item is None:
            return out
        out.append(item)
        q.done(item)


def test_zero_or_negative_delay_adds_immediately(q: DelayingQueue[str]) -> None:
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert drain(q) == ["a", "b"]
    assert q.num_waiting() == 0


def test_item_becomes_ready_exactly_at_its_delay(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("a", 5)
    assert len(q) == 0 and q.num_waiting() == 1
    clock.step(4.999)
    assert len(q) == 0
    clock.step(0.001)
    assert drain(q) == ["a"]
    assert q.num_waiting() == 0


def test_items_come_out_in_ready_time_order(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("c", 3)
    q.add_after("a", 1)
    q.add_after("b", 2)
    q.add_after("d", 3)  # same ready time as c: insertion order
    clock.step(10)
    assert drain(q) == ["a", "b", "c", "d"]


def test_duplicate_waiting_item_keeps_the_earlier_ready_time(
    q: DelayingQueue[str], clock: FakeClock
) -> None:
    q.add_after("a", 10)
    q.add_after("a", 2)  # earlier: replaces
    q.add_after("a", 30)  # later: ignored
    assert q.num_waiting() == 1
    clock.step(2)
    assert drain(q) == ["a"]
    clock.step(100)
    assert drain(q) == [], "the superseded entries must not fire again"


def test_waiting_item_does_not_block_direct_add(q: DelayingQueue[str], clock: FakeClock) -> None:
    q.add_after("a", 5)
    q.add("a")
    assert drain(q) == ["a"]
    clock.step(5)
    assert drain(q) == ["a"]


def test_add_after_during_processing_respects_processing_rule(
    q: DelayingQueue[str], clock: FakeClock
) -> None:
    q.add("a")
    assert q.get(timeout=1) == ("a", False)
    q.add_after("a", 1)
    clock.step(1)
    assert len(q) == 0, "still processing: parked in dirty"
    q.done("a")
    assert drain(q) == ["a"]


def test_shut_down_drops_waiting_items_and_stops_timer(clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 1)
    q.shut_down()
    q._timer.join(5)
    assert not q._timer.is_alive()
    q.add_after("b", 1)
    clock.step(5)
    assert q.get(timeout=0) == (None, True)


def test_ten_thousand_pending_items_share_one_timer_thread(clock: FakeClock) -> None:
    before = threading.active_count()
    q: DelayingQueue[int] = DelayingQueue(clock=clock)
    try:
        for i in range(10_000):
            q.add_after(i, 1 + (i * 7919 % 10_000) / 1000)  # shuffled delays in [1, 11)
        assert threading.active_count() == before + 1
        assert q.num_waiting() == 10_000
        clock.step(6)
        ready = len(q)
        assert 4_900 <= ready <= 5_100
        clock.step(5)
        assert len(q) == 10_000
        last = -1.0
        for _ in range(10_000):
            item, _ = q.get(timeout=0)
            assert item is not None
            delay = 1 + (item * 7919 % 10_000) / 1000
            assert delay >= last, "items must leave in ready-time order"
            last = delay
            q.done(item)
    finally:
        q.shut_down()


def test_retries_metric_counts_every_add_after_but_not_plain_adds(clock: FakeClock) -> None:
    # client-go's AddAfter calls metrics.retry() before looking at the delay, so an immediate
    # (zero or negative delay) add_after is a retry too; a plain add() never is, and nothing
    # is counted once the queue shuts down.
    provider = RecordingProvider()
    q: DelayingQueue[str] = DelayingQueue(name="r", clock=clock, metrics=provider)
    try:
        q.add_after("a", 1)
        q.add_after("a", 2)
        q.add_after("b", 0)
        q.add_after("d", -1)
        q.add("c")
        assert provider.metrics[("retries", "r")].value == 4
    finally:
        q.shut_down()
    q.add_after("e", 1)
    q.add_after("e", 0)
    assert provider.metrics[("retries", "r")].value == 4


def test_timer_refreshes_unfinished_work_gauge(clock: FakeClock) -> None:
    provider = RecordingProvider()
    q: DelayingQueue[str] = DelayingQueue(name="u", clock=clock, metrics=provider)
    try:
        q.add("a")
        q.get(timeout=1)
        clock.step(0.5)
        clock.step(0.5)
        assert provider.metrics[("unfinished", "u")].value == pytest.approx(1.0)
        assert provider.metrics[("longest", "u")].value == pytest.approx(1.0)
    finally:
        q.shut_down()
