"""Embedded API server watch fan-out: one write reaching 100 watchers.

The server runs in its own process (bench.apiserver); 100 watch streams on ConfigMaps are read
by 100 threads here. Each round creates one ConfigMap and waits (deadline-bounded) until every
watcher has seen it; per-watcher latency = receipt - just before the create call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench import harness as h
from llmscaler_runtime.kube import Client, load_config

WATCHERS = 100
CLIENTS = 10  # each Client has its own connection pool


@pytest.fixture(scope="module")
def cluster() -> Iterator[h.Cluster]:
    with h.scratch() as wd, h.Cluster(wd) as c:
        yield c


def test_watch_fanout(benchmark: Any, cluster: h.Cluster) -> None:
    client = cluster.client
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fanout"}})
    _, rv = client.list_all("v1", "ConfigMap", "fanout")
    clients = [Client(load_config(cluster.kubeconfig)) for _ in range(CLIENTS)]
    cond = threading.Condition()
    seen: dict[str, list[float]] = {}
    streams = [
        clients[i % CLIENTS].watch("v1", "ConfigMap", "fanout", resource_version=rv)
        for i in range(WATCHERS)
    ]

    def read(stream: Any) -> None:
        try:
            for ev in stream:
                t = time.perf_counter()
                name = (ev.get("object") or {}).get("metadata", {}).get("name", "")
                with cond:
                    seen.setdefault(name, []).append(t)
                    cond.notify_all()
        except Exception:  # closed at teardown
            return

    threads = [threading.Thread(target=read, args=(s,), daemon=True) for s in streams]
    for t in threads:
        t.start()
    latencies: list[float] = []
    counter = iter(range(10**6))

    def one_write() -> None:
        name = f"cm-{next(counter)}"
        t0 = time.perf_counter()
        client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "fanout"},
            }
        )
        deadline = time.monotonic() + 10
        with cond:
            while len(seen.get(name, ())) < WATCHERS:
                left = deadline - time.monotonic()
                assert left > 0, f"only {len(seen.get(name, ()))} of {WATCHERS} watchers got it"
                cond.wait(left)
            latencies.extend(t - t0 for t in seen[name])

    try:
        benchmark.pedantic(one_write, rounds=20, iterations=1, warmup_rounds=2)
    finally:
        for s in streams:
            s.close()
        for c in clients:
            c.close()
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p99 = h.percentile(latencies, 99)
    benchmark.extra_info.update({"watchers": WATCHERS, "p50_s": p50, "p99_s": p99})
    benchmark.extra_info["figure"] = (
        f"write -> {WATCHERS} watchers: p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms"
    )
