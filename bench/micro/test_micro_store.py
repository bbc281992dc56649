"""Store reads as the reconcilers do them: get by key, list by the namespace index."""

from __future__ import annotations

from typing import Any

from bench.micro.objects import make_object, mean_seconds
from llmscaler_runtime.cache import NAMESPACE_INDEX, Store

OBJECTS = 10_000
NAMESPACES = 100


def _store() -> Store:
    store = Store()
    for i in range(OBJECTS):
        store.add(make_object(i, NAMESPACES))
    return store


def test_store_get(benchmark: Any) -> None:
    store = _store()
    keys = [f"ns-{i % NAMESPACES:03d}/obj-{i:05d}" for i in range(0, OBJECTS, 10)]

    def lookups() -> int:
        return sum(1 for k in keys if store.get(k) is not None)

    found = benchmark(lookups)
    assert found == len(keys)
    mean = mean_seconds(benchmark)
    if mean is not None:
        rate = len(keys) / mean
        benchmark.extra_info["figure"] = f"{rate:,.0f} get/s over {OBJECTS:,} objects"


def test_store_by_namespace_index(benchmark: Any) -> None:
    store = _store()
    namespaces = [f"ns-{i:03d}" for i in range(NAMESPACES)]

    def lookups() -> int:
        return sum(len(store.by_index(NAMESPACE_INDEX, ns)) for ns in namespaces)

    total = benchmark(lookups)
    assert total == OBJECTS
    mean = mean_seconds(benchmark)
    if mean is not None:
        rate = NAMESPACES / mean
        per = OBJECTS // NAMESPACES
        benchmark.extra_info["figure"] = f"{rate:,.0f} by_index/s ({per} objects each)"
