"""``WorkloadSimulator``: kube-controller-manager and one kubelet for the embedded API server.

Design: level-triggered controllers keyed by ``(kind, namespace, name)``. Storage listener events
only mark keys dirty (the listener runs on the storage's dispatcher thread and must stay cheap);
a timer heap re-queues keys when a pod's start-up or termination delay or a minReadySeconds window
elapses. In background mode one worker thread drains the queue; with an injected fake clock the
tests call :meth:`run_pending` instead, which resyncs every workload and drains the queue until
nothing changes, so they never sleep and never depend on event-dispatch timing.

The core owns the wiring and the driving: it builds the :class:`~.context.ControllerContext`
(storage, time, work queue, records, events) the controllers share, routes storage events to
keys and keys to controllers. The controllers import only the context, never this module.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from llmscaler_runtime.envtest.simulator.context import (
    ControllerContext,
    EventRecorder,
    NodeSettings,
    Records,
    SimTime,
    copy,
)
from llmscaler_runtime.envtest.simulator.deployment import DeploymentController
from llmscaler_runtime.envtest.simulator.pods import Kubelet
from llmscaler_runtime.envtest.simulator.replicaset import ReplicaSetController
from llmscaler_runtime.envtest.simulator.statefulset import StatefulSetController
from llmscaler_runtime.envtest.simulator.util import (
    Clock,
    MonotonicClock,
    Obj,
    StorageLike,
    controller_ref,
    name_of,
    namespace_of,
    status_code,
    uid_of,
)
from llmscaler_runtime.envtest.simulator.workqueue import Key, WorkQueue

_log = logging.getLogger("llmscaler_runtime.envtest.simulator")

_OWNER_KEY = {"ReplicaSet": "rs", "StatefulSet": "sts", "Deployment": "deploy"}
_KIND_KEY = {
    ("apps/v1", "Deployment"): "deploy",
    ("apps/v1", "ReplicaSet"): "rs",
    ("apps/v1", "StatefulSet"): "sts",
    ("v1", "Pod"): "pod",
}


class WorkloadSimulator:
    """Plays the Deployment, ReplicaSet and StatefulSet controllers and a kubelet.

    ``pod_startup_seconds`` is how long a pod stays Pending before it turns Running and Ready
    (annotation ``envtest.llmscaler.dev/startup-seconds`` overrides it per pod);
    ``termination_seconds`` caps how long a deleted pod lingers with its deletionTimestamp
    (the real kubelet waits up to the grace period, 30 s by default).
    """

    def __init__(
        self,
        storage: StorageLike,
        *,
        pod_startup_seconds: float = 2.0,
        clock: Clock | None = None,
        node_name: str = "envtest-node",
        termination_seconds: float = 1.0,
        seed: int | None = None,
        wall_clock: Callable[[], float] = time.time,
        emit_events: bool = True,
    ) -> None:
        if pod_startup_seconds < 0:
            raise ValueError(f"pod_startup_seconds must be >= 0, got {pod_startup_seconds}")
        if termination_seconds < 0:
            raise ValueError(f"termination_seconds must be >= 0, got {termination_seconds}")
        self.storage = storage
        self.clock: Clock = clock or MonotonicClock()
        self.rng = random.Random(seed)
        sim_time = SimTime(self.clock, wall_clock)
        self._queue = WorkQueue(self.clock)
        self._ctx = ControllerContext(
            storage=storage,
            time=sim_time,
            queue=self._queue,
            records=Records(),
            events=EventRecorder(storage, sim_time, self.rng, emit_events),
            node=NodeSettings(
                name=node_name,
                host_ip="172.18.0.2",
                pod_startup_seconds=float(pod_startup_seconds),
                termination_seconds=float(termination_seconds),
            ),
            rng=self.rng,
        )
        self._listening = False
        self._thread: threading.Thread | None = None
        self._kubelet = Kubelet(self._ctx)
        self._rs = ReplicaSetController(self._ctx)
        self._deploy = DeploymentController(self._ctx)
        self._sts = StatefulSetController(self._ctx)

    # -- what the tests read ----------------------------------------------------------------
    @property
    def node_name(self) -> str:
        return self._ctx.node.name

    @property
    def host_ip(self) -> str:
        return self._ctx.node.host_ip

    @property
    def pod_startup_seconds(self) -> float:
        return self._ctx.node.pod_startup_seconds

    @property
    def termination_seconds(self) -> float:
        return self._ctx.node.termination_seconds

    @property
    def emit_events(self) -> bool:
        return self._ctx.events.enabled

    @emit_events.setter
    def emit_events(self, value: bool) -> None:
        self._ctx.events.enabled = value

    @property
    def ready_at(self) -> dict[str, float]:
        """Pod uid -> wall-clock time it turned Ready (more precise than its condition)."""
        return self._ctx.records.ready_at

    @property
    def created(self) -> dict[str, tuple[float, int]]:
        """Pod uid -> (wall-clock creation time, creation sequence number)."""
        return self._ctx.records.created

    def wall(self, mono: float) -> float:
        """Wall-clock seconds for a reading of the (possibly fake) clock."""
        return self._ctx.time.wall(mono)

    def timestamp(self, mono: float) -> str:
        return self._ctx.time.timestamp(mono)

    @staticmethod
    def copy(obj: Any) -> Any:
        return copy(obj)

    def next_timer(self) -> float | None:
        """When the earliest pending timer fires (clock seconds), for tests and the worker."""
        return self._queue.next_timer()

    # -- events --------------------------------------------------------------------------
    def _on_event(self, event_type: str, obj: Obj) -> None:
        kind_key = _KIND_KEY.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
        if kind_key is None:
            return
        ns, name = namespace_of(obj), name_of(obj)
        if kind_key == "pod":
            if event_type == "DELETED":
                self._ctx.records.forget_pod(uid_of(obj))
            else:
                self._queue.enqueue(("pod", ns, name))
        else:
            self._queue.enqueue((kind_key, ns, name))
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") in _OWNER_KEY:
            self._queue.enqueue((_OWNER_KEY[str(ref["kind"])], ns, str(ref.get("name", ""))))
        if kind_key == "deploy" and event_type == "DELETED":
            self._ctx.records.progress_reason.pop(uid_of(obj), None)

    def _enqueue_all(self) -> None:
        for api_version, kind, key_kind in (
            ("v1", "Pod", "pod"),
            ("apps/v1", "ReplicaSet", "rs"),
            ("apps/v1", "StatefulSet", "sts"),
            ("apps/v1", "Deployment", "deploy"),
        ):
            try:
                items, _ = self.storage.list(api_version, kind)
            except Exception as exc:  # e.g. a storage that does not serve StatefulSets
                if status_code(exc) is None:
                    raise
                continue
            for obj in items:
                self._queue.enqueue((key_kind, namespace_of(obj), name_of(obj)))

    def _process(self, key: Key) -> None:
        kind, ns, name = key
        try:
            if kind == "pod":
                self._kubelet.sync(ns, name)
            elif kind == "rs":
                self._rs.sync(ns, name)
            elif kind == "deploy":
                self._deploy.sync(ns, name)
            elif kind == "sts":
                self._sts.sync(ns, name)
        except Exception as exc:
            code = status_code(exc)
            # Conflicts and races with user writes are normal: retry shortly, like a workqueue.
            delay = 0.05 if code in (404, 409) else 0.5
            if code not in (404, 409):
                _log.warning("simulator sync of %s failed: %r", key, exc)
            self._queue.schedule(key, self.clock.now() + delay)

    # -- public driving API ----------------------------------------------------------------
    def start(self, *, background: bool = True) -> None:
        """Subscribe to storage events; with ``background`` also start the worker thread.

        Unit tests with a fake clock pass ``background=False`` and drive :meth:`run_pending`.
        """
        if not self._listening:
            self.storage.add_listener(self._on_event)
            self._listening = True
        if background and self._thread is None:
            self._queue.resume()
            self._enqueue_all()
            self._thread = threading.Thread(
                target=self._run, name="envtest-workload-simulator", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker thread (the listener stays registered but only queues keys)."""
        self._queue.halt()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def run_pending(self, max_rounds: int = 100) -> int:
        """Synchronously resync everything and fire due timers until a fixpoint; returns writes.

        Meant for fake-clock tests: advance the clock, call this, assert on storage.
        """
        ctx, queue = self._ctx, self._queue
        total = 0
        for _ in range(max_rounds):
            before = ctx.writes
            self._enqueue_all()
            queue.release_due()
            while (key := queue.pop()) is not None:
                self._process(key)
                queue.release_due()
            if ctx.writes == before:
                return total
            total += ctx.writes - before
        raise RuntimeError(f"simulator did not settle after {max_rounds} rounds")

    def step(self, seconds: float) -> int:
        """Advance an injected fake clock (``step(seconds)`` method) and :meth:`run_pending`."""
        advance = getattr(self.clock, "step", None)
        if not callable(advance):
            raise TypeError("step() needs an injected fake clock with a step(seconds) method")
        if seconds < 0:
            raise ValueError(f"cannot step the clock backwards ({seconds} s)")
        advance(seconds)
        return self.run_pending()

    def _run(self) -> None:
        resync_every = 30.0
        last_resync = time.monotonic()
        queue = self._queue
        while True:
            if not queue.wait(resync_every, last_resync):
                return
            if time.monotonic() - last_resync >= resync_every:
                last_resync = time.monotonic()
                try:
                    self._enqueue_all()
                except Exception as exc:
                    _log.warning("simulator resync failed: %r", exc)
            queue.release_due()
            while not queue.stopping and (key := queue.pop()) is not None:
                self._process(key)
                queue.release_due()
