"""Variants: the LLMScaler specs a simulation compares, and the baselines set beside them.

A variant is a whole LLMScaler object, validated by the project's own decoder
(:meth:`LLMScaler.from_dict`), so a spec the CRD would reject fails here with the decoder's
field paths instead of producing figures for a scaler that could never exist.

``--set path=v1,v2`` overrides any spec field by its camelCase path as written in YAML
(``scaleDown.stabilizationWindowSeconds``, ``metrics[0].target``); each value is read as YAML
(``0`` is a number, ``None`` the string the behavior field takes), except that a field the API
declares as a string keeps the text as written, so the quoted numbers (``metrics[0].target``,
``scaleUp.tolerance``) take ``--set scaleUp.tolerance=0,0.1`` without quotes. Several ``--set``
options give the cross product of their values.
"""

from __future__ import annotations

import copy
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


def parse_set(text: str) -> tuple[str, list[Any]]:
    """``path=v1,v2`` -> (path, [v1, v2]) with each value read as YAML, or kept as text where
    the API declares a string (see the module docstring)."""
    path, eq, raw = text.partition("=")
    path = path.strip()
    if not eq or not path:
        raise VariantError(f"--set {text!r}: expected path=value[,value...]")
    path = path.removeprefix("spec.")
    textual = _is_string_field(path)
    values: list[Any] = []
    for part in _split_values(raw):
        try:
            value = yaml.safe_load(part) if part.strip() else ""
        except yaml.YAMLError:
            value = part
        if textual and isinstance(value, int | float) and not isinstance(value, bool):
            value = part.strip()  # "0.10" stays "0.10", not the float 0.1 re-printed
        values.append(value)
    return path, values


@functools.cache
def _spec_schema() -> Mapping[str, Any]:
    spec: Mapping[str, Any] = openapi_schema()["properties"]["spec"]
    return spec


def _is_string_field(path: str) -> bool:
    """Whether ``spec.<path>`` is a string in the CRD's schema (False for an unknown path,
    which then fails validation with the decoder's own message)."""
    try:
        segs = _segments(path)
    except VariantError:
        return False
    node: Mapping[str, Any] = _spec_schema()
    for seg in segs:
        child = node.get("items") if isinstance(seg, int) else node.get("properties", {}).get(seg)
        if not isinstance(child, Mapping):
            return False
        node = child
    return node.get("type") == "string"


def _segments(path: str) -> list[str | int]:
    segs: list[str | int] = []
    for part in path.replace("]", "").replace("[", ".").split("."):
        if not part:
            raise VariantError(f"--set path {path!r}: empty segment")
        segs.append(int(part) if part.isdigit() else part)
    return segs


def apply_override(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of the scaler object with ``spec.<path>`` set to ``value`` (parents created)."""
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
