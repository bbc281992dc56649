"""Fakes for controller tests: informer, manager, recording metrics, scripted reconciler."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.controller import Request, Result


def wait_until(cond: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``cond`` until true; fail with ``what`` after ``timeout`` real seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


class FakeInformer:
    def __init__(self, synced: bool = True) -> None:
        self.synced = synced
        self.handlers: list[dict[str, Any]] = []

    def add_event_handler(
        self,
        handler: Any = None,
        *,
        on_add: Callable[[dict], None] | None = None,
        on_update: Callable[[dict, dict], None] | None = None,
        on_delete: Callable[[Any], None] | None = None,
    ) -> None:
        self.handlers.append({"add": on_add, "update": on_update, "delete": on_delete})

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.synced

    def fire_add(self, obj: dict) -> None:
        for h in self.handlers:
            h["add"](obj)

    def fire_update(self, old: dict, new: dict) -> None:
        for h in self.handlers:
            h["update"](old, new)

    def fire_delete(self, obj: Any) -> None:
        for h in self.handlers:
            h["delete"](obj)


class FakeCache:
    def __init__(self) -> None:
        self.informers: dict[tuple[str, str], FakeInformer] = {}

    def get_informer(self, api_version: str, kind: str) -> FakeInformer:
        return self.informers.setdefault((api_version, kind), FakeInformer())


class FakeManager:
    def __init__(self, metrics: Any = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.cache = FakeCache()
        self.clock = clock
        self.runnables: list[Any] = []
        self.metrics = metrics

    def add(self, runnable: Any) -> None:
        self.runnables.append(runnable)


class RecordingControllerMetrics:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.started: list[tuple[str, int]] = []
        self.active = 0
        self.max_active = 0
        self.results: list[str] = []
        self.errors = 0
        self.terminal = 0
        self.panics = 0

    def controller_started(self, controller: str, max_concurrent_reconciles: int) -> None:
        self.started.append((controller, max_concurrent_reconciles))

    def add_active_workers(self, controller: str, delta: int) -> None:
        with self.cond:
            self.active += delta
            self.max_active = max(self.max_active, self.active)

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        with self.cond:
            self.results.append(result)
            self.cond.notify_all()

    def inc_reconcile_errors(self, controller: str) -> None:
        with self.cond:
            self.errors += 1

    def inc_terminal_reconcile_errors(self, controller: str) -> None:
        with self.cond:
            self.terminal += 1

    def inc_reconcile_panics(self, controller: str) -> None:
        with self.cond:
            self.panics += 1

    def wait_results(self, n: int, timeout: float = 5.0) -> list[str]:
        """Block until ``n`` reconciles finished (their follow-up is queued by then)."""
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.results) >= n, timeout):
                raise AssertionError(f"only {len(self.results)} of {n} reconciles finished")
            return list(self.results)


class ScriptedReconciler:
    """Returns (or raises) the scripted outcomes in order, then plain success."""

    def __init__(self, *outcomes: Result | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[Request] = []
        self.lock = threading.Lock()

    def reconcile(self, request: Request) -> Result:
        with self.lock:
            self.calls.append(request)
            outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
