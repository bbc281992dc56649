"""The versioned store: objects per resource, one resourceVersion counter, the watch history.

This is the part that plays etcd plus kube-apiserver's watch cache: every change goes through
:meth:`VersionedStore.commit`, which stamps the next resourceVersion, records the change in a
bounded history and hands it to the fan-out. Reads (get, paged lists at one snapshot, watches
that resume from a resourceVersion) are answered from the same data, so it is the one place
that knows how the history is kept. What a write *means* (defaults, validation, deletion,
apply) lives in the other parts, which call in here with the lock held.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections import deque

from ..errors import StatusError, bad_request, not_found
from ..registry import ResourceType
from ..selectors import parse_field_selector, parse_label_selector
from .common import Key, Obj, fast_copy, parse_rv
from .watch import Fanout, Watcher

Bucket = dict[tuple[str, str], Obj]


class VersionedStore:
    """Objects, resourceVersions and history; ``lock`` guards all of it (re-entrant, because
    a write may cascade into further writes, as a namespace deletion does)."""

    def __init__(self, watch_history: int) -> None:
        self.lock = threading.RLock()
        self.fanout = Fanout(self.lock)
        self._rv = 0
        self._objects: dict[Key, Bucket] = {}
        self._history: deque[tuple[int, Key, str, Obj, Obj | None]] = deque(maxlen=watch_history)
        self._floor = 0
        self._start_rv = 0
        self._type_floor: dict[Key, int] = {}

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def mark_start(self) -> None:
        """Like kube-apiserver's watch caches, which start from a list when the server comes
        up: a watch cannot resume from before this point."""
        self._start_rv = self._rv

    def mark_new_type(self, key: Key) -> None:
        """A custom resource's watch cache starts with its CRD: no resuming from before it."""
        self._type_floor[key] = self._rv

    def drop_type(self, key: Key) -> None:
        """Forget the (already emptied) bucket of a resource that is no longer served."""
        self._objects.pop(key, None)

    # ---- the write side (lock held) -------------------------------------------------------

    def bucket(self, rt: ResourceType) -> Bucket:
        return self._objects.setdefault(rt.key, {})

    def commit(self, rt: ResourceType, etype: str, obj: Obj, old: Obj | None) -> Obj:
        """Stamp the next resourceVersion, store, record history and fan out (lock held)."""
        self._rv += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self._rv)
        okey = (meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        if etype == "DELETED":
            self.bucket(rt).pop(okey, None)
        else:
            self.bucket(rt)[okey] = obj
        if len(self._history) == self._history.maxlen and self._history:
            self._floor = self._history[0][0]
        self._history.append((self._rv, rt.key, etype, obj, old))
        self.fanout.publish(rt.key, etype, obj, old)
        return obj

    def lookup(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self.bucket(rt).get((namespace or "" if rt.namespaced else "", name))

    def existing(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        """The stored object (lock held), or the 404 every verb on a missing object answers."""
        obj = self.lookup(rt, namespace, name)
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    # ---- reads ----------------------------------------------------------------------------

    @staticmethod
    def out(rt: ResourceType, obj: Obj, version: str | None) -> Obj:
        """A private copy in the requested version of the resource."""
        out = fast_copy(obj)
        if version and version != rt.preferred_version:
            out["apiVersion"] = rt.api_version(version)
        return out

    def get_rt(
        self, rt: ResourceType, namespace: str | None, name: str, version: str | None = None
    ) -> Obj:
        with self.lock:
            return self.out(rt, self.existing(rt, namespace, name), version)

    def list_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        version: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        lp = parse_label_selector(label_selector)
        fp = parse_field_selector(field_selector, rt.field_selectors)
        if resource_version not in (None, ""):
            parse_rv(resource_version)
        start = ""
        snapshot: int | None = None
        if continue_token:
            try:
                token = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                start = str(token["start"])
                snapshot = int(token["rv"])
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion "
                    "(version meta.k8s.io/v1)"
                ) from None
        with self.lock:
            rv = self._rv if snapshot is None else snapshot
            items = []
            for (ns, name), obj in sorted(self._bucket_at(rt, rv).items()):
                if namespace is not None and rt.namespaced and ns != namespace:
                    continue
                if start and f"{ns}/{name}" <= start:
                    continue
                meta = obj.get("metadata", {})
                if lp(meta.get("labels") or {}) and fp(obj):
                    items.append((f"{ns}/{name}", obj))
            meta_out: Obj = {"resourceVersion": str(rv)}
            if limit and limit > 0 and len(items) > limit:
                remaining = len(items) - limit
                items = items[:limit]
                tok = {"rv": rv, "start": items[-1][0]}
                meta_out["continue"] = base64.urlsafe_b64encode(json.dumps(tok).encode()).decode()
                meta_out["remainingItemCount"] = remaining
            out_items = [self.out(rt, o, version) for _, o in items]
        return {
            "kind": f"{rt.kind}List",
            "apiVersion": rt.api_version(version),
            "metadata": meta_out,
            "items": out_items,
        }

    def _bucket_at(self, rt: ResourceType, rv: int) -> Bucket:
        """The objects of ``rt`` as they were at ``rv`` (lock held): the current ones with the
        later history undone, so every page of a paged list shows one snapshot, as etcd does."""
        current = self.bucket(rt)
        if rv >= self._rv:
            return current
        if len(self._history) == self._history.maxlen and rv < self._history[0][0] - 1:
            raise StatusError(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
            )
        state = dict(current)
        for erv, key, etype, obj, old in reversed(self._history):
            if erv <= rv:
                break
            if key != rt.key:
                continue
            meta = obj.get("metadata", {})
            okey = (meta.get("namespace", "") if rt.namespaced else "", meta.get("name", ""))
            if etype == "ADDED":
                state.pop(okey, None)
            elif old is not None:
                state[okey] = old
        return state

    # ---- watches --------------------------------------------------------------------------

    def watch_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> tuple[Watcher, list[tuple[str, Obj]]]:
        """Register a watch; returns it plus the initial/replayed events to send first."""
        lp = parse_label_selector(label_selector)
        fp = parse_field_selector(field_selector, rt.field_selectors)
        w = Watcher(rt.key, namespace if rt.namespaced else None, lp, fp)
        initial: list[tuple[str, Obj]] = []
        with self.lock:
            if resource_version in (None, "", "0"):
                for obj in sorted(
                    self.bucket(rt).values(), key=lambda o: int(o["metadata"]["resourceVersion"])
                ):
                    if w.matches(obj):
                        initial.append(("ADDED", obj))
            else:
                since = parse_rv(resource_version)
                floor = max(self._floor, self._type_floor.get(rt.key, self._start_rv))
                if since < floor:
                    raise StatusError(
                        410,
                        "Expired",
                        f"too old resource version: {since} ({floor})",
                    )
                for rv, key, etype, obj, old in self._history:
                    if rv <= since or key != rt.key:
                        continue
                    probe = Watcher(rt.key, w.namespace, lp, fp)
                    probe.offer(etype, obj, old)
                    while not probe.events.empty():
                        ev = probe.events.get()
                        if ev is not None:
                            initial.append(ev)
            w.last_rv = self._rv
            self.fanout.add(w)
        return w, initial

    def bookmark_rv(self, w: Watcher) -> str | None:
        """A resourceVersion safe to bookmark: only when everything before it was queued."""
        with self.lock:
            if not w.events.empty():
                return None
            return str(self._rv)


__all__ = ["Bucket", "VersionedStore"]
