"""The vocabulary the API types describe themselves with: field and type metadata, CEL rules.

Each attrs field of an API type carries its JSON name, ``kubectl explain`` description, bounds
and rules in its own ``metadata`` (``attrs.field(metadata=schema(...))``), and each type its
description and cross-field rules (``@api_type(...)``). Whether a field is required and the
default the CRD declares come from the attrs field itself, so adding a field to the API is one
declaration in :mod:`.types`; :mod:`.codec` parses by this metadata and :mod:`.crd` renders
it, so the schema and the parser cannot drift apart.

This module imports nothing from the package: the types, the codec and the CRD generator all
build on it, and it must not depend on any of them (``test_layering`` checks).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar

import attrs

_T = TypeVar("_T")


class _NoValue:
    """Marker for "no value": distinct from None, which can be a legitimate absent value."""

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()

_FIELD_KEY = "llmscaler.api/schema"
_TYPE_ATTR = "__api_type__"


@attrs.frozen
class Rule:
    """A cross-field constraint: a CEL rule for the API server and its Python twin.

    ``rule`` and ``message`` render as an ``x-kubernetes-validations`` entry; ``check`` takes
    the same JSON value the rule's ``self`` refers to (after defaulting) and returns a problem
    detail, or None when the rule holds. Keeping both in one object means a rule cannot be
    added to the CRD without the parser enforcing it too. ``field_path`` (relative, e.g.
    ``.minReplicas``) makes the API server report the error on the field the user must change;
    ``reason`` is one of the apiserver's field error types.
    """

    rule: str
    message: str
    check: Callable[[Any], str | None] = attrs.field(eq=False, repr=False)
    field_path: str | None = None
    reason: str | None = None


@attrs.frozen
class FieldMeta:
    """How one attrs field appears in JSON and in the OpenAPI schema.

    Read it with :func:`field_metas`, which fills in what the attrs field already says.
    """

    #: The JSON name; ``""`` in :func:`schema` means the camelCase of the attribute name.
    json: str
    description: str
    #: Derived: a field without an attrs default (and without ``absent``) is required.
    required: bool = False
    #: JSON value the API server (and the parser) fills in when the field is absent.
    default: Any = NO_VALUE
    #: Python value used when the field is absent and has neither default nor attrs default.
    absent: Any = NO_VALUE
    format: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    pattern: str | None = None
    #: Allowed values for a plain ``str`` field (Enum-typed fields take theirs from the Enum).
    enum: tuple[str, ...] | None = None
    rules: tuple[Rule, ...] = ()
    #: Extra schema keys copied verbatim (e.g. list-type markers).
    extra: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class TypeMeta:
    """Object-level schema data: its description and the rules that span several fields."""

    description: str
    rules: tuple[Rule, ...] = ()


def schema(
    description: str,
    *,
    json: str = "",
    crd_default: Any = NO_VALUE,
    absent: Any = NO_VALUE,
    format: str | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    max_items: int | None = None,
    pattern: str | None = None,
    enum: tuple[str, ...] | None = None,
    rules: tuple[Rule, ...] = (),
    extra: tuple[tuple[str, Any], ...] = (),
) -> dict[str, Any]:
    """The ``metadata`` of an API type's attrs field: ``attrs.field(metadata=schema(...))``.

    The field's attrs default is its default in the CRD too when it is a JSON scalar or an
    Enum member; ``crd_default`` gives the JSON for any other (an object whose fields all
    have defaults declares ``{}``). ``absent`` is what the parser uses for a missing field
    that has no attrs default, which keeps the field optional in JSON but positional in
    Python. The helper returns the metadata rather than the field so that ``attrs.field``
    stays visible to mypy's attrs plugin, which then still checks required arguments.
    """
    meta = FieldMeta(
        json=json,
        description=description,
        default=crd_default,
        absent=absent,
        format=format,
        minimum=minimum,
        maximum=maximum,
        min_length=min_length,
        max_length=max_length,
        max_items=max_items,
        pattern=pattern,
        enum=enum,
        rules=rules,
        extra=extra,
    )
    return {_FIELD_KEY: meta}


def api_type(description: str, *, rules: tuple[Rule, ...] = ()) -> Callable[[type[_T]], type[_T]]:
    """Class decorator: the type's description in the CRD and its cross-field rules."""

    def mark(cls: type[_T]) -> type[_T]:
        setattr(cls, _TYPE_ATTR, TypeMeta(description, rules))
        return cls

    return mark


def type_meta(cls: type) -> TypeMeta:
    """The :func:`api_type` metadata of ``cls``; TypeError when it was not declared."""
    meta = cls.__dict__.get(_TYPE_ATTR)
    if not isinstance(meta, TypeMeta):
        raise TypeError(f"{cls.__qualname__} is not an API type: decorate it with @api_type")
    return meta


@functools.cache
def field_metas(cls: type) -> Mapping[str, FieldMeta]:
    """Every field's metadata by attribute name, in declaration order, fully resolved."""
    out: dict[str, FieldMeta] = {}
    for field in attrs.fields(cls):
        meta = field.metadata.get(_FIELD_KEY)
        if not isinstance(meta, FieldMeta):
            raise TypeError(
                f"{cls.__qualname__}.{field.name} has no schema: declare it with "
                "attrs.field(metadata=schema(...))"
            )
        has_default = field.default is not attrs.NOTHING
        default = meta.default if meta.default is not NO_VALUE else _json_default(field.default)
        out[field.name] = attrs.evolve(
            meta,
            json=meta.json or _camel(field.name),
            required=not has_default and meta.absent is NO_VALUE,
            default=default,
        )
    return out


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _json_default(value: Any) -> Any:
    """The CRD default for an attrs default: JSON scalars and Enum values; else none."""
    if value is attrs.NOTHING:  # itself an Enum member
        return NO_VALUE
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bool | int | float | str):
        return value
    return NO_VALUE
