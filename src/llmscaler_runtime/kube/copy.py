"""A private copy of JSON-like data, about ten times faster than :func:`copy.deepcopy`.

Caches hand out shared objects; whoever wants to change one copies it first, so this sits on
hot paths. Objects decoded from JSON hold only dicts, lists, str, int, float, bool and None;
``marshal`` (format version 2, which never emits back-references, so the copy shares nothing
even with itself) round-trips exactly those types in C. Anything marshal refuses (subclasses
such as OrderedDict or enums, custom objects) falls back to :func:`copy.deepcopy`, so the
function stays correct for arbitrary input.
"""

from __future__ import annotations

import copy
import marshal
from typing import Any, TypeVar, cast

__all__ = ["deep_copy"]

T = TypeVar("T")

_MARSHAL_VERSION = 2


def deep_copy(obj: T) -> T:
    """Return an equal object that shares no mutable container with ``obj``."""
    try:
        result: T = marshal.loads(marshal.dumps(cast(Any, obj), _MARSHAL_VERSION))
    except (ValueError, TypeError):
        return copy.deepcopy(obj)
    return result
