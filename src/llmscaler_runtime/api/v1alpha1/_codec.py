"""Strict JSON decoding and encoding of the LLMScaler types, driven by :mod:`.fields`.

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
from typing import Any

import attrs

from .fields import (
    CUSTOM_PROVIDER_RULE,
    FIELDS,
    HEADER_VALUE_RULE,
    HEADERS_FROM_RULE,
    METRICS_RULE,
    MIN_MAX_RULE,
    NO_VALUE,
    TARGET_RULE,
    TYPES,
    FieldMeta,
    Rule,
)
from .types import (
    API_VERSION,
    KIND,
    Condition,
    LLMScaler,
    LLMScalerSpec,
    LLMScalerStatus,
    SpecError,
    parse_target,
)

_INVALID: Any = object()

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


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


# --- Python twins of the CEL rules -------------------------------------------------------
# Each takes the JSON object the rule's ``self`` refers to (after defaulting) and returns a
# problem detail, or None when the rule holds.


def _check_target(value: Any) -> str | None:
    try:
        parse_target(value)
    except SpecError as err:
        return err.problems[0].split(": ", 1)[1]
    return None


def _check_min_max(obj: Mapping[str, Any]) -> str | None:
    lo, hi = obj.get("minReplicas"), obj.get("maxReplicas")
    if isinstance(lo, int) and isinstance(hi, int) and _is_int(lo) and _is_int(hi) and lo > hi:
        return f"{MIN_MAX_RULE.message} (minReplicas {shown(lo)} > maxReplicas {shown(hi)})"
    return None


def _check_custom_provider(obj: Mapping[str, Any]) -> str | None:
    if obj.get("metricProvider") == "Custom" and obj.get("customProvider") is None:
        return CUSTOM_PROVIDER_RULE.message
    return None


def _check_metrics(obj: Mapping[str, Any]) -> str | None:
    if obj.get("metricProvider") == "Custom":
        return None
    metrics = obj.get("metrics")
    if metrics is None or (isinstance(metrics, list) and not metrics):
        return METRICS_RULE.message
    return None


def _check_header_value(obj: Mapping[str, Any]) -> str | None:
    if (obj.get("value") is None) == (obj.get("valueFrom") is None):
        return HEADER_VALUE_RULE.message
    return None


def _check_headers_from(obj: Mapping[str, Any]) -> str | None:
    plain, sourced = obj.get("serverHeaders"), obj.get("serverHeadersFrom")
    if not isinstance(plain, Mapping) or not isinstance(sourced, list):
        return None
    both = sorted(
        {
            h["name"]
            for h in sourced
            if isinstance(h, Mapping) and isinstance(h.get("name"), str) and h["name"] in plain
        }
    )
    if both:
        return f"{HEADERS_FROM_RULE.message} ({', '.join(map(str, both))})"
    return None


RULE_CHECKS: dict[Rule, Callable[[Any], str | None]] = {
    TARGET_RULE: _check_target,
    MIN_MAX_RULE: _check_min_max,
    CUSTOM_PROVIDER_RULE: _check_custom_provider,
    METRICS_RULE: _check_metrics,
    HEADER_VALUE_RULE: _check_header_value,
    HEADERS_FROM_RULE: _check_headers_from,
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rule_path(path: str, rule: Rule) -> str:
    return path + (rule.field_path or "")


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
        if not _is_int(value):
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
    metas = FIELDS[cls]
    hints = type_hints(cls)
    defaulted = dict(value)
    kwargs: dict[str, Any] = {}
    ok = True
    for field in attrs.fields(cls):
        meta = metas[field.name]
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
                    kwargs[field.name] = meta.absent
                continue
        decoded = _decode_value(hints[field.name], meta, raw, fpath, p)
        if decoded is _INVALID:
            ok = False
            continue
        for rule in meta.rules:
            detail = RULE_CHECKS[rule](raw)
            if detail is not None:
                p.add(_rule_path(fpath, rule), detail)
                ok = False
        kwargs[field.name] = decoded
    for rule in TYPES[cls].rules:
        detail = RULE_CHECKS[rule](defaulted)
        if detail is not None:
            p.add(_rule_path(path, rule), detail)
            ok = False
    return cls(**kwargs) if ok else _INVALID


def _raise(p: _Problems) -> None:
    if p:
        raise SpecError(p.items)


def decode_spec(obj: Any, *, path: str = "spec") -> LLMScalerSpec:
    """Strict decoding of an LLMScaler ``spec``."""
    p = _Problems()
    result = decode_object(LLMScalerSpec, obj, path, p)
    _raise(p)
    return typing.cast(LLMScalerSpec, result)


def decode_condition(obj: Any, *, path: str) -> Condition:
    """Strict decoding of one ``metav1.Condition``."""
    p = _Problems()
    result = decode_object(Condition, obj, path, p)
    _raise(p)
    return typing.cast(Condition, result)


def decode_status(obj: Any, *, strict: bool, path: str = "status") -> LLMScalerStatus:
    """Decode ``status``; when not strict, drop whatever is malformed instead of raising."""
    if obj is None:
        return LLMScalerStatus()
    if strict:
        p = _Problems()
        result = decode_object(LLMScalerStatus, obj, path, p)
        _raise(p)
        return typing.cast(LLMScalerStatus, result)
    if not isinstance(obj, Mapping):
        return LLMScalerStatus()
    kwargs: dict[str, Any] = {}
    hints = type_hints(LLMScalerStatus)
    for field in attrs.fields(LLMScalerStatus):
        meta = FIELDS[LLMScalerStatus][field.name]
        raw = obj.get(meta.json)
        if raw is None:
            continue
        if field.name == "conditions":
            kwargs[field.name] = _lenient_conditions(raw, f"{path}.{meta.json}")
            continue
        p = _Problems()
        value = _decode_value(hints[field.name], meta, raw, f"{path}.{meta.json}", p)
        if not p and value is not _INVALID:
            kwargs[field.name] = value
    return LLMScalerStatus(**kwargs)


def _lenient_conditions(raw: Any, path: str) -> tuple[Condition, ...]:
    if not isinstance(raw, list):
        return ()
    seen: set[str] = set()
    kept: list[Condition] = []
    for i, item in enumerate(raw):
        p = _Problems()
        cond = decode_object(Condition, item, f"{path}[{i}]", p)
        if cond is not _INVALID and cond.type not in seen:
            seen.add(cond.type)
            kept.append(cond)
    return tuple(kept)


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


def decode_scaler(obj: Any) -> LLMScaler:
    """Decode a whole LLMScaler object (identity, strict spec, lenient status)."""
    p = _Problems()
    if not isinstance(obj, Mapping):
        raise SpecError([f"object: must be a JSON object, got {json_type(obj)}"])
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
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
    if not _is_int(generation) or generation < 0:
        p.add("metadata.generation", f"must be a non-negative integer, got {shown(generation)}")
        generation = 0
    raw_spec = obj.get("spec")
    spec: Any = _INVALID
    if raw_spec is None:
        p.add("spec", "is required")
    else:
        spec = decode_object(LLMScalerSpec, raw_spec, "spec", p)
    status = decode_status(obj.get("status"), strict=False)
    _raise(p)
    return LLMScaler(
        namespace=namespace,
        name=name,
        uid=uid,
        generation=generation,
        creation_timestamp=created,
        spec=spec,
        status=status,
    )


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
    metas = FIELDS[type(instance)]
    for field in attrs.fields(type(instance)):
        meta = metas[field.name]
        value = getattr(instance, field.name)
        if value is None or (meta.absent is not NO_VALUE and value == meta.absent):
            continue
        if isinstance(value, tuple | Mapping) and not value:
            continue
        out[meta.json] = _encode_value(value)
    return out


def encode_scaler(scaler: LLMScaler) -> dict[str, Any]:
    """A whole LLMScaler object as JSON."""
    metadata: dict[str, Any] = {"name": scaler.name}
    if scaler.namespace:
        metadata["namespace"] = scaler.namespace
    if scaler.uid:
        metadata["uid"] = scaler.uid
    if scaler.generation:
        metadata["generation"] = scaler.generation
    if scaler.creation_timestamp:
        metadata["creationTimestamp"] = scaler.creation_timestamp
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": scaler.spec.to_dict(),
    }
    status = scaler.status.to_dict()
    if status:
        obj["status"] = status
    return obj
