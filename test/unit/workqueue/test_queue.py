"""Pins client-go's basic workqueue rules (dedup, processing/dirty, shutdown, drain)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.workqueue import Queue, QueueMetricsProvider
from test.unit.workqueue.fakes import RecordingProvider


@pytest.fixture
def q() -> Iterator[Queue[str]]:
    queue: Queue[str] = Queue(name="t")
    yield queue
    queue.shut_down()


def get_now(q: Queue[str]) -> str:
    item, shutdown = q.get(timeout=5)
    assert not shutdown and item is not None, "expected an item"
    return item


def test_fifo_order_and_duplicates_collapse(q: Queue[str]) -> None:
    for key in ["a", "b", "a", "c", "b", "a"]:
        q.add(key)
    assert len(q) == 3
    assert [get_now(q) for _ in range(3)] == ["a", "b", "c"]
    assert q.get(timeout=0.01) == (None, False)


def test_item_added_while_processing_is_parked_then_requeued_on_done(q: Queue[str]) -> None:
    q.add("a")
    assert get_now(q) == "a"
    q.add("a")
    q.add("a")
    # Not handed to a second worker while the first still processes it.
    assert len(q) == 0
    assert q.get(timeout=0.01) == (None, False)
    q.done("a")
    assert len(q) == 1
    assert get_now(q) == "a"
    q.done("a")
    assert len(q) == 0


def test_done_without_readd_does_not_requeue(q: Queue[str]) -> None:
    q.add("a")
    get_now(q)
    q.done("a")
    assert len(q) == 0
    q.add("a")
    assert len(q) == 1


def test_get_blocks_until_an_item_arrives(q: Queue[str]) -> None:
    got: list[tuple[str | None, bool]] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    t.join(0.05)
    assert t.is_alive() and not got
    q.add("x")
    t.join(5)
    assert got == [("x", False)]


def test_shut_down_wakes_every_blocked_getter(q: Queue[str]) -> None:
    results: list[tuple[str | None, bool]] = []
    lock = threading.Lock()

    def getter() -> None:
        r = q.get()
        with lock:
            results.append(r)

    threads = [threading.Thread(target=getter) for _ in range(4)]
    for t in threads:
        t.start()
    q.shut_down()
    for t in threads:
        t.join(5)
        assert not t.is_alive()
    assert results == [(None, True)] * 4
    assert q.shutting_down()


def test_queued_items_are_still_handed_out_after_shutdown_but_adds_are_ignored(
    q: Queue[str],
) -> None:
    q.add("a")
    q.shut_down()
    q.add("b")
    assert get_now(q) == "a"
    assert q.get() == (None, True)


def test_shut_down_with_drain_waits_for_processing_to_empty(q: Queue[str]) -> None:
    q.add("a")
    q.add("b")
    a = get_now(q)
    drained: list[bool] = []
    t = threading.Thread(target=lambda: drained.append(q.shut_down_with_drain()))
    t.start()
    t.join(0.05)
    assert t.is_alive(), "drain returned while an item was still processing"
    # Queued-but-not-started work can still be taken during a drain, and must be finished too.
    b = get_now(q)
    q.done(a)
    t.join(0.05)
    assert t.is_alive()
    q.done(b)
    t.join(5)
    assert drained == [True]


def test_shut_down_with_drain_times_out(q: Queue[str]) -> None:
    q.add("a")
    get_now(q)
    start = time.monotonic()
    assert q.shut_down_with_drain(timeout=0.05) is False
    assert time.monotonic() - start < 2


def test_plain_shut_down_cancels_a_pending_drain(q: Queue[str]) -> None:
    q.add("a")
    get_now(q)
    drained: list[bool] = []
    t = threading.Thread(target=lambda: drained.append(q.shut_down_with_drain()))
    t.start()
    t.join(0.05)
    assert t.is_alive()
    q.shut_down()
    t.join(5)
    assert drained == [False]


def test_none_items_are_rejected(q: Queue[str]) -> None:
    with pytest.raises(TypeError):
        q.add(None)  # type: ignore[arg-type]


def test_no_two_workers_ever_process_the_same_key() -> None:
    q: Queue[int] = Queue()
    keys = 5
    active: set[int] = set()
    processed = [0]
    violations: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item is not None
            with lock:
                if item in active:
                    violations.append(item)
                active.add(item)
            # Re-adding the item we are processing is the race the dirty set guards against.
            q.add(item)
            with lock:
                active.discard(item)
                processed[0] += 1
            q.done(item)
            if processed[0] > 3000:
                q.shut_down()

    workers = [threading.Thread(target=worker) for _ in range(6)]
    for w in workers:
        w.start()
    for i in range(keys):
        q.add(i)
    for w in workers:
        w.join(20)
        assert not w.is_alive()
    assert violations == []
    assert processed[0] > 3000


def test_metrics_depth_adds_latency_and_work_duration() -> None:
    clock = FakeClock()
    provider = RecordingProvider()
    assert isinstance(provider, QueueMetricsProvider)
    q: Queue[str] = Queue(name="m", clock=clock, metrics=provider)
    m = provider.metrics
    q.add("a")
    q.add("a")
    q.add("b")
    assert m[("adds", "m")].value == 2
    assert m[("depth", "m")].value == 2
    clock.step(3)
    get_now(q)
    assert m[("depth", "m")].value == 1
    assert m[("latency", "m")].observations == [3.0]
    clock.step(2)
    q.update_unfinished_work()
    assert m[("unfinished", "m")].value == 2.0
    assert m[("longest", "m")].value == 2.0
    q.done("a")
    assert m[("work", "m")].observations == [2.0]
    q.shut_down()
