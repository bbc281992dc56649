"""The controller: a rate-limited queue of Requests drained by N worker threads.

Follows controller-runtime's ``reconcileHandler``: an exception means a rate-limited retry (the
worker logs it with its traceback and carries on), :class:`TerminalError` means no retry,
``Result.requeue_after`` schedules a fresh attempt and resets the backoff, success forgets the
item's failure history. The queue guarantees one Request is never reconciled concurrently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import structlog

from llmscaler_runtime.clock import Clock
from llmscaler_runtime.controller.handlers import EnqueueHandler, Mapper, enqueue_for_object
from llmscaler_runtime.controller.metrics import ControllerMetricsProvider, NoopControllerMetrics
from llmscaler_runtime.controller.predicates import Obj, Predicate
from llmscaler_runtime.controller.types import Reconciler, Request, Result, TerminalError
from llmscaler_runtime.log import reconcile_context
from llmscaler_runtime.workqueue import QueueMetricsProvider, RateLimiter, RateLimitingQueue

__all__ = ["Controller", "Informer"]

_log = structlog.get_logger("llmscaler_runtime.controller")


class Informer(Protocol):
    """What a controller needs from a shared informer."""

    def add_event_handler(
        self,
        handler: Any = None,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Any], None] | None = None,
    ) -> None: ...

    def wait_for_sync(self, timeout: float | None = None) -> bool: ...


def _is_terminal(exc: BaseException) -> bool:
    """A TerminalError, or an exception raised ``from`` one (Go's ``errors.Is`` through ``%w``).

    Only explicit chaining (``__cause__``) counts: an error that merely happened while handling
    a TerminalError (``__context__``) is a new failure and is retried.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, TerminalError):
            return True
        seen.add(id(cur))
        cur = cur.__cause__
    return False


class Controller:
    """Runs a reconciler for the Requests its watches produce.

    A manager runnable: :meth:`start` waits for the watched informers to sync, then starts the
    workers; :meth:`stop` stops taking work and lets in-flight reconciles finish.
    """

    #: Only the elected leader may run controllers: two writers would fight.
    need_leader_election: bool = True

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        metrics: ControllerMetricsProvider | None = None,
        queue_metrics: QueueMetricsProvider | None = None,
        cache_sync_timeout: float = 120.0,
    ) -> None:
        if not name:
            raise ValueError("controller name must not be empty")
        if not callable(getattr(reconciler, "reconcile", None)):
            raise TypeError(f"reconciler {reconciler!r} has no reconcile(request) method")
        if max_concurrent_reconciles < 1:
            raise ValueError(
                f"max_concurrent_reconciles must be >= 1, got {max_concurrent_reconciles}"
            )
        self.name = name
        self.reconciler = reconciler
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.cache_sync_timeout = cache_sync_timeout
        self.metrics: ControllerMetricsProvider = (
            metrics if metrics is not None else NoopControllerMetrics()
        )
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(
            rate_limiter, name=name, clock=clock, metrics=queue_metrics
        )
        self._clock = self.queue.clock
        self._log = _log.bind(controller=name)
        self._lock = threading.Lock()
        self._informers: list[Informer] = []
        self._workers: list[threading.Thread] = []
        self._started = False
        self._stopping = threading.Event()

    # -- wiring -------------------------------------------------------------------------------

    def watch(
        self,
        informer: Informer,
        mapper: Mapper | None = None,
        predicates: Sequence[Predicate] = (),
    ) -> EnqueueHandler:
        """Enqueue Requests for the informer's events that pass every predicate.

        ``mapper`` defaults to the object's own namespace/name. Returns the handler (its
        ``on_generic`` lets other sources feed the same path).
        """
        handler = EnqueueHandler(
            self.name, self.queue.add, mapper or enqueue_for_object, predicates
        )
        informer.add_event_handler(
            on_add=handler.on_add, on_update=handler.on_update, on_delete=handler.on_delete
        )
        with self._lock:
            self._informers.append(informer)
        return handler

    def enqueue(self, requests: Iterable[Request]) -> None:
        """Add Requests directly (tests, external triggers)."""
        for req in requests:
            self.queue.add(req)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Wait for the watched caches to sync, then start the workers (returns at once after).

        Raises ``TimeoutError`` if a cache does not sync within ``cache_sync_timeout`` seconds:
        reconciling against a partial cache could act on objects it believes missing.
        """
        with self._lock:
            if self._started:
                raise RuntimeError(f"controller {self.name!r} was already started")
            if self._stopping.is_set():
                raise RuntimeError(f"controller {self.name!r} was stopped; create a new one")
            self._started = True
            informers = list(self._informers)
        deadline = time.monotonic() + self.cache_sync_timeout
        for informer in informers:
            if not informer.wait_for_sync(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(
                    f"controller {self.name!r}: caches did not sync within "
                    f"{self.cache_sync_timeout}s"
                )
        self.metrics.controller_started(self.name, self.max_concurrent_reconciles)
        with self._lock:
            if self._stopping.is_set():
                return
            for i in range(self.max_concurrent_reconciles):
                t = threading.Thread(
                    target=self._worker, name=f"{self.name}-worker-{i}", daemon=True
                )
                self._workers.append(t)
                t.start()
        self._log.info("controller started", workers=self.max_concurrent_reconciles)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop taking work; wait up to ``timeout`` real seconds for in-flight reconciles.

        Queued Requests that have not started are dropped (the next leader or start relists).
        Returns True when every worker finished in time.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self._stopping.set()
        drained = self.queue.shut_down_with_drain(timeout)
        with self._lock:
            workers = list(self._workers)
        for t in workers:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in workers if t.is_alive()]
        if alive or not drained:
            self._log.warning("controller stop timed out; reconciles still running", workers=alive)
            return False
        self._log.info("controller stopped")
        return True

    # -- workers ------------------------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            req, shutdown = self.queue.get()
            if shutdown or req is None:
                return
            try:
                if not self._stopping.is_set():
                    self._process(req)
            except BaseException:
                # Only a failing hook (metrics provider, log context) can get here; the
                # reconciler's own exceptions are handled in _reconcile_handler. Either way
                # the worker must live on.
                self._log.error("controller hook failed", request=str(req), exc_info=True)
            finally:
                self.queue.done(req)

    def _process(self, req: Request) -> None:
        metrics = self.metrics
        metrics.add_active_workers(self.name, 1)
        start = self._clock.monotonic()
        try:
            with reconcile_context(self.name, req.namespace, req.name):
                outcome = self._reconcile_handler(req)
        finally:
            metrics.add_active_workers(self.name, -1)
        metrics.observe_reconcile(self.name, outcome, self._clock.monotonic() - start)

    def _reconcile_handler(self, req: Request) -> str:
        """Reconcile once and queue the follow-up; returns the ``result`` metric label."""
        try:
            result = self.reconciler.reconcile(req)
            if not isinstance(result, Result):
                raise TypeError(f"reconcile() must return a Result, got {type(result).__name__}")
        except BaseException as exc:
            if _is_terminal(exc):
                # Retrying cannot help. Forgetting (controller-runtime keeps the history) only
                # drops a limiter entry that no retry would ever clear.
                self.queue.forget(req)
                self.metrics.inc_reconcile_errors(self.name)
                self.metrics.inc_terminal_reconcile_errors(self.name)
                self._log.error("terminal reconciler error; not requeued", exc_info=True)
                return "error"
            # Any exception (even SystemExit raised by a reconciler) must not kill the worker.
            self.queue.add_rate_limited(req)
            if not isinstance(exc, Exception):
                self.metrics.inc_reconcile_panics(self.name)
            self.metrics.inc_reconcile_errors(self.name)
            self._log.error(
                "reconciler error", requeues=self.queue.num_requeues(req), exc_info=True
            )
            return "error"
        if result.requeue_after:
            self.queue.forget(req)
            self.queue.add_after(req, result.requeue_after)
            return "requeue_after"
        if result.requeue:
            self.queue.add_rate_limited(req)
            return "requeue"
        self.queue.forget(req)
        return "success"
