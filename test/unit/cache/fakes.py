"""A scripted stand-in for Client.list/Client.watch, and a fake clock/sleep."""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

from llmscaler_runtime.testkit import FakeClock


def obj(name: str, rv: str, ns: str | None = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def page(items: list[dict[str, Any]], rv: str, cont: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {"kind": "ConfigMapList", "metadata": meta, "items": items}


def ev(type_: str, o: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "object": o}


def bookmark(rv: str) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {"kind": "ConfigMap", "metadata": {"resourceVersion": rv}},
    }


class FakeStream:
    """Yields queued items; an exception item is raised. ``live`` streams wait for more."""

    def __init__(self, items: list[Any], *, live: bool = False) -> None:
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for item in items:
            self.queue.put(item)
        self.live = live
        self.closed = threading.Event()

    def push(self, item: Any) -> None:
        self.queue.put(item)

    def __iter__(self) -> Iterator[Any]:
        while not self.closed.is_set():
            try:
                item = self.queue.get(timeout=0.02 if self.live else 0)
            except queue.Empty:
                if self.live:
                    continue
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self.closed.set()


class FakeApi:
    """Scripted list/watch answers, consumed in order; records every call.

    When a script runs out: ``on_exhausted`` is called (tests pass reflector.stop) and a list
    raises / a watch returns an empty stream; with ``live_at_end`` the last watch answer is a
    live stream that tests can push to.
    """

    def __init__(self) -> None:
        self.lists: list[Any] = []
        self.watches: list[Any] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.on_exhausted: Callable[[], None] = lambda: None
        self.live_at_end = False
        self.live_streams: list[FakeStream] = []
        self.watch_opened = threading.Event()
        self._lock = threading.Lock()

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        with self._lock:
            self.calls.append(("list", {"namespace": namespace, **kw}))
            answer = self.lists.pop(0) if self.lists else None
        if answer is None:
            self.on_exhausted()
            raise RuntimeError("list script exhausted")
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def watch(
        self, api_version: str, kind: str, namespace: str | None = None, **kw: Any
    ) -> FakeStream:
        with self._lock:
            self.calls.append(("watch", {"namespace": namespace, **kw}))
            answer = self.watches.pop(0) if self.watches else None
        self.watch_opened.set()
        if answer is None:
            if self.live_at_end:
                stream = FakeStream([], live=True)
                self.live_streams.append(stream)
                return stream
            self.on_exhausted()
            return FakeStream([])
        if isinstance(answer, BaseException):
            raise answer
        return FakeStream(answer)

    def call_kinds(self) -> list[str]:
        return [c[0] for c in self.calls]

    def watch_rvs(self) -> list[str | None]:
        return [kw.get("resource_version") for c, kw in self.calls if c == "watch"]


class FixedRandom(random.Random):
    """random() always returns ``value``: exact backoff/jitter and watch timeouts."""

    def __init__(self, value: float = 0.0) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


class FakeTime:
    """The test kit's fake clock plus a ``sleep`` that records the delay and moves the clock."""

    def __init__(self) -> None:
        self.clock = FakeClock(1000.0)
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.clock.step(seconds)


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``cond`` until true or fail after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.005)
