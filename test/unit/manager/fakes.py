"""In-memory fakes for manager tests: a Lease/Event API with resourceVersion conflicts, a cache
and runnables. They implement only the contract methods the manager calls. (The fake clock is
the test kit's :class:`~llmscaler_runtime.testkit.FakeClock`.)"""

from __future__ import annotations

import copy
import threading
from typing import Any

from llmscaler_runtime.kube.errors import AlreadyExists, Conflict, NotFound, ServiceUnavailable


class FakeApiStore:
    """Objects keyed by (kind, namespace, name), with resourceVersion checked on update."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.rv = 0
        self.lock = threading.Lock()
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name)

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)


class FakeClient:
    """One client's view of a shared :class:`FakeApiStore`; ``down`` simulates a partition."""

    def __init__(self, store: FakeApiStore | None = None) -> None:
        self.store = store or FakeApiStore()
        self.down = False
        self.calls = 0

    def _check(self) -> None:
        self.calls += 1
        if self.down:
            raise ServiceUnavailable(503, "ServiceUnavailable", "partitioned")

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any]:
        self._check()
        with self.store.lock:
            obj = self.store.objects.get((kind, namespace or "", name))
            if obj is None:
                raise NotFound(404, "NotFound", f"{kind} {name} not found")
            return copy.deepcopy(obj)

    def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        self._check()
        meta = obj["metadata"]
        key = (obj["kind"], namespace or meta.get("namespace", ""), meta["name"])
        with self.store.lock:
            if key in self.store.objects:
                raise AlreadyExists(409, "AlreadyExists", f"{key} exists")
            stored = copy.deepcopy(obj)
            stored["metadata"]["resourceVersion"] = self.store._next_rv()
            stored["metadata"]["namespace"] = key[1]
            self.store.objects[key] = stored
            self.store.writes.append(("create", key[0], key[2]))
            return copy.deepcopy(stored)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._check()
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        with self.store.lock:
            cur = self.store.objects.get(key)
            if cur is None:
                raise NotFound(404, "NotFound", f"{key} not found")
            if meta.get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", "the object has been modified")
            stored = copy.deepcopy(obj)
            stored["metadata"]["resourceVersion"] = self.store._next_rv()
            self.store.objects[key] = stored
            self.store.writes.append(("update", key[0], key[2]))
            return copy.deepcopy(stored)

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> dict[str, Any]:
        self._check()
        assert patch_type == "merge"
        key = (kind, namespace or "", name)
        with self.store.lock:
            cur = self.store.objects.get(key)
            if cur is None:
                raise NotFound(404, "NotFound", f"{key} not found")
            cur.update(copy.deepcopy(patch))
            cur["metadata"]["resourceVersion"] = self.store._next_rv()
            self.store.writes.append(("patch", kind, name))
            return copy.deepcopy(cur)

    def lease(self, namespace: str = "ns", name: str = "lease") -> dict[str, Any] | None:
        with self.store.lock:
            obj = self.store.objects.get(("Lease", namespace, name))
            return copy.deepcopy(obj) if obj else None

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self.store.lock:
            return [copy.deepcopy(o) for (k, _, _), o in self.store.objects.items() if k == kind]


class FakeCache:
    """Syncs when the test sets ``synced``."""

    def __init__(self, synced: bool = False) -> None:
        self.synced = threading.Event()
        if synced:
            self.synced.set()
        self.started = threading.Event()
        self.stopped = threading.Event()

    def start(self) -> None:
        self.started.set()

    def stop(self) -> None:
        self.stopped.set()

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        return self.synced.wait(timeout)

    def has_synced(self) -> bool:
        return self.synced.is_set()

    def get_informer(self, api_version: str, kind: str) -> Any:
        raise LookupError("fake cache has no informers")


class FakeRunnable:
    """Records start/stop; ``need_leader_election`` as given."""

    def __init__(self, name: str, events: list[str], *, need_leader_election: bool = True) -> None:
        self.name = name
        self.events = events
        self.need_leader_election = need_leader_election
        self.started = threading.Event()
        self.stop_timeouts: list[float | None] = []

    def start(self) -> None:
        self.events.append(f"start:{self.name}")
        self.started.set()

    def stop(self, timeout: float | None = None) -> None:
        self.stop_timeouts.append(timeout)
        self.events.append(f"stop:{self.name}")


class InFlightController:
    """A controller with one long reconcile in flight: ``stop`` waits for it up to timeout."""

    need_leader_election = True

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.in_reconcile = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self._thread: threading.Thread | None = None
        self.stopped_taking_work = threading.Event()

    def _reconcile(self) -> None:
        self.in_reconcile.set()
        self.release.wait(30)
        self.events.append("reconcile-finished")
        self.finished.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._reconcile, daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self.events.append("controller-stop-called")
        self.stopped_taking_work.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.events.append("controller-stopped")
