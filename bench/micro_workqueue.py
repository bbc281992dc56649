"""Micro-benchmark: add/get/done cycles per second of the workqueue on one thread.

A controller's per-event framework overhead is dominated by these three locked operations, so
this figure bounds how many events per second one process can route to reconcilers.
Run: ``.venv/bin/python bench/micro_workqueue.py [--cycles N] [--keys K]``.
"""

from __future__ import annotations

import argparse
import time

from llmscaler_runtime.workqueue import Queue, RateLimitingQueue


def measure(queue: Queue[str], cycles: int, keys: int) -> float:
    """Cycles per second; ``keys`` distinct items are cycled so dedup does not short-cut work."""
    names = [f"ns/obj-{i}" for i in range(keys)]
    start = time.perf_counter()
    for i in range(cycles):
        item = names[i % keys]
        queue.add(item)
        got, _ = queue.get()
        assert got == item
        queue.done(item)
    return cycles / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    args = parser.parse_args()
    plain: Queue[str] = Queue(name="bench")
    rate_limited: RateLimitingQueue[str] = RateLimitingQueue(name="bench-rl")
    try:
        measure(plain, 10_000, args.keys)  # warm-up
        q1 = measure(plain, args.cycles, args.keys)
        q2 = measure(rate_limited, args.cycles, args.keys)
    finally:
        plain.shut_down()
        rate_limited.shut_down()
    print(f"Queue:             {q1:,.0f} add/get/done cycles per second")
    print(f"RateLimitingQueue: {q2:,.0f} add/get/done cycles per second")


if __name__ == "__main__":
    main()
