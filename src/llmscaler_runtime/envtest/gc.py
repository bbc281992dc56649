"""Garbage collector for the embedded API server: cascading deletion by ownerReferences.

Like kube-controller-manager's garbage collector it keeps an ownership graph fed by storage
events and, when an owner disappears, deletes every dependent whose owners are *all* gone (the
survivors of a partially-owned dependent just lose the dangling references). Works for any kind.

Supported propagation (what the real apiserver expresses through finalizers):

* Background (the default): the owner is removed at once; dependents are collected afterwards.
* Orphan: the embedded storage strips the ownerReferences itself at delete time; if an owner
  nevertheless carries the ``orphan`` finalizer, the GC strips them and removes the finalizer.
* Foreground: if an owner carries the ``foregroundDeletion`` finalizer with a deletionTimestamp,
  its dependents are deleted (themselves in foreground when they own objects) and the finalizer
  is removed once no dependent is left, so the owner goes last. The ``blockOwnerDeletion`` flag is
  treated as always set.

Owners the graph has never seen (created before the GC started, or of a kind it has no events
for) are verified with a direct ``storage.get`` and a uid comparison, as the real GC does for its
"virtual" nodes, so a same-named replacement never keeps an orphan alive.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from llmscaler_runtime.envtest.simulator.util import Obj, StorageLike, status_code

_log = logging.getLogger("llmscaler_runtime.envtest.gc")

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"

#: Kinds scanned once at start, to learn about objects created before the GC was started.
DEFAULT_INITIAL_KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("coordination.k8s.io/v1", "Lease"),
)


@attrs.define
class _Node:
    api_version: str
    kind: str
    namespace: str | None
    name: str
    owners: list[Mapping[str, Any]]
    deleting: bool
    finalizers: list[str]


WorkItem = tuple[str, str]  # ("dependent" | "owner", uid)


class GarbageCollector:
    """Cascade deletion; ``start()`` runs a worker thread, tests may drive it directly."""

    def __init__(
        self,
        storage: StorageLike,
        *,
        initial_kinds: Iterable[tuple[str, str]] = DEFAULT_INITIAL_KINDS,
    ) -> None:
        self.storage = storage
        self._initial_kinds = tuple(initial_kinds)
        self._nodes: dict[str, _Node] = {}
        self._dependents: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: list[WorkItem] = []
        self._queued: set[WorkItem] = set()
        self._listening = False
        self._thread: threading.Thread | None = None
        self._stopping = False
        #: Recent deletions made by the collector (kind, namespace, name), for tests and debugging.
        self.deleted: deque[tuple[str, str | None, str]] = deque(maxlen=1000)

    # -- graph maintenance (listener thread) ---------------------------------------------------
    def _enqueue_locked(self, item: WorkItem) -> None:
        if item not in self._queued:
            self._queued.add(item)
            self._queue.append(item)
            self._cond.notify()

    def _observe(self, event_type: str, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        uid = str(md.get("uid") or "")
        if not uid:
            return
        with self._lock:
            old = self._nodes.get(uid)
            if old is not None:
                for ref in old.owners:
                    deps = self._dependents.get(str(ref.get("uid")))
                    if deps is not None:
                        deps.discard(uid)
            if event_type == "DELETED":
                self._nodes.pop(uid, None)
                for dep in self._dependents.get(uid, set()):
                    self._enqueue_locked(("dependent", dep))
                if old is not None:
                    for ref in old.owners:
                        self._enqueue_locked(("owner", str(ref.get("uid"))))
                return
            owners = [r for r in md.get("ownerReferences") or [] if isinstance(r, Mapping)]
            node = _Node(
                api_version=str(obj.get("apiVersion", "")),
                kind=str(obj.get("kind", "")),
                namespace=md.get("namespace") or None,
                name=str(md.get("name", "")),
                owners=owners,
                deleting=bool(md.get("deletionTimestamp")),
                finalizers=list(md.get("finalizers") or []),
            )
            self._nodes[uid] = node
            for ref in owners:
                owner_uid = str(ref.get("uid"))
                self._dependents.setdefault(owner_uid, set()).add(uid)
                owner = self._nodes.get(owner_uid)
                if owner is None or owner.deleting:
                    self._enqueue_locked(("dependent", uid))
            if node.deleting and (
                FOREGROUND_FINALIZER in node.finalizers or ORPHAN_FINALIZER in node.finalizers
            ):
                self._enqueue_locked(("owner", uid))

    def _scan(self) -> None:
        for api_version, kind in self._initial_kinds:
            try:
                items, _ = self.storage.list(api_version, kind)
            except Exception as exc:  # a kind this server does not serve
                _log.debug("gc initial scan of %s/%s skipped: %r", api_version, kind, exc)
                continue
            for obj in items:
                obj.setdefault("apiVersion", api_version)
                obj.setdefault("kind", kind)
                self._observe("ADDED", obj)

    # -- decisions ---------------------------------------------------------------------------------
    def _owner_state(self, dep: _Node, ref: Mapping[str, Any]) -> str:
        """ "alive", "foreground" (alive but deleting in foreground) or "gone"."""
        owner_uid = str(ref.get("uid"))
        with self._lock:
            owner = self._nodes.get(owner_uid)
        if owner is not None:
            if owner.deleting and FOREGROUND_FINALIZER in owner.finalizers:
                return "foreground"
            return "alive"
        for ns in (dep.namespace, None) if dep.namespace else (None,):
            try:
                obj = self.storage.get(
                    str(ref.get("apiVersion", "")),
                    str(ref.get("kind", "")),
                    ns,
                    str(ref.get("name")),
                )
            except Exception as exc:
                code = status_code(exc)
                if code == 404 or code == 400:
                    continue
                raise
            if (obj.get("metadata") or {}).get("uid") == owner_uid:
                return "alive"
        return "gone"

    def _delete(self, node: _Node) -> None:
        """Delete a dependent whose owners are gone, honouring its own propagation finalizers."""
        policy = "Background"
        if ORPHAN_FINALIZER in node.finalizers:
            policy = "Orphan"
        elif FOREGROUND_FINALIZER in node.finalizers:
            policy = "Foreground"
        try:
            self.storage.delete(
                node.api_version, node.kind, node.namespace, node.name, propagation_policy=policy
            )
        except Exception as exc:
            if status_code(exc) != 404:
                raise
            return
        self.deleted.append((node.kind, node.namespace, node.name))

    def _process_dependent(self, uid: str) -> None:
        with self._lock:
            node = self._nodes.get(uid)
        if node is None or not node.owners:
            return
        states = [(ref, self._owner_state(node, ref)) for ref in node.owners]
        gone = [ref for ref, state in states if state == "gone"]
        alive = [ref for ref, state in states if state == "alive"]
        if not alive:
            if node.deleting and not (
                FOREGROUND_FINALIZER in node.finalizers or ORPHAN_FINALIZER in node.finalizers
            ):
                return  # already on its way out (e.g. a pod in its grace period)
            if not node.deleting:
                self._delete(node)
            return
        if gone:
            kept = [dict(ref) for ref in node.owners if ref not in gone]
            try:
                self.storage.patch_merge(
                    node.api_version,
                    node.kind,
                    node.namespace,
                    node.name,
                    {"metadata": {"ownerReferences": kept}},
                )
            except Exception as exc:
                if status_code(exc) != 404:
                    raise

    def _process_owner(self, uid: str) -> None:
        with self._lock:
            node = self._nodes.get(uid)
            deps = sorted(self._dependents.get(uid, set()))
            dep_nodes = [(d, self._nodes.get(d)) for d in deps]
        if node is None or not node.deleting:
            return
        if ORPHAN_FINALIZER in node.finalizers:
            for _dep_uid, dep in dep_nodes:
                if dep is None:
                    continue
                kept = [dict(r) for r in dep.owners if str(r.get("uid")) != uid]
                try:
                    self.storage.patch_merge(
                        dep.api_version,
                        dep.kind,
                        dep.namespace,
                        dep.name,
                        {"metadata": {"ownerReferences": kept or None}},
                    )
                except Exception as exc:
                    if status_code(exc) != 404:
                        raise
            self._remove_finalizer(node, ORPHAN_FINALIZER)
            return
        if FOREGROUND_FINALIZER not in node.finalizers:
            return
        remaining = [(d, n) for d, n in dep_nodes if n is not None]
        if not remaining:
            self._remove_finalizer(node, FOREGROUND_FINALIZER)
            return
        for dep_uid, dep in remaining:
            if dep is not None and not dep.deleting:
                with self._lock:
                    owns = bool(self._dependents.get(dep_uid))
                try:
                    self.storage.delete(
                        dep.api_version,
                        dep.kind,
                        dep.namespace,
                        dep.name,
                        propagation_policy="Foreground" if owns else "Background",
                    )
                except Exception as exc:
                    if status_code(exc) != 404:
                        raise
                    continue
                self.deleted.append((dep.kind, dep.namespace, dep.name))

    def _remove_finalizer(self, node: _Node, finalizer: str) -> None:
        kept = [f for f in node.finalizers if f != finalizer]
        try:
            self.storage.patch_merge(
                node.api_version,
                node.kind,
                node.namespace,
                node.name,
                {"metadata": {"finalizers": kept or None}},
            )
        except Exception as exc:
            if status_code(exc) != 404:
                raise

    def _process(self, item: WorkItem) -> None:
        kind, uid = item
        try:
            if kind == "dependent":
                self._process_dependent(uid)
            else:
                self._process_owner(uid)
        except Exception as exc:
            _log.warning("garbage collection of %s failed, retrying: %r", item, exc)
            threading.Timer(0.2, self._requeue, args=(item,)).start()

    def _requeue(self, item: WorkItem) -> None:
        with self._lock:
            if not self._stopping:
                self._enqueue_locked(item)

    def _pop(self) -> WorkItem | None:
        with self._lock:
            if not self._queue:
                return None
            item = self._queue.pop(0)
            self._queued.discard(item)
            return item

    # -- lifecycle -------------------------------------------------------------------------------
    def attach(self) -> None:
        """Subscribe to storage events and learn about existing objects (idempotent)."""
        if self._listening:
            return
        self.storage.add_listener(self._observe)
        self._listening = True
        self._scan()

    def start(self) -> None:
        """Attach and run the collector on a daemon thread."""
        self.attach()
        if self._thread is not None:
            return
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="envtest-gc", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopping = True
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def process_pending(self) -> int:
        """Run queued work on the calling thread until the queue is empty (for tests)."""
        done = 0
        while (item := self._pop()) is not None:
            self._process(item)
            done += 1
        return done

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
            self.process_pending()
