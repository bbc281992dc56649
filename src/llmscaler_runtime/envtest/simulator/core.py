"""``WorkloadSimulator``: kube-controller-manager and one kubelet for the embedded API server.

Design: level-triggered controllers keyed by ``(kind, namespace, name)``. Storage listener events
only mark keys dirty (the listener runs on the storage's dispatcher thread and must stay cheap);
a timer heap re-queues keys when a pod's start-up or termination delay or a minReadySeconds window
elapses. In background mode one worker thread drains the queue; with an injected fake clock the
tests call :meth:`run_pending` instead, which resyncs every workload and drains the queue until
nothing changes, so they never sleep and never depend on event-dispatch timing.
"""

from __future__ import annotations

import heapq
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

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
    rfc3339,
    status_code,
    uid_of,
)

Key = tuple[str, str | None, str]

_log = logging.getLogger("llmscaler_runtime.envtest.simulator")

_OWNER_KEY = {"ReplicaSet": "rs", "StatefulSet": "sts", "Deployment": "deploy"}
_KIND_KEY = {
    ("apps/v1", "Deployment"): "deploy",
    ("apps/v1", "ReplicaSet"): "rs",
    ("apps/v1", "StatefulSet"): "sts",
    ("v1", "Pod"): "pod",
}


def _copy(obj: Any) -> Any:
    # Not kube.deep_copy, on purpose: the simulator must not import the runtime it tests.
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


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
        self.pod_startup_seconds = float(pod_startup_seconds)
        self.termination_seconds = float(termination_seconds)
        self.node_name = node_name
        self.emit_events = emit_events
        self.host_ip = "172.18.0.2"
        self.rng = random.Random(seed)
        self._mono0 = self.clock.now()
        self._wall0 = wall_clock()
        # Per-pod bookkeeping the API objects cannot carry with enough precision.
        self.pod_started: dict[str, float] = {}
        self.terminating_since: dict[str, float] = {}
        self.ready_at: dict[str, float] = {}
        self.created: dict[str, tuple[float, int]] = {}
        self.progress_reason: dict[str, tuple[str, str]] = {}
        self._seq = 0
        self._writes = 0
        self._cond = threading.Condition()
        self._queue: list[Key] = []
        self._dirty: set[Key] = set()
        self._timers: list[tuple[float, int, Key]] = []
        self._timer_seq = 0
        self._listening = False
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._kubelet = Kubelet(self)
        self._rs = ReplicaSetController(self)
        self._deploy = DeploymentController(self)
        self._sts = StatefulSetController(self)

    # -- time -----------------------------------------------------------------------------------
    def wall(self, mono: float) -> float:
        """Wall-clock seconds for a reading of the (possibly fake) clock."""
        return self._wall0 + (mono - self._mono0)

    def timestamp(self, mono: float) -> str:
        return rfc3339(self.wall(mono))

    @staticmethod
    def copy(obj: Any) -> Any:
        return _copy(obj)

    # -- bookkeeping used by the controllers ------------------------------------------------------
    def note_write(self) -> None:
        self._writes += 1

    def record_created(self, pod: Obj) -> None:
        self._seq += 1
        self.created[uid_of(pod)] = (self.wall(self.clock.now()), self._seq)

    def event(self, obj: Obj, reason: str, message: str, component: str) -> None:
        """Record a Normal core/v1 Event about ``obj`` as the real controller would.

        Best effort: events are for ``kubectl describe`` and humans, so a failure to write one
        never fails a sync, and event writes do not count towards :meth:`run_pending` progress.
        """
        if not self.emit_events:
            return
        md = obj.get("metadata") or {}
        ts = self.timestamp(self.clock.now())
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{md.get('name', '')}.{self.rng.getrandbits(64):016x}",
                "namespace": md.get("namespace") or "default",
            },
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": md.get("name", ""),
                "namespace": md.get("namespace"),
                "uid": md.get("uid", ""),
                "resourceVersion": md.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "",
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
        }
        try:
            self.storage.create(event)
        except Exception as exc:
            _log.debug("event %s for %s not recorded: %r", reason, md.get("name"), exc)

    def forget_pod(self, uid: str) -> None:
        for table in (self.pod_started, self.terminating_since, self.ready_at, self.created):
            table.pop(uid, None)

    # -- queue and timers ------------------------------------------------------------------------
    def enqueue(self, key: Key) -> None:
        with self._cond:
            if key in self._dirty:
                return
            self._dirty.add(key)
            self._queue.append(key)
            self._cond.notify()

    def schedule(self, key: Key, at: float) -> None:
        """Re-sync ``key`` once the clock reaches ``at`` (monotonic seconds)."""
        with self._cond:
            self._timer_seq += 1
            heapq.heappush(self._timers, (at, self._timer_seq, key))
            self._cond.notify()

    def schedule_wall(self, key: Key, wall_at: float) -> None:
        self.schedule(key, self._mono0 + (wall_at - self._wall0))

    def next_timer(self) -> float | None:
        """When the earliest pending timer fires (clock seconds), for tests and the worker."""
        with self._cond:
            return self._timers[0][0] if self._timers else None

    def _release_due(self) -> None:
        now = self.clock.now()
        with self._cond:
            while self._timers and self._timers[0][0] <= now:
                _, _, key = heapq.heappop(self._timers)
                if key not in self._dirty:
                    self._dirty.add(key)
                    self._queue.append(key)

    def _pop(self) -> Key | None:
        with self._cond:
            if not self._queue:
                return None
            key = self._queue.pop(0)
            self._dirty.discard(key)
            return key

    # -- events --------------------------------------------------------------------------
    def _on_event(self, event_type: str, obj: Obj) -> None:
        kind_key = _KIND_KEY.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
        if kind_key is None:
            return
        ns, name = namespace_of(obj), name_of(obj)
        if kind_key == "pod":
            if event_type == "DELETED":
                self.forget_pod(uid_of(obj))
            else:
                self.enqueue(("pod", ns, name))
        else:
            self.enqueue((kind_key, ns, name))
        ref = controller_ref(obj)
        if ref is not None and ref.get("kind") in _OWNER_KEY:
            self.enqueue((_OWNER_KEY[str(ref["kind"])], ns, str(ref.get("name", ""))))
        if kind_key == "deploy" and event_type == "DELETED":
            self.progress_reason.pop(uid_of(obj), None)

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
                self.enqueue((key_kind, namespace_of(obj), name_of(obj)))

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
            self.schedule(key, self.clock.now() + delay)

    # -- public driving API ----------------------------------------------------------------
    def start(self, *, background: bool = True) -> None:
        """Subscribe to storage events; with ``background`` also start the worker thread.

        Unit tests with a fake clock pass ``background=False`` and drive :meth:`run_pending`.
        """
        if not self._listening:
            self.storage.add_listener(self._on_event)
            self._listening = True
        if background and self._thread is None:
            self._stopping = False
            self._enqueue_all()
            self._thread = threading.Thread(
                target=self._run, name="envtest-workload-simulator", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker thread (the listener stays registered but only queues keys)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def run_pending(self, max_rounds: int = 100) -> int:
        """Synchronously resync everything and fire due timers until a fixpoint; returns writes.

        Meant for fake-clock tests: advance the clock, call this, assert on storage.
        """
        total = 0
        for _ in range(max_rounds):
            before = self._writes
            self._enqueue_all()
            self._release_due()
            while (key := self._pop()) is not None:
                self._process(key)
                self._release_due()
            if self._writes == before:
                return total
            total += self._writes - before
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
        while True:
            with self._cond:
                while not self._stopping and not self._queue:
                    now = self.clock.now()
                    if self._timers and self._timers[0][0] <= now:
                        break
                    wait = resync_every
                    if self._timers:
                        wait = min(wait, max(self._timers[0][0] - now, 0.001))
                    self._cond.wait(wait)
                    if time.monotonic() - last_resync >= resync_every:
                        break
                if self._stopping:
                    return
            if time.monotonic() - last_resync >= resync_every:
                last_resync = time.monotonic()
                try:
                    self._enqueue_all()
                except Exception as exc:
                    _log.warning("simulator resync failed: %r", exc)
            self._release_due()
            while not self._stopping and (key := self._pop()) is not None:
                self._process(key)
                self._release_due()
