"""What the simulated controllers get to work with: :class:`ControllerContext`.

The controllers (kubelet, ReplicaSet, Deployment, StatefulSet) used to receive the whole
``WorkloadSimulator`` and reach into its dicts, and the simulator imported them back. They
now receive this context: the storage, the simulated node's settings, the time mapping, the
work queue to re-queue keys on, the bookkeeping tables and an event recorder. It imports no
controller and no simulator core, so the dependency runs one way only (core -> controllers ->
context), and each controller's reach is what this object offers.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .util import Clock, Obj, StorageLike, meta, name_of, rfc3339, uid_of
from .workqueue import Key, WorkQueue

_log = logging.getLogger("llmscaler_runtime.envtest.simulator")


class SimTime:
    """The (possibly fake) monotonic clock, and wall-clock time derived from it: wall time
    moves with the clock, so a fake clock also moves every timestamp the controllers write."""

    def __init__(self, clock: Clock, wall_clock: Callable[[], float]) -> None:
        self.clock = clock
        self._mono0 = clock.now()
        self._wall0 = wall_clock()

    def now(self) -> float:
        return self.clock.now()

    def wall(self, mono: float) -> float:
        """Wall-clock seconds for a reading of the clock."""
        return self._wall0 + (mono - self._mono0)

    def timestamp(self, mono: float) -> str:
        return rfc3339(self.wall(mono))

    def mono_at(self, wall: float) -> float:
        """The clock reading at which wall-clock time ``wall`` is reached."""
        return self._mono0 + (wall - self._wall0)


@dataclass
class Records:
    """Per-object bookkeeping the API objects cannot carry with enough precision (their times
    have second precision), keyed by uid."""

    pod_started: dict[str, float] = field(default_factory=dict)
    terminating_since: dict[str, float] = field(default_factory=dict)
    ready_at: dict[str, float] = field(default_factory=dict)
    created: dict[str, tuple[float, int]] = field(default_factory=dict)
    #: Deployment uid -> the Progressing reason and message of the ReplicaSet just created.
    progress_reason: dict[str, tuple[str, str]] = field(default_factory=dict)
    _seq: int = 0

    def record_created(self, uid: str, wall: float) -> None:
        self._seq += 1
        self.created[uid] = (wall, self._seq)

    def forget_pod(self, uid: str) -> None:
        for table in (self.pod_started, self.terminating_since, self.ready_at, self.created):
            table.pop(uid, None)


class PodTimes(Protocol):
    """The pod times the victim order reads (``Records``; the simulator exposes them too)."""

    @property
    def ready_at(self) -> Mapping[str, float]: ...

    @property
    def created(self) -> Mapping[str, tuple[float, int]]: ...


class EventRecorder:
    """Records Normal core/v1 Events as the real controllers would."""

    def __init__(
        self, storage: StorageLike, time: SimTime, rng: random.Random, enabled: bool
    ) -> None:
        self._storage = storage
        self._time = time
        self._rng = rng
        self.enabled = enabled

    def record(self, obj: Obj, reason: str, message: str, component: str) -> None:
        """Best effort: events are for ``kubectl describe`` and humans, so a failure to write
        one never fails a sync, and event writes do not count as simulator progress."""
        if not self.enabled:
            return
        md = obj.get("metadata") or {}
        ts = self._time.timestamp(self._time.now())
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{md.get('name', '')}.{self._rng.getrandbits(64):016x}",
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
            self._storage.create(event)
        except Exception as exc:
            _log.debug("event %s for %s not recorded: %r", reason, md.get("name"), exc)


@dataclass(frozen=True)
class NodeSettings:
    """The one simulated node and its pods' timing."""

    name: str
    host_ip: str
    pod_startup_seconds: float
    termination_seconds: float


@dataclass
class ControllerContext:
    """Everything a simulated controller may use; one instance is shared by all of them."""

    storage: StorageLike
    time: SimTime
    queue: WorkQueue
    records: Records
    events: EventRecorder
    node: NodeSettings
    rng: random.Random
    #: Writes that count as progress (``run_pending`` stops when a round makes none).
    writes: int = 0

    def note_write(self) -> None:
        self.writes += 1

    def schedule_wall(self, key: Key, wall_at: float) -> None:
        """Re-sync ``key`` once wall-clock time ``wall_at`` is reached."""
        self.queue.schedule(key, self.time.mono_at(wall_at))

    def record_created(self, pod: Obj) -> None:
        self.records.record_created(uid_of(pod), self.time.wall(self.time.now()))

    def patch_status(self, api_version: str, kind: str, obj: Obj, status: Obj) -> None:
        """Merge-patch a workload's status through /status (a write that counts)."""
        self.storage.patch_merge(
            api_version,
            kind,
            meta(obj).get("namespace"),
            name_of(obj),
            {"status": status},
            subresource="status",
        )
        self.note_write()


def copy(obj: Any) -> Any:
    """Copy JSON-like data (the templates a controller stamps out)."""
    # Not kube.deep_copy, on purpose: the simulator must not import the runtime it tests.
    if isinstance(obj, dict):
        return {k: copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy(v) for v in obj]
    return obj


class Controller:
    """Base of the simulated controllers: they hold the context, nothing else."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._ctx = ctx


__all__ = [
    "Controller",
    "ControllerContext",
    "EventRecorder",
    "Key",
    "NodeSettings",
    "PodTimes",
    "Records",
    "SimTime",
    "copy",
]
