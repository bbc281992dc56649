"""From informer events to Requests: mappers and the handler that applies predicates.

A *mapper* turns one object into the Requests it should trigger: the object itself
(:func:`enqueue_for_object`), its controlling owner (:func:`enqueue_for_owner`), or anything a
custom function computes. Update events map both the old and the new object (a changed owner
reference must wake the old owner too); duplicates within one event are dropped, and the queue
collapses the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import structlog

from llmscaler_runtime.controller.predicates import Obj, Predicate
from llmscaler_runtime.controller.types import Request

__all__ = [
    "EnqueueHandler",
    "Mapper",
    "enqueue_for_object",
    "enqueue_for_owner",
    "unwrap_tombstone",
]

Mapper = Callable[[Obj], Iterable[Request]]

_log = structlog.get_logger("llmscaler_runtime.controller")


def enqueue_for_object(obj: Obj) -> Iterable[Request]:
    """The object's own namespace/name (controller-runtime ``EnqueueRequestForObject``)."""
    return (Request.from_object(obj),)


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def enqueue_for_owner(
    owner_api_version: str,
    owner_kind: str,
    *,
    only_controller: bool = True,
    cluster_scoped_owner: bool = False,
) -> Mapper:
    """Map an owned object to its owner of the given kind via ``metadata.ownerReferences``.

    Owner references name no namespace: a namespaced owner lives in its dependent's namespace,
    a cluster-scoped one in none. The API group must match but the version need not (the owner
    may be referenced through another served version). With ``only_controller`` (the default,
    as ``owns()`` uses it) only the reference with ``controller: true`` counts.
    """
    group = _group(owner_api_version)

    def mapper(obj: Obj) -> Iterable[Request]:
        meta = obj.get("metadata") or {}
        namespace = "" if cluster_scoped_owner else (meta.get("namespace") or "")
        out: list[Request] = []
        for ref in meta.get("ownerReferences") or ():
            if not isinstance(ref, dict):
                continue
            if only_controller and ref.get("controller") is not True:
                continue
            if ref.get("kind") != owner_kind or _group(str(ref.get("apiVersion", ""))) != group:
                continue
            name = ref.get("name")
            if isinstance(name, str) and name:
                out.append(Request(namespace, name))
        return out

    return mapper


def unwrap_tombstone(obj: Any) -> Obj | None:
    """The last known object of a delete event.

    Informers hand a ``DeletedFinalStateUnknown(key, obj)`` tombstone to delete handlers when
    they missed the delete itself (relist after a gap); it carries the object as ``.obj``.
    """
    if isinstance(obj, dict):
        return obj
    inner = getattr(obj, "obj", None)
    return inner if isinstance(inner, dict) else None


class EnqueueHandler:
    """Informer event handler: predicates first, then mapper, then ``queue.add``.

    Runs on the informer's dispatch thread, so it never raises: a failing predicate or mapper
    is logged and the event dropped, leaving other handlers of the informer unaffected.
    """

    def __init__(
        self,
        controller: str,
        add: Callable[[Request], None],
        mapper: Mapper,
        predicates: Sequence[Predicate],
    ) -> None:
        self.controller = controller
        self._add = add
        self._mapper = mapper
        self._predicates = tuple(predicates)

    def _enqueue(self, event: str, objs: Iterable[Obj | None]) -> None:
        seen: set[Request] = set()
        for obj in objs:
            if obj is None:
                continue
            try:
                requests = list(self._mapper(obj))
            except Exception:
                _log.exception("event mapper failed", controller=self.controller, event_type=event)
                continue
            for req in requests:
                if not isinstance(req, Request):
                    _log.error(
                        "event mapper returned a non-Request; dropped",
                        controller=self.controller,
                        event_type=event,
                        value=repr(req),
                    )
                    continue
                if req not in seen:
                    seen.add(req)
                    self._add(req)

    def _passes(self, event: str, check: Callable[[Predicate], bool]) -> bool:
        try:
            return all(check(p) for p in self._predicates)
        except Exception:
            _log.exception(
                "predicate failed; event dropped", controller=self.controller, event_type=event
            )
            return False

    def on_add(self, obj: Obj) -> None:
        if self._passes("create", lambda p: p.create(obj)):
            self._enqueue("create", (obj,))

    def on_update(self, old: Obj | None, new: Obj | None) -> None:
        if self._passes("update", lambda p: p.update(old, new)):
            self._enqueue("update", (old, new))

    def on_delete(self, obj: Any) -> None:
        last = unwrap_tombstone(obj)
        if last is None:
            _log.warning("delete event without an object; dropped", controller=self.controller)
            return
        if self._passes("delete", lambda p: p.delete(last)):
            self._enqueue("delete", (last,))

    def on_generic(self, obj: Obj) -> None:
        """For sources other than informers (e.g. a channel of external triggers)."""
        if self._passes("generic", lambda p: p.generic(obj)):
            self._enqueue("generic", (obj,))
