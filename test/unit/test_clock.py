"""The one clock: the system clock's readings, and the fake every timing test injects."""

from __future__ import annotations

import threading
import time

import pytest

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock, SystemClock
from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.testkit.clock import DEFAULT_WALL_START


def test_both_clocks_implement_the_protocol() -> None:
    assert isinstance(SystemClock(), Clock)
    assert isinstance(FakeClock(), Clock)
    assert isinstance(SYSTEM_CLOCK, Clock)


def test_system_clock_reads_wall_and_monotonic_time() -> None:
    before = time.time()
    assert before - 1 <= SYSTEM_CLOCK.now() <= time.time() + 1
    a = SYSTEM_CLOCK.monotonic()
    assert SYSTEM_CLOCK.monotonic() >= a


def test_step_moves_both_clocks_and_step_wall_only_the_wall() -> None:
    c = FakeClock(5)
    assert c.monotonic() == 5
    assert c.now() == DEFAULT_WALL_START
    c.step(1.5)
    assert (c.monotonic(), c.now()) == (6.5, DEFAULT_WALL_START + 1.5)
    c.step_wall(-3600)
    assert (c.monotonic(), c.now()) == (6.5, DEFAULT_WALL_START + 1.5 - 3600)
    c.set(10)
    assert (c.monotonic(), c.now()) == (10, DEFAULT_WALL_START + 5 - 3600)


def test_monotonic_time_never_goes_back() -> None:
    c = FakeClock(5, wall=100.0)
    with pytest.raises(ValueError, match="cannot go back"):
        c.step(-1)
    with pytest.raises(ValueError, match="before the current time"):
        c.set(4)
    assert (c.monotonic(), c.now()) == (5, 100.0)


def test_step_returns_once_a_waiting_timer_thread_saw_the_new_time() -> None:
    c = FakeClock()
    cond = threading.Condition()
    seen: list[float] = []
    stop = threading.Event()

    def timer() -> None:
        with cond:
            while not stop.is_set():
                seen.append(c.monotonic())
                c.wait(cond, 1.0)
            c.forget_waiter(cond)

    t = threading.Thread(target=timer, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    while not c.has_waiters():
        assert time.monotonic() < deadline, "the timer thread never waited"
        time.sleep(0.001)
    c.step(2)
    assert seen[-1] == 2  # no polling: step() waited for the thread to look
    stop.set()
    with cond:
        cond.notify_all()
    t.join(5)
    assert not c.has_waiters()


def test_a_hung_waiter_is_reported_not_waited_for_forever() -> None:
    c = FakeClock(settle_timeout=0.05)
    cond = threading.Condition()
    entered = threading.Event()

    def hang() -> None:
        with cond:
            c.wait(cond, None)  # registers, then returns on the first notify
            entered.set()
            time.sleep(0.5)  # holds cond without waiting: never settles

    threading.Thread(target=hang, daemon=True).start()
    deadline = time.monotonic() + 5
    while not c.has_waiters():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    with pytest.raises(RuntimeError, match="did not settle"):
        c.step(1)


def test_a_forgotten_waiter_no_longer_blocks_step() -> None:
    c = FakeClock(settle_timeout=0.05)
    cond = threading.Condition()
    with cond:
        c.wait(cond, 0)  # registers, returns at once (timeout <= 0)
    # The "thread" never waits again, so it cannot settle: step must say so rather than hang.
    with pytest.raises(RuntimeError, match="did not settle"):
        c.step(1)
    c.forget_waiter(cond)
    c.step(1)
    assert not c.has_waiters()
