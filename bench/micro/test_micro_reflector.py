"""Watch events a Reflector applies to its Store per second (transform included).

The lister-watcher is scripted: a list, then one watch stream of pre-built MODIFIED events that
stops the reflector when it runs dry, so the figure is the reflector + store cost alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench.micro.objects import make_object, mean_seconds
from llmscaler_runtime.cache import Reflector, Store
from llmscaler_runtime.cache.transform import strip_managed_fields

OBJECTS = 1_000
EVENTS = 20_000


class _Stream:
    def __init__(self, events: list[dict[str, Any]], on_end: Any) -> None:
        self._events = events
        self._on_end = on_end

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self._events
        self._on_end()

    def close(self) -> None:
        return None


class _Scripted:
    def __init__(self) -> None:
        self.items = [make_object(i) for i in range(OBJECTS)]
        self.events = []
        for k in range(EVENTS):
            obj = make_object(k % OBJECTS)
            obj["metadata"]["resourceVersion"] = str(OBJECTS + k + 1)
            self.events.append({"type": "MODIFIED", "object": obj})
        self.reflector: Reflector | None = None

    def list(self, *_: Any, **__: Any) -> dict[str, Any]:
        return {"items": self.items, "metadata": {"resourceVersion": str(OBJECTS)}}

    def watch(self, *_: Any, **__: Any) -> _Stream:
        assert self.reflector is not None
        return _Stream(self.events, self.reflector.stop)


def test_reflector_events_applied(benchmark: Any) -> None:
    script = _Scripted()

    def one_round() -> Store:
        store = Store()
        script.reflector = Reflector(
            script, "apps/v1", "Deployment", store, transform=strip_managed_fields
        )
        script.reflector.run()
        return store

    store = benchmark.pedantic(one_round, rounds=5, iterations=1)
    assert len(store) == OBJECTS
    last = max(k for k in range(EVENTS) if k % OBJECTS == 0)  # the last event for obj-00000
    first = store.get("ns-000/obj-00000")
    assert first is not None
    assert first["metadata"]["resourceVersion"] == str(OBJECTS + last + 1)
    assert "managedFields" not in first["metadata"]
    mean = mean_seconds(benchmark)
    if mean is not None:
        rate = EVENTS / mean
        benchmark.extra_info["events_per_s"] = rate
        benchmark.extra_info["figure"] = f"{rate:,.0f} events/s (list of {OBJECTS:,} included)"
