"""Workqueue add/get/done cycles per second (wraps bench/micro_workqueue.py's loop)."""

from __future__ import annotations

from typing import Any

from bench.micro.objects import mean_seconds
from bench.micro_workqueue import measure
from llmscaler_runtime.workqueue import Queue, RateLimitingQueue

CYCLES = 20_000
KEYS = 1_000


def _run(benchmark: Any, queue: Queue[str]) -> None:
    try:
        measure(queue, 2_000, KEYS)  # warm-up
        benchmark.pedantic(measure, args=(queue, CYCLES, KEYS), rounds=5, iterations=1)
    finally:
        queue.shut_down()
    mean = mean_seconds(benchmark)
    if mean is not None:
        rate = CYCLES / mean
        benchmark.extra_info["cycles_per_s"] = rate
        benchmark.extra_info["figure"] = f"{rate:,.0f} add/get/done cycles/s"
        assert rate > 1_000  # a broken queue (lock contention, O(n) get) shows up as a collapse


def test_queue_cycles(benchmark: Any) -> None:
    _run(benchmark, Queue(name="bench"))


def test_rate_limiting_queue_cycles(benchmark: Any) -> None:
    _run(benchmark, RateLimitingQueue(name="bench-rl"))
