"""Controller semantics: follow-up per outcome, concurrency, panic survival, stop/drain."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from llmscaler_runtime.controller import Controller, Request, Result, TerminalError
from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.workqueue import ItemExponentialFailureRateLimiter
from test.unit.controller.fakes import (
    FakeInformer,
    RecordingControllerMetrics,
    ScriptedReconciler,
    wait_until,
)

REQ = Request("ns", "a")


class Harness:
    def __init__(self, reconciler: Any, workers: int = 1) -> None:
        self.clock = FakeClock()
        self.metrics = RecordingControllerMetrics()
        self.reconciler = reconciler
        self.controller = Controller(
            "test",
            reconciler,
            max_concurrent_reconciles=workers,
            rate_limiter=ItemExponentialFailureRateLimiter(0.005, 1000),
            clock=self.clock,
            metrics=self.metrics,
        )
        self.q = self.controller.queue


@pytest.fixture
def harness_factory() -> Iterator[Any]:
    made: list[Harness] = []

    def make(reconciler: Any, workers: int = 1) -> Harness:
        h = Harness(reconciler, workers)
        made.append(h)
        return h

    yield make
    for h in made:
        h.controller.stop(timeout=5)


def test_success_forgets_and_does_not_requeue(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler(Result()))
    h.q.rate_limiter.when(REQ)  # a past failure the success must forget
    h.controller.start()
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(1) == ["success"]
    assert h.q.num_requeues(REQ) == 0
    assert len(h.q) == 0 and h.q.num_waiting() == 0


def test_exception_requeues_rate_limited_and_worker_survives(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler(RuntimeError("boom"), RuntimeError("boom"), Result()))
    h.controller.start()
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(1) == ["error"]
    assert h.q.num_requeues(REQ) == 1 and h.q.num_waiting() == 1
    h.clock.step(0.004)
    assert len(h.q) == 0, "backoff is 5 ms"
    h.clock.step(0.001)
    assert h.metrics.wait_results(2) == ["error", "error"]
    assert h.q.num_requeues(REQ) == 2
    h.clock.step(0.010)  # second backoff: 10 ms
    assert h.metrics.wait_results(3) == ["error", "error", "success"]
    assert h.q.num_requeues(REQ) == 0
    assert h.metrics.errors == 2 and h.metrics.terminal == 0 and h.metrics.panics == 0
    assert h.reconciler.calls == [REQ, REQ, REQ]


def test_base_exceptions_do_not_kill_the_worker(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler(SystemExit(3), Result()))
    h.controller.start()
    h.controller.enqueue([REQ])
    h.metrics.wait_results(1)
    h.controller.enqueue([Request("ns", "b")])
    assert h.metrics.wait_results(2) == ["error", "success"]
    assert h.metrics.panics == 1 and h.metrics.errors == 1


def test_terminal_error_is_not_requeued(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler(TerminalError("bad spec")))
    h.controller.start()
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(1) == ["error"]
    assert h.metrics.errors == 1 and h.metrics.terminal == 1
    assert h.q.num_requeues(REQ) == 0
    h.clock.step(2000)
    assert len(h.q) == 0 and h.q.num_waiting() == 0
    assert h.reconciler.calls == [REQ]


def _wrapped_terminal() -> RuntimeError:
    try:
        raise TerminalError("bad spec")
    except TerminalError as inner:
        err = RuntimeError("applying the spec failed")
        err.__cause__ = inner
        return err


def _terminal_in_context() -> RuntimeError:
    try:
        raise TerminalError("bad spec")
    except TerminalError:
        try:
            raise RuntimeError("cleanup failed")
        except RuntimeError as err:
            return err  # __context__ is the TerminalError, __cause__ is None


def test_error_raised_from_a_terminal_error_is_terminal(harness_factory: Any) -> None:
    # errors.Is(err, TerminalError) in Go follows %w wrapping; ``raise X from TerminalError``
    # is the Python equivalent. An error merely raised while handling one is retried.
    h = harness_factory(ScriptedReconciler(_wrapped_terminal(), _terminal_in_context()))
    h.controller.start()
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(1) == ["error"]
    assert h.metrics.terminal == 1 and h.q.num_waiting() == 0
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(2) == ["error", "error"]
    assert h.metrics.terminal == 1 and h.metrics.errors == 2
    assert h.q.num_requeues(REQ) == 1 and h.q.num_waiting() == 1


def test_requeue_after_resets_backoff_and_schedules_exactly(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler(RuntimeError("x"), Result(requeue_after=30)))
    h.controller.start()
    h.controller.enqueue([REQ])
    h.metrics.wait_results(1)
    h.clock.step(0.005)
    assert h.metrics.wait_results(2) == ["error", "requeue_after"]
    assert h.q.num_requeues(REQ) == 0, "requeue_after forgets the failure history"
    h.clock.step(29.999)
    assert len(h.q) == 0
    h.clock.step(0.001)
    assert h.metrics.wait_results(3)[-1] == "success"


def test_requeue_true_goes_through_the_rate_limiter(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler(Result(requeue=True), Result(requeue=True)))
    h.controller.start()
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(1) == ["requeue"]
    assert h.q.num_requeues(REQ) == 1
    h.clock.step(0.005)
    assert h.metrics.wait_results(2) == ["requeue", "requeue"]
    h.clock.step(0.009)
    assert len(h.q) == 0
    h.clock.step(0.001)
    assert h.metrics.wait_results(3)[-1] == "success"


def test_non_result_return_is_an_error(harness_factory: Any) -> None:
    class ReturnsNone:
        def reconcile(self, request: Request) -> Result:
            return None  # type: ignore[return-value]

    h = harness_factory(ReturnsNone())
    h.controller.start()
    h.controller.enqueue([REQ])
    assert h.metrics.wait_results(1) == ["error"]
    assert h.q.num_requeues(REQ) == 1


class Blocking:
    """Blocks every reconcile until released; records concurrency."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.running: set[Request] = set()
        self.max_running = 0
        self.overlap: list[Request] = []
        self.calls: list[Request] = []

    def reconcile(self, request: Request) -> Result:
        with self.lock:
            if request in self.running:
                self.overlap.append(request)
            self.running.add(request)
            self.calls.append(request)
            self.max_running = max(self.max_running, len(self.running))
        self.release.wait(10)
        with self.lock:
            self.running.discard(request)
        return Result()


def test_concurrency_limit_is_honoured(harness_factory: Any) -> None:
    r = Blocking()
    h = harness_factory(r, workers=3)
    h.controller.start()
    h.controller.enqueue(Request("ns", f"o{i}") for i in range(10))
    wait_until(lambda: len(r.running) == 3, what="three reconciles in flight")
    assert len(h.q) == 7, "the other requests wait in the queue"
    r.release.set()
    h.metrics.wait_results(10)
    assert r.max_running == 3 and h.metrics.max_active == 3
    assert h.metrics.started == [("test", 3)]


def test_same_request_is_never_reconciled_concurrently(harness_factory: Any) -> None:
    r = Blocking()
    h = harness_factory(r, workers=4)
    h.controller.start()
    h.controller.enqueue([REQ])
    wait_until(lambda: REQ in r.running, what="first reconcile")
    h.controller.enqueue([REQ, REQ, REQ])
    assert len(h.q) == 0, "parked until the running reconcile is done"
    r.release.set()
    assert h.metrics.wait_results(2) == ["success", "success"]
    assert r.overlap == [] and r.calls == [REQ, REQ]


def test_stop_drains_in_flight_and_drops_queued(harness_factory: Any) -> None:
    r = Blocking()
    h = harness_factory(r, workers=1)
    h.controller.start()
    h.controller.enqueue([Request("ns", "a"), Request("ns", "b")])
    wait_until(lambda: len(r.running) == 1, what="reconcile in flight")
    result: list[bool] = []
    stopper = threading.Thread(target=lambda: result.append(h.controller.stop(timeout=10)))
    stopper.start()
    wait_until(h.q.shutting_down, what="queue shut down")
    assert stopper.is_alive(), "stop must wait for the in-flight reconcile"
    r.release.set()
    stopper.join(10)
    assert result == [True]
    assert r.calls == [Request("ns", "a")], "queued work is not started after stop"
    assert h.metrics.results == ["success"]


def test_stop_gives_up_at_the_deadline(harness_factory: Any) -> None:
    r = Blocking()
    h = harness_factory(r)
    h.controller.start()
    h.controller.enqueue([REQ])
    wait_until(lambda: len(r.running) == 1, what="reconcile in flight")
    assert h.controller.stop(timeout=0.05) is False
    r.release.set()


def test_start_twice_and_after_stop_fail(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler())
    h.controller.start()
    with pytest.raises(RuntimeError, match="already started"):
        h.controller.start()
    h2 = harness_factory(ScriptedReconciler())
    h2.controller.stop(timeout=1)
    with pytest.raises(RuntimeError, match="stopped"):
        h2.controller.start()


def test_start_waits_for_cache_sync_and_fails_clearly() -> None:
    c = Controller("sync", ScriptedReconciler(), cache_sync_timeout=0.01)
    try:
        c.watch(FakeInformer(synced=False))
        with pytest.raises(TimeoutError, match="did not sync"):
            c.start()
    finally:
        c.stop(timeout=1)


def test_watch_enqueues_informer_events(harness_factory: Any) -> None:
    h = harness_factory(ScriptedReconciler())
    informer = FakeInformer()
    h.controller.watch(informer)
    informer.fire_add({"metadata": {"namespace": "ns", "name": "a"}})
    informer.fire_add({"metadata": {"namespace": "ns", "name": "a"}})
    assert len(h.q) == 1
    h.controller.start()
    assert h.metrics.wait_results(1) == ["success"]
    assert h.reconciler.calls == [REQ]


def test_constructor_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        Controller("", ScriptedReconciler())
    with pytest.raises(ValueError):
        Controller("x", ScriptedReconciler(), max_concurrent_reconciles=0)
    with pytest.raises(TypeError):
        Controller("x", object())  # type: ignore[arg-type]


def test_reconcile_logs_carry_request_context_and_errors_carry_traceback(
    harness_factory: Any,
) -> None:
    seen: list[Any] = []

    class Logs:
        def reconcile(self, request: Request) -> Result:
            structlog.get_logger("t").info("inside")
            raise ValueError("kaput")

    h = harness_factory(Logs())
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        h.controller.start()
        h.controller.enqueue([REQ])
        h.metrics.wait_results(1)
        seen = list(logs)
    inside = next(e for e in seen if e["event"] == "inside")
    assert (inside["controller"], inside["namespace"], inside["name"]) == ("test", "ns", "a")
    assert inside["reconcile_id"], "bound by log.reconcile_context, with a fresh reconcile id"
    err = next(e for e in seen if e["event"] == "reconciler error")
    assert err["log_level"] == "error" and err["exc_info"] is True
    assert err["controller"] == "test"


def test_a_failing_metrics_hook_does_not_kill_the_worker() -> None:
    class FlakyMetrics(RecordingControllerMetrics):
        def __init__(self) -> None:
            super().__init__()
            self.fail_next = True

        def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
            if self.fail_next:
                self.fail_next = False
                raise ValueError("metrics backend broke")
            super().observe_reconcile(controller, result, seconds)

    metrics = FlakyMetrics()
    r = ScriptedReconciler()
    c = Controller("flaky", r, metrics=metrics, clock=FakeClock())
    try:
        c.start()
        c.enqueue([Request("ns", "a")])
        wait_until(lambda: len(r.calls) == 1, what="first reconcile")
        c.enqueue([Request("ns", "b")])
        assert metrics.wait_results(1) == ["success"]
        assert r.calls == [Request("ns", "a"), Request("ns", "b")]
    finally:
        c.stop(timeout=5)
