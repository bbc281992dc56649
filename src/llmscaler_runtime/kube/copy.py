"""A private copy of JSON-like data, several times faster than :func:`copy.deepcopy`.

Caches hand out shared objects; whoever wants to change one copies it first. Objects decoded
from JSON contain only dicts, lists and immutable scalars, so a type-dispatching recursive copy
is enough and avoids deepcopy's memo bookkeeping. Other values are passed through
:func:`copy.deepcopy` so the function stays correct for arbitrary input.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar, cast

__all__ = ["deep_copy"]

T = TypeVar("T")

_IMMUTABLE = (str, int, float, bool, type(None))


def _copy(value: Any) -> Any:
    cls = type(value)
    if cls is dict:
        return {k: (v if type(v) in _IMMUTABLE else _copy(v)) for k, v in value.items()}
    if cls is list:
        return [v if type(v) in _IMMUTABLE else _copy(v) for v in value]
    if cls in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def deep_copy(obj: T) -> T:
    """Return a copy that shares no mutable container with ``obj``."""
    return cast(T, _copy(obj))
