"""Variants: the LLMScaler specs a simulation compares, and the baselines set beside them.

A variant is a whole LLMScaler object, validated by the project's own decoder
(:meth:`LLMScaler.from_dict`), so a spec the CRD would reject fails here with the decoder's
field paths instead of producing figures for a scaler that could never exist.

``--set path=v1,v2`` overrides any spec field by its camelCase path as written in YAML
(``scaleDown.stabilizationWindowSeconds``, ``metrics[0].target``). Several ``--set`` options
give the cross product of their values.

Paths and spec files are checked against the CRD's own schema
(:func:`llmscaler_runtime.api.v1alpha1.crd.openapi_schema`, rendered from the API types' field
metadata), the way ``kubectl`` with strict field validation checks a manifest: a field the API
does not have is an error naming it and the closest field that exists, not a silently ignored
key (the decoder prunes unknown keys, as the API server does, so ``scaleDwn.x=0`` would
otherwise run the plain spec under a misleading label). Reading the schema rather than a list
means fields added to the API are accepted as soon as they are declared. Each value takes the
field's declared type: a string field takes the text as written (``metrics[0].target=0.5`` is
the string ``"0.5"``; one pair of surrounding quotes is removed), any other field reads it as
YAML (``0`` is an integer, ``true`` a boolean, ``{a: 1}`` an object) and the decoder then
checks it.
"""

from __future__ import annotations

import copy
import difflib
import functools
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, LLMScaler, MetricProvider, SpecError
from llmscaler_runtime.api.v1alpha1.crd import openapi_schema

__all__ = [
    "BASELINES",
    "Variant",
    "VariantError",
    "apply_override",
    "build_variants",
    "load_scaler",
    "parse_set",
    "resolve_path",
    "unknown_fields",
]

#: Baselines run beside the user's variants, as overrides of the first spec.
BASELINES: Mapping[str, Mapping[str, Any]] = {
    # The HPA's defaults: 300 s scale-down stabilization, no step cap, no victim hints, the
    # 10 % dead band both ways (--horizontal-pod-autoscaler-tolerance) and no scale-up window.
    "hpa-defaults": {
        "scaleDown.stabilizationWindowSeconds": 300,
        "scaleDown.maxStepReplicas": 0,
        "scaleDown.behavior": "None",
        "scaleUp.tolerance": "0.1",
        "scaleDown.tolerance": "0.1",
        "scaleUp.stabilizationWindowSeconds": 0,
        "scaleUp.maxStepReplicas": 0,
    },
    # The spec as given, with cache-aware scale-down off: what the victim hints are worth.
    "cache-aware-off": {"scaleDown.behavior": "None"},
}


class VariantError(ValueError):
    """A spec file, an override or the spec they produce cannot be simulated."""


@attrs.frozen
class Variant:
    """One scaler to simulate: its name in the report, the object, and how it was derived."""

    name: str
    obj: Mapping[str, Any]
    scaler: LLMScaler
    overrides: Mapping[str, Any] = attrs.field(factory=dict)
    baseline: bool = False


def load_scaler(path: str | Path) -> dict[str, Any]:
    """An LLMScaler object from YAML: a whole manifest, or just its ``spec`` mapping."""
    path = Path(path)
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except OSError as exc:
        raise VariantError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise VariantError(f"{path}: not valid YAML: {exc}") from None
    scalers = [d for d in docs if isinstance(d, dict) and d.get("kind") == KIND]
    if len(scalers) > 1:
        raise VariantError(f"{path}: holds {len(scalers)} LLMScalers; give one per file")
    if scalers:
        obj = copy.deepcopy(scalers[0])
    elif len(docs) == 1 and isinstance(docs[0], dict) and "targetRef" in docs[0]:
        obj = {"apiVersion": API_VERSION, "kind": KIND, "spec": copy.deepcopy(docs[0])}
    else:
        raise VariantError(f"{path}: no LLMScaler object (nor a spec mapping with targetRef)")
    unknown = unknown_fields(obj)
    if unknown:
        raise VariantError(f"{path}: {'; '.join(unknown)}")
    meta = obj.setdefault("metadata", {})
    meta.setdefault("name", path.stem)
    meta.setdefault("namespace", "default")
    return obj


def _split_values(text: str) -> list[str]:
    """Split on commas outside brackets and quotes, so a PromQL value survives intact."""
    out, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return out


@functools.cache
def _object_schema() -> Mapping[str, Any]:
    """The CRD's ``openAPIV3Schema``, rendered once from the API types."""
    return openapi_schema()


def _closest(name: str, choices: Sequence[str]) -> str:
    by_lower = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[match[0]]!r}?" if match else ""


def _child(schema: Mapping[str, Any], key: str | int) -> Mapping[str, Any] | str | None:
    """The schema of ``key`` below ``schema``: a mapping, ``None`` when anything goes there
    (a free-form object such as ``metadata``), or a string saying why ``key`` cannot be."""
    if isinstance(key, int):
        if schema.get("type") != "array":
            return "is not a list"
        return dict(schema.get("items") or {})
    if schema.get("type") not in (None, "object"):
        return f"is a {schema.get('type')}, not an object with fields"
    props = schema.get("properties")
    if props is not None:
        if key not in props:
            return f"has no field {key!r}{_closest(key, list(props))} (it has: {', '.join(props)})"
        return dict(props[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return dict(extra)
    return None


def _join(prefix: str, key: str | int) -> str:
    return f"{prefix}[{key}]" if isinstance(key, int) else f"{prefix}.{key}" if prefix else key


def resolve_path(path: str) -> Mapping[str, Any] | None:
    """The CRD schema of ``spec.<path>`` (None: a free-form value); :class:`VariantError`
    naming the first segment the API does not have, and the field closest to it."""
    node: Mapping[str, Any] | None = _object_schema()["properties"]["spec"]
    where = "spec"
    for seg in _segments(path):
        if node is None:
            return None
        child = _child(node, seg)
        if isinstance(child, str):
            raise VariantError(f"--set {path}: {where} {child}")
        node, where = child, _join(where, seg)
    return node


def unknown_fields(obj: Any, schema: Mapping[str, Any] | None = None, where: str = "") -> list[str]:
    """Every key in ``obj`` the LLMScaler schema does not declare, as ``kubectl``'s strict
    field validation names them (``unknown field "spec.bogusField"``), with a suggestion."""
    schema = _object_schema() if schema is None else schema
    found: list[str] = []
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            child = _child(schema, str(key))
            if isinstance(child, str):
                props = list(schema.get("properties") or ())
                if props:  # a value of the wrong type is the decoder's to report
                    found.append(f'unknown field "{_join(where, key)}"{_closest(str(key), props)}')
            elif child is not None:
                found.extend(unknown_fields(value, child, _join(where, key)))
    elif isinstance(obj, list) and schema.get("type") == "array":
        items = dict(schema.get("items") or {})
        for i, value in enumerate(obj):
            found.extend(unknown_fields(value, items, _join(where, i)))
    return found


def _unquoted(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _typed(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """``raw`` as the field's declared type (see module docstring)."""
    if schema is not None and schema.get("type") == "string":
        return _unquoted(raw.strip())
    if not raw.strip():
        return ""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def parse_set(text: str) -> tuple[str, list[Any]]:
    """``path=v1,v2`` -> (path, [v1, v2]), the path checked against the CRD's schema and each
    value read as the field's type (see module docstring)."""
    path, eq, raw = text.partition("=")
    path = path.strip().removeprefix("spec.")
    if not eq or not path:
        raise VariantError(f"--set {text!r}: expected path=value[,value...]")
    schema = resolve_path(path)
    return path, [_typed(part, schema) for part in _split_values(raw)]


def _segments(path: str) -> list[str | int]:
    segs: list[str | int] = []
    for part in path.replace("]", "").replace("[", ".").split("."):
        if not part:
            raise VariantError(f"--set path {path!r}: empty segment")
        segs.append(int(part) if part.isdigit() else part)
    return segs


def apply_override(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of the scaler object with ``spec.<path>`` set to ``value``; the path must exist
    in the schema (:func:`resolve_path`), its missing parent objects are created."""
    resolve_path(path)
    out = copy.deepcopy(dict(obj))
    node: Any = out.setdefault("spec", {})
    segs = _segments(path)
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if isinstance(seg, int):
            if not isinstance(node, list) or seg >= len(node):
                raise VariantError(f"--set {path}: there is no item [{seg}] at that path")
            if last:
                node[seg] = value
            else:
                node = node[seg]
            continue
        if not isinstance(node, dict):
            raise VariantError(f"--set {path}: {seg!r} is below a value that is not a mapping")
        if last:
            node[seg] = value
        else:
            node = node.setdefault(seg, [] if isinstance(segs[i + 1], int) else {})
    return out


def _validated(name: str, obj: Mapping[str, Any]) -> LLMScaler:
    unknown = unknown_fields(obj)
    if unknown:
        raise VariantError(f"variant {name!r}: {'; '.join(unknown)}")
    try:
        scaler = LLMScaler.from_dict(dict(obj))
    except SpecError as exc:
        problems = "; ".join(exc.problems or (str(exc),))
        raise VariantError(
            f"variant {name!r}: the CRD would reject this spec: {problems}"
        ) from None
    if scaler.spec.metric_provider != MetricProvider.PROMETHEUS:
        raise VariantError(
            f"variant {name!r}: metricProvider {scaler.spec.metric_provider.value} cannot be "
            "simulated (a decision server's answers depend on its own model, not on the series); "
            "only Prometheus scalers can"
        )
    return scaler


#: Short names for the fields most often varied, so the report's variant column stays narrow.
_SHORT = {
    "stabilizationWindowSeconds": "window",
    "maxStepReplicas": "maxStep",
    "tolerance": "tol",
    "deletionCostQuery": "costQuery",
    "syncPeriodSeconds": "sync",
}


def _label(overrides: Mapping[str, Any]) -> str:
    parts = []
    for path, value in overrides.items():
        field = path.rsplit(".", 1)[-1]
        parts.append(f"{_SHORT.get(field, field)}={value}")
    return ", ".join(parts)


def build_variants(
    scalers: Sequence[tuple[str, Mapping[str, Any]]],
    sets: Sequence[str] = (),
    *,
    baselines: bool = True,
) -> list[Variant]:
    """The variants to run: each spec crossed with the ``--set`` values, then the baselines
    (derived from the first spec). Raises :class:`VariantError` naming the bad input."""
    if not scalers:
        raise VariantError("no spec given")
    parsed = [parse_set(s) for s in sets]
    combos: list[dict[str, Any]] = [
        dict(zip([p for p, _ in parsed], values))
        for values in itertools.product(*[v for _, v in parsed])
    ]
    out: list[Variant] = []
    for base_name, base in scalers:
        for combo in combos:
            obj: Mapping[str, Any] = base
            for path, value in combo.items():
                obj = apply_override(obj, path, value)
            name = (
                base_name
                if not combo
                else (_label(combo) if len(scalers) == 1 else f"{base_name}: {_label(combo)}")
            )
            out.append(Variant(name, obj, _validated(name, obj), combo))
    if baselines:
        first = scalers[0][1]
        for name, overrides in BASELINES.items():
            obj = first
            for path, value in overrides.items():
                obj = apply_override(obj, path, value)
            out.append(Variant(name, obj, _validated(name, obj), dict(overrides), baseline=True))
    names = [v.name for v in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise VariantError(
            f"two variants share the name {dupes[0]!r}; give the spec files different names"
        )
    return out
