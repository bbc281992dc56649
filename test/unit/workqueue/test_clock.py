"""FakeClock rules the other tests rely on."""

from __future__ import annotations

import threading

import pytest

from llmscaler_runtime.workqueue import Clock, FakeClock, RealClock


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(RealClock(), Clock)
    assert isinstance(FakeClock(), Clock)


def test_fake_clock_moves_only_forward() -> None:
    c = FakeClock(5)
    c.step(1.5)
    assert c.now() == 6.5
    c.set(10)
    assert c.now() == 10
    with pytest.raises(ValueError):
        c.step(-1)
    with pytest.raises(ValueError):
        c.set(9)


def test_step_reports_a_waiter_that_never_settles() -> None:
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


def test_real_clock_is_monotonic() -> None:
    c = RealClock()
    a = c.now()
    assert c.now() >= a
