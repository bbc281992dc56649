"""Pins the rate limiters' delay sequences and the rate-limiting queue."""

from __future__ import annotations

import pytest

from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    RateLimitingQueue,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)


def test_exponential_sequence_doubles_from_base_then_caps() -> None:
    r = ItemExponentialFailureRateLimiter(0.005, 1000)
    got = [r.when("a") for _ in range(20)]
    assert got[:5] == pytest.approx([0.005, 0.010, 0.020, 0.040, 0.080])
    assert got[17] == pytest.approx(0.005 * 2**17)  # 655.36 s, still below the cap
    assert got[18] == 1000 and got[19] == 1000
    assert r.num_requeues("a") == 20
    assert r.when("b") == 0.005, "failures are per item"


def test_exponential_never_overflows() -> None:
    r = ItemExponentialFailureRateLimiter(0.005, 1000)
    for _ in range(5000):
        d = r.when("a")
    assert d == 1000


def test_forget_resets_the_backoff() -> None:
    r = ItemExponentialFailureRateLimiter(0.005, 1000)
    r.when("a")
    r.when("a")
    r.forget("a")
    assert r.num_requeues("a") == 0
    assert r.when("a") == 0.005


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"base": 0}, "base"), ({"base": 1, "cap": 0.5}, "cap")],
)
def test_exponential_rejects_bad_arguments(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ItemExponentialFailureRateLimiter(**kwargs)


def test_bucket_allows_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    r = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [r.when(i) for i in range(100)] == [0.0] * 100
    assert r.when("x") == pytest.approx(0.1)
    assert r.when("y") == pytest.approx(0.2)
    clock.step(0.2)  # debt repaid
    assert r.when("z") == pytest.approx(0.1)
    clock.step(1000)  # refills only up to the burst
    assert [r.when(i) for i in range(100)] == [0.0] * 100
    assert r.when("w") == pytest.approx(0.1)
    assert r.num_requeues("w") == 0


def test_bucket_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(qps=0)
    with pytest.raises(ValueError):
        BucketRateLimiter(burst=0)


def test_fast_slow() -> None:
    r = ItemFastSlowRateLimiter(0.1, 3.0, 2)
    assert [r.when("a") for _ in range(4)] == [0.1, 0.1, 3.0, 3.0]
    assert r.num_requeues("a") == 4
    r.forget("a")
    assert r.when("a") == 0.1


def test_max_of_takes_the_longest_and_forgets_everywhere() -> None:
    clock = FakeClock()
    exp = ItemExponentialFailureRateLimiter(0.005, 1000)
    bucket = BucketRateLimiter(qps=1, burst=1, clock=clock)
    r = MaxOfRateLimiter(exp, bucket)
    assert isinstance(r, RateLimiter)
    assert r.when("a") == 0.005  # bucket has a token; exponential wins
    assert r.when("a") == pytest.approx(1.0)  # bucket in debt; bucket wins
    assert r.num_requeues("a") == 2
    r.forget("a")
    assert exp.num_requeues("a") == 0
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_defaults() -> None:
    d = default_controller_rate_limiter(clock=FakeClock())
    exp, bucket = d.limiters
    assert isinstance(exp, ItemExponentialFailureRateLimiter)
    assert (exp.base, exp.cap) == (0.005, 1000)
    assert isinstance(bucket, BucketRateLimiter)
    assert (bucket.qps, bucket.burst) == (10, 100)
    item = default_item_based_rate_limiter()
    assert (item.base, item.cap) == (0.001, 1000)


def test_rate_limiting_queue_paces_retries_with_its_clock() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    try:
        q.add_rate_limited("a")
        q.add_rate_limited("a")  # 10 ms wait; the waiting entry keeps the earlier 5 ms
        assert q.num_requeues("a") == 2
        assert len(q) == 0
        clock.step(0.005)
        assert len(q) == 1
        assert q.get(timeout=0) == ("a", False)
        q.done("a")
        q.forget("a")
        assert q.num_requeues("a") == 0
        q.add_rate_limited("a")
        clock.step(0.004)
        assert len(q) == 0
        clock.step(0.001)
        assert len(q) == 1
    finally:
        q.shut_down()
