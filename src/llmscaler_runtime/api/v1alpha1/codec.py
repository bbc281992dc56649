"""Strict JSON decoding and encoding of the API types, driven by their own field metadata.

The functions here know no particular type: :func:`decode` and :func:`encode` read each
attrs field's :func:`~._meta.schema` and each type's :func:`~._meta.api_type`, so the API
types (:mod:`.types`) build their ``from_dict``/``to_dict`` on this module and this module
never imports them. Dependencies run one way: ``_meta`` <- ``codec`` <- ``types`` <- ``crd``.

The decoder visits the whole object and collects every problem before raising, so one
status condition can list all the fixes a user needs. It applies the CRD's defaults and the
Python twins of the CRD's CEL rules, because CRD validation may not have run on the object
(an older cluster, or an object stored before the rule existed).
"""

from __future__ import annotations

import copy
import datetime
import re
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from functools import cache
from typing import Any, TypeGuard, TypeVar

import attrs

from ._meta import NO_VALUE, FieldMeta, Rule, field_metas, type_meta

_T = TypeVar("_T")

_INVALID: Any = object()

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class SpecError(ValueError):
    """An LLMScaler (or part of one) that breaks the API's rules.

    ``problems`` lists every violation found, each as ``"<json path>: <what is wrong>"``, so a
    status condition or an error message can tell the user everything to fix in one round.
    """

    def __init__(self, problems: list[str] | tuple[str, ...]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("; ".join(self.problems) if self.problems else "invalid LLMScaler")


class _Problems:
    """Collects ``"path: message"`` strings in the order they were found."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")

    def __bool__(self) -> bool:
        return bool(self.items)


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value, for error messages a user recognises."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxlong, _SHOWN.maxother = 3, 60, 40, 60
_SHOWN.maxlist = _SHOWN.maxdict = 4


def shown(value: Any) -> str:
    """A short ``repr`` of a bad value for a problem message.

    A plain ``repr`` of a value nested thousands deep raises RecursionError, and one of a
    megabyte string makes a megabyte condition message; neither helps the user fix the field.
    """
    return _SHOWN.repr(value)


@cache
def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def unwrap_optional(hint: Any) -> Any:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def is_rfc3339(value: str) -> bool:
    """Whether ``value`` is an RFC 3339 date-time (the OpenAPI ``date-time`` format)."""
    if not _RFC3339.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def is_int(value: Any) -> TypeGuard[int]:
    """Whether a decoded JSON value is an integer (a bool is not, though Python says so)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _rule_path(path: str, rule: Rule) -> str:
    return path + (rule.field_path or "")


def api_types(*roots: type) -> tuple[type, ...]:
    """``roots`` and every API type their fields hold, each once, outermost first."""
    found: dict[type, None] = {}

    def visit(hint: Any) -> None:
        hint = unwrap_optional(hint)
        if attrs.has(hint):
            if hint not in found:
                found[hint] = None
                for sub in type_hints(hint).values():
                    visit(sub)
            return
        for arg in typing.get_args(hint):
            visit(arg)

    for root in roots:
        visit(root)
    return tuple(found)


# --- decoding ------------------------------------------------------------------------------


def _decode_scalar(hint: Any, meta: FieldMeta | None, value: Any, path: str, p: _Problems) -> Any:
    if isinstance(hint, type) and issubclass(hint, Enum):
        allowed = [m.value for m in hint]
        if not isinstance(value, str) or value not in allowed:
            p.add(path, f"must be one of {', '.join(allowed)}, got {shown(value)}")
            return _INVALID
        return hint(value)
    if hint is bool:
        if not isinstance(value, bool):
            p.add(path, f"must be a boolean, got {json_type(value)}")
            return _INVALID
        return value
    if hint is int:
        if not is_int(value):
            p.add(path, f"must be an integer, got {json_type(value)} {shown(value)}")
            return _INVALID
        fmt = meta.format if meta else None
        if fmt in _INT_RANGES:
            lo, hi = _INT_RANGES[fmt]
            if not lo <= value <= hi:
                p.add(path, f"{shown(value)} does not fit in {fmt}")
                return _INVALID
        if meta and meta.minimum is not None and value < meta.minimum:
            p.add(path, f"must be at least {meta.minimum}, got {value}")
            return _INVALID
        if meta and meta.maximum is not None and value > meta.maximum:
            p.add(path, f"must be at most {meta.maximum}, got {value}")
            return _INVALID
        return value
    if hint is str:
        if not isinstance(value, str):
            p.add(path, f"must be a string, got {json_type(value)}")
            return _INVALID
        return _check_string(meta, value, path, p)
    raise TypeError(f"no decoder for {hint!r} at {path}")


def _check_string(meta: FieldMeta | None, value: str, path: str, p: _Problems) -> Any:
    if meta is None:
        return value
    bad = False
    if meta.min_length is not None and len(value) < meta.min_length:
        p.add(path, "must not be empty" if meta.min_length == 1 else "is too short")
        bad = True
    if meta.max_length is not None and len(value) > meta.max_length:
        p.add(path, f"must be at most {meta.max_length} characters, got {len(value)}")
        bad = True
    if meta.pattern is not None and not bad and not re.search(meta.pattern, value):
        p.add(path, f"{shown(value)} does not match {meta.pattern}")
        bad = True
    if meta.enum is not None and value not in meta.enum:
        p.add(path, f"must be one of {', '.join(meta.enum)}, got {shown(value)}")
        bad = True
    if meta.format == "date-time" and not is_rfc3339(value):
        p.add(path, f"{shown(value)} is not an RFC 3339 date-time")
        bad = True
    return _INVALID if bad else value


def _decode_value(hint: Any, meta: FieldMeta | None, value: Any, path: str, p: _Problems) -> Any:
    hint = unwrap_optional(hint)
    if attrs.has(hint):
        return decode_object(hint, value, path, p)
    origin = typing.get_origin(hint)
    if origin is tuple:
        return _decode_list(typing.get_args(hint)[0], meta, value, path, p)
    if origin is Mapping:
        if not isinstance(value, Mapping):
            p.add(path, f"must be an object of strings, got {json_type(value)}")
            return _INVALID
        ok = True
        for key, item in value.items():
            if not isinstance(item, str):
                p.add(f"{path}.{key}", f"must be a string, got {json_type(item)}")
                ok = False
        return dict(value) if ok else _INVALID
    return _decode_scalar(hint, meta, value, path, p)


def _decode_list(elem: Any, meta: FieldMeta | None, value: Any, path: str, p: _Problems) -> Any:
    if not isinstance(value, list):
        p.add(path, f"must be an array, got {json_type(value)}")
        return _INVALID
    ok = True
    if meta is not None and meta.max_items is not None and len(value) > meta.max_items:
        p.add(path, f"must have at most {meta.max_items} items, got {len(value)}")
        ok = False
    items = []
    for i, raw in enumerate(value):
        item = _decode_value(elem, None, raw, f"{path}[{i}]", p)
        ok = ok and item is not _INVALID
        items.append(item)
    map_keys = dict(meta.extra).get("x-kubernetes-list-map-keys") if meta else None
    if ok and map_keys:
        seen: set[tuple[Any, ...]] = set()
        for i, raw in enumerate(value):
            key = tuple(raw.get(k) for k in map_keys)
            if key in seen:
                p.add(f"{path}[{i}]", f"duplicate entry for {', '.join(map(str, key))}")
                ok = False
            seen.add(key)
    return tuple(items) if ok else _INVALID


def decode_object(cls: type, value: Any, path: str, p: _Problems) -> Any:
    """Decode one attrs type from its JSON object, adding problems to ``p``.

    Unknown keys are ignored, as the API server prunes them from structural schemas.
    Returns ``_INVALID`` when anything in the object is wrong.
    """
    if not isinstance(value, Mapping):
        p.add(path, f"must be an object, got {json_type(value)}")
        return _INVALID
    metas = field_metas(cls)
    hints = type_hints(cls)
    defaulted = dict(value)
    kwargs: dict[str, Any] = {}
    ok = True
    for name, meta in metas.items():
        fpath = f"{path}.{meta.json}"
        raw = value.get(meta.json)
        if raw is None:
            if meta.default is not NO_VALUE:
                raw = copy.deepcopy(meta.default)
                defaulted[meta.json] = raw
            elif meta.required:
                p.add(fpath, "is required")
                ok = False
                continue
            else:
                if meta.absent is not NO_VALUE:
                    kwargs[name] = meta.absent
                continue
        decoded = _decode_field(hints[name], meta, raw, fpath, p)
        if decoded is _INVALID:
            ok = False
            continue
        kwargs[name] = decoded
    for rule in type_meta(cls).rules:
        detail = rule.check(defaulted)
        if detail is not None:
            p.add(_rule_path(path, rule), detail)
            ok = False
    return cls(**kwargs) if ok else _INVALID


def _decode_field(hint: Any, meta: FieldMeta, raw: Any, path: str, p: _Problems) -> Any:
    """A present field's value, checked against its type, bounds and rules."""
    decoded = _decode_value(hint, meta, raw, path, p)
    if decoded is _INVALID:
        return _INVALID
    for rule in meta.rules:
        detail = rule.check(raw)
        if detail is not None:
            p.add(_rule_path(path, rule), detail)
            decoded = _INVALID
    return decoded


def _raise(p: _Problems) -> None:
    if p:
        raise SpecError(p.items)


def decode(cls: type[_T], obj: Any, *, path: str, strict: bool = True) -> _T:
    """Decode the JSON object ``obj`` as the API type ``cls``.

    Strictly, every problem is collected and raised as one :class:`SpecError`. With
    ``strict=False`` whatever is malformed is dropped instead: a bad field takes its default,
    a list of objects keeps its valid entries (the first of each list-map key), and anything
    but an object gives ``cls()``. That suits what the controller owns and rewrites, such as
    the status, which must never stop the scaler from working. Type-level rules are not
    checked then, since dropping a field cannot repair them; ``cls`` must have none.
    """
    if not strict:
        return typing.cast(_T, _decode_lenient(cls, obj, path))
    p = _Problems()
    result = decode_object(cls, obj, path, p)
    _raise(p)
    return typing.cast(_T, result)


def _decode_lenient(cls: type, value: Any, path: str) -> Any:
    if type_meta(cls).rules:
        raise TypeError(f"{cls.__qualname__} has type rules; it cannot be decoded leniently")
    if not isinstance(value, Mapping):
        return cls()
    kwargs: dict[str, Any] = {}
    hints = type_hints(cls)
    for name, meta in field_metas(cls).items():
        raw = value.get(meta.json)
        if raw is None:
            continue
        fpath = f"{path}.{meta.json}"
        hint = unwrap_optional(hints[name])
        if typing.get_origin(hint) is tuple:
            kwargs[name] = _lenient_items(typing.get_args(hint)[0], meta, raw, fpath)
            continue
        p = _Problems()
        decoded = _decode_field(hint, meta, raw, fpath, p)
        if not p and decoded is not _INVALID:
            kwargs[name] = decoded
    return cls(**kwargs)


def _lenient_items(elem: Any, meta: FieldMeta, raw: Any, path: str) -> tuple[Any, ...]:
    if not isinstance(raw, list):
        return ()
    map_keys = dict(meta.extra).get("x-kubernetes-list-map-keys") or ()
    seen: set[tuple[Any, ...]] = set()
    kept: list[Any] = []
    for i, item in enumerate(raw):
        decoded = _decode_value(elem, None, item, f"{path}[{i}]", _Problems())
        if decoded is _INVALID:
            continue
        if map_keys and isinstance(item, Mapping):
            key = tuple(item.get(k) for k in map_keys)
            if key in seen:
                continue
            seen.add(key)
        kept.append(decoded)
    return tuple(kept)


# --- whole objects -------------------------------------------------------------------------
# A resource type is an attrs class with the identity fields below, taken from ``metadata``,
# plus ``spec`` (decoded strictly) and ``status`` (decoded leniently).


def _metadata_str(md: Mapping[str, Any], key: str, p: _Problems, *, required: bool) -> str:
    value = md.get(key)
    if value is None:
        if required:
            p.add(f"metadata.{key}", "is required")
        return ""
    if not isinstance(value, str):
        p.add(f"metadata.{key}", f"must be a string, got {json_type(value)}")
        return ""
    if required and not value:
        p.add(f"metadata.{key}", "must not be empty")
    return value


def decode_resource(cls: type[_T], obj: Any, *, api_version: str, kind: str) -> _T:
    """Decode a whole object as the API server returns it (identity, strict spec, lenient
    status); raises :class:`SpecError` listing every problem.

    Metadata other than ``name`` is optional so manifests on disk parse too.
    """
    p = _Problems()
    if not isinstance(obj, Mapping):
        raise SpecError([f"object: must be a JSON object, got {json_type(obj)}"])
    for key, expected in (("apiVersion", api_version), ("kind", kind)):
        got = obj.get(key)
        if got is not None and got != expected:
            p.add(key, f"must be {expected}, got {shown(got)}")
    md = obj.get("metadata")
    if not isinstance(md, Mapping):
        p.add("metadata", f"must be an object, got {json_type(md)}")
        md = {}
    name = _metadata_str(md, "name", p, required=True)
    namespace = _metadata_str(md, "namespace", p, required=False)
    uid = _metadata_str(md, "uid", p, required=False)
    created = _metadata_str(md, "creationTimestamp", p, required=False)
    generation = md.get("generation", 0)
    if generation is None:
        generation = 0
    if not is_int(generation) or generation < 0:
        p.add("metadata.generation", f"must be a non-negative integer, got {shown(generation)}")
        generation = 0
    resource_type: type = cls
    hints = type_hints(resource_type)
    raw_spec = obj.get("spec")
    spec: Any = _INVALID
    if raw_spec is None:
        p.add("spec", "is required")
    else:
        spec = decode_object(unwrap_optional(hints["spec"]), raw_spec, "spec", p)
    status = _decode_lenient(hints["status"], obj.get("status"), "status")
    _raise(p)
    return typing.cast(Callable[..., _T], cls)(
        namespace=namespace,
        name=name,
        uid=uid,
        generation=generation,
        creation_timestamp=created,
        spec=spec,
        status=status,
    )


def encode_resource(resource: Any, *, api_version: str, kind: str) -> dict[str, Any]:
    """A whole object as JSON, with unset metadata left out."""
    metadata: dict[str, Any] = {"name": resource.name}
    if resource.namespace:
        metadata["namespace"] = resource.namespace
    if resource.uid:
        metadata["uid"] = resource.uid
    if resource.generation:
        metadata["generation"] = resource.generation
    if resource.creation_timestamp:
        metadata["creationTimestamp"] = resource.creation_timestamp
    obj: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": metadata,
        "spec": encode(resource.spec),
    }
    status = encode(resource.status)
    if status:
        obj["status"] = status
    return obj


# --- encoding ------------------------------------------------------------------------------


def _encode_value(value: Any) -> Any:
    if attrs.has(type(value)):
        return encode(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_encode_value(v) for v in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


def encode(instance: Any) -> dict[str, Any]:
    """camelCase JSON of an API type; None, empty collections and absent markers are omitted."""
    out: dict[str, Any] = {}
    cls: type = type(instance)
    for name, meta in field_metas(cls).items():
        value = getattr(instance, name)
        if value is None or (meta.absent is not NO_VALUE and value == meta.absent):
            continue
        if isinstance(value, tuple | Mapping) and not value:
            continue
        out[meta.json] = _encode_value(value)
    return out
