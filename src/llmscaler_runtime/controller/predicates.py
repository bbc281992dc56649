"""Event filters in front of a controller's queue (controller-runtime ``pkg/predicate``).

A predicate sees every informer event before it becomes a Request and may drop it; dropping
early saves a reconcile (for example status-only writes, which do not bump
``metadata.generation``). Objects are the informer's shared dicts: predicates only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from llmscaler_runtime.controller.selectors import LabelSelector, parse_selector

__all__ = [
    "AnnotationChangedPredicate",
    "Funcs",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Predicate",
    "ResourceVersionChangedPredicate",
    "and_",
    "label_selector_predicate",
    "new_predicate_filter",
    "new_predicate_funcs",
    "not_",
    "or_",
]

Obj = dict[str, Any]


@runtime_checkable
class Predicate(Protocol):
    """Decides per event kind whether it should reach the queue."""

    def create(self, obj: Obj) -> bool: ...

    def update(self, old: Obj | None, new: Obj | None) -> bool: ...

    def delete(self, obj: Obj) -> bool: ...

    def generic(self, obj: Obj) -> bool: ...


def _meta(obj: Obj | None) -> Mapping[str, Any]:
    if obj is None:
        return {}
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class Funcs:
    """A predicate from optional per-event functions; a missing function lets the event pass."""

    def __init__(
        self,
        *,
        create: Callable[[Obj], bool] | None = None,
        update: Callable[[Obj | None, Obj | None], bool] | None = None,
        delete: Callable[[Obj], bool] | None = None,
        generic: Callable[[Obj], bool] | None = None,
    ) -> None:
        self._create = create
        self._update = update
        self._delete = delete
        self._generic = generic

    def create(self, obj: Obj) -> bool:
        return self._create(obj) if self._create is not None else True

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        return self._update(old, new) if self._update is not None else True

    def delete(self, obj: Obj) -> bool:
        return self._delete(obj) if self._delete is not None else True

    def generic(self, obj: Obj) -> bool:
        return self._generic(obj) if self._generic is not None else True


def new_predicate_funcs(
    *,
    create: Callable[[Obj], bool] | None = None,
    update: Callable[[Obj | None, Obj | None], bool] | None = None,
    delete: Callable[[Obj], bool] | None = None,
    generic: Callable[[Obj], bool] | None = None,
) -> Funcs:
    """A predicate from per-event functions (controller-runtime ``predicate.Funcs``)."""
    return Funcs(create=create, update=update, delete=delete, generic=generic)


def new_predicate_filter(fn: Callable[[Obj], bool]) -> Funcs:
    """Apply one object filter to every event; updates are judged on the new object."""

    def update(old: Obj | None, new: Obj | None) -> bool:
        return new is not None and fn(new)

    return Funcs(create=fn, update=update, delete=fn, generic=fn)


class _UpdateOnly:
    """Base for predicates that only judge updates; create/delete/generic always pass."""

    def create(self, obj: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True

    def generic(self, obj: Obj) -> bool:
        return True


class GenerationChangedPredicate(_UpdateOnly):
    """Updates pass only when ``metadata.generation`` changed (a spec change, for CRDs).

    Drops status writes, resyncs and metadata-only edits; missing old/new object: dropped.
    """

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        if old is None or new is None:
            return False
        return _meta(old).get("generation") != _meta(new).get("generation")


class ResourceVersionChangedPredicate(_UpdateOnly):
    """Updates pass only when ``metadata.resourceVersion`` changed (drops resync replays)."""

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        if old is None or new is None:
            return False
        return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


class LabelChangedPredicate(_UpdateOnly):
    """Updates pass only when the labels changed (absent and empty labels are equal)."""

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        if old is None or new is None:
            return False
        return (_meta(old).get("labels") or {}) != (_meta(new).get("labels") or {})


class AnnotationChangedPredicate(_UpdateOnly):
    """Updates pass only when the annotations changed (e.g. a pause annotation).

    With ``keys``, only a change of those annotations counts (added, removed or a new value):
    ``kubectl apply`` rewrites ``last-applied-configuration`` and other tools stamp their own
    annotations, and a controller that acts on one annotation should not reconcile for those.
    """

    def __init__(self, keys: Iterable[str] | None = None) -> None:
        self.keys: tuple[str, ...] | None = None if keys is None else tuple(keys)

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        if old is None or new is None:
            return False
        before = _meta(old).get("annotations") or {}
        after = _meta(new).get("annotations") or {}
        if self.keys is None:
            return bool(before != after)
        return any(before.get(key) != after.get(key) for key in self.keys)


def label_selector_predicate(selector: str | Mapping[str, Any] | LabelSelector) -> Funcs:
    """Pass events whose object's labels match ``selector`` (string or LabelSelector form).

    The selector is parsed now, so a malformed one fails at setup with a ValueError.
    """
    parsed = parse_selector(selector)
    return new_predicate_filter(lambda obj: parsed.matches(_meta(obj).get("labels")))


class _And:
    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.predicates = predicates

    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.predicates)

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        return all(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.predicates)

    def generic(self, obj: Obj) -> bool:
        return all(p.generic(obj) for p in self.predicates)


class _Or:
    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.predicates = predicates

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.predicates)

    def generic(self, obj: Obj) -> bool:
        return any(p.generic(obj) for p in self.predicates)


class _Not:
    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate

    def create(self, obj: Obj) -> bool:
        return not self.predicate.create(obj)

    def update(self, old: Obj | None, new: Obj | None) -> bool:
        return not self.predicate.update(old, new)

    def delete(self, obj: Obj) -> bool:
        return not self.predicate.delete(obj)

    def generic(self, obj: Obj) -> bool:
        return not self.predicate.generic(obj)


def and_(*predicates: Predicate) -> Predicate:
    """Pass when every predicate passes (none given: everything passes)."""
    return _And(predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Pass when any predicate passes (none given: nothing passes)."""
    return _Or(predicates)


def not_(predicate: Predicate) -> Predicate:
    """Invert a predicate for every event kind."""
    return _Not(predicate)
