"""The reconcile contract: what a controller hands a reconciler and what it gets back."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

__all__ = ["Reconciler", "Request", "Result", "TerminalError"]


def _non_empty(_inst: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value:
        raise ValueError(f"Request.{attribute.name} must not be empty")


@attrs.frozen(order=True)
class Request:
    """Names the object to reconcile — only its key, never its content.

    Reconcilers are level-based: they read the current state from the cache, so collapsing
    several events into one Request loses nothing. ``namespace`` is "" for cluster-scoped objects.
    """

    namespace: str = attrs.field(validator=attrs.validators.instance_of(str))
    name: str = attrs.field(validator=[attrs.validators.instance_of(str), _non_empty])

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_object(cls, obj: dict) -> Request:
        """The Request for a Kubernetes object (its own namespace and name)."""
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("object has no metadata.name")
        return cls(meta.get("namespace") or "", name)


def _non_negative(
    _inst: object, attribute: attrs.Attribute[float | None], value: float | None
) -> None:
    if value is not None and value < 0:
        raise ValueError(f"Result.{attribute.name} must be >= 0, got {value}")


@attrs.frozen
class Result:
    """What to do with the Request after a successful reconcile.

    ``requeue_after > 0`` schedules the next reconcile after that many seconds and resets the
    item's error backoff (periodic re-evaluation); ``requeue=True`` re-adds it through the rate
    limiter (deprecated in controller-runtime, kept for parity). Neither: done until an event.
    """

    requeue: bool = False
    requeue_after: float | None = attrs.field(default=None, validator=_non_negative)

    def is_zero(self) -> bool:
        """True when the result asks for nothing (plain success)."""
        return not self.requeue and not self.requeue_after


@runtime_checkable
class Reconciler(Protocol):
    """Drives one object toward its desired state; called from a controller's worker threads.

    Raise to get a rate-limited retry; raise :class:`TerminalError` when retrying cannot help.
    One Request is never reconciled by two workers at once.
    """

    def reconcile(self, request: Request) -> Result: ...


class TerminalError(Exception):
    """A reconcile failure that retrying will not fix (bad spec): logged, counted, not requeued.

    The next event on the object (for example the user fixing the spec) reconciles it again.
    """
