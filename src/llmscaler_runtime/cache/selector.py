"""Kubernetes label selectors, parsed once and matched in memory like the API server does.

The one selector implementation of the framework: cached lists (``InformerCache.list``) and
controller predicates (``llmscaler_runtime.controller.label_selector_predicate``, which
re-exports these names) share it, so a selector means the same thing everywhere.

Accepted forms:

- the string syntax of ``kubectl -l`` / ``labelSelector=``:
  ``a=b,c!=d,e in (x,y),f notin (z),g,!h`` (``=`` and ``==`` are the same; an empty value is
  legal, ``app=`` matches an empty ``app`` label);
- the structured ``metav1.LabelSelector`` form: ``matchLabels`` and ``matchExpressions`` with
  In/NotIn/Exists/DoesNotExist, validated strictly (unknown fields, non-string values, missing
  or superfluous ``values`` are errors);
- a plain ``{key: value}`` map (every pair must match), as ``matchLabels`` alone;
- ``None`` or an empty string/map: matches everything.

Malformed input raises ``ValueError`` naming the bad part — at setup, not on the first event;
a value of the wrong type raises ``TypeError``.

:func:`format_selector` goes the other way, from the structured form to the string a list request
takes (``labelSelector=``), so the grammar is written down in this one module both ways.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["LabelSelector", "Requirement", "format_selector", "parse_selector"]

_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^()]*)\)$")
_CMP_RE = re.compile(rf"^({_KEY})\s*(==|!=|=)\s*({_VALUE})$")
_EXISTS_RE = re.compile(rf"^(!?)\s*({_KEY})$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_STRUCTURED_FIELDS = frozenset({"matchLabels", "matchExpressions"})


@attrs.frozen
class Requirement:
    """One clause: ``operator`` is In, NotIn, Exists or DoesNotExist."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes semantics: NotIn and != also match when the key is absent."""
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@attrs.frozen
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True when every requirement holds for ``labels`` (None: no labels)."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Match the ``metadata.labels`` of an object."""
        meta = obj.get("metadata") or {}
        return self.matches(meta.get("labels") or {})


def _split_clauses(text: str) -> list[str]:
    """Split on the commas outside parentheses (``a in (x,y),b`` is two clauses)."""
    clauses: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"label selector {text!r}: unbalanced ')'")
        if ch == "," and depth == 0:
            clauses.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise ValueError(f"label selector {text!r}: unbalanced '('")
    clauses.append("".join(current).strip())
    return clauses


def _parse_string(text: str) -> LabelSelector:
    if not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for clause in _split_clauses(text):
        if not clause:
            raise ValueError(f"label selector {text!r}: empty clause")
        if m := _SET_RE.match(clause):
            if not m.group(3).strip():
                # as the API server: "values set can't be empty" ("in (x,)" is {x, ""}, fine)
                raise ValueError(f"label selector {text!r}: empty value set in {clause!r}")
            values = [v.strip() for v in m.group(3).split(",")]
            for v in values:
                if not _VALUE_RE.match(v):
                    raise ValueError(f"label selector {text!r}: invalid value {v!r} in {clause!r}")
            op = "In" if m.group(2) == "in" else "NotIn"
            reqs.append(Requirement(m.group(1), op, frozenset(values)))
        elif m := _CMP_RE.match(clause):
            op = "NotIn" if m.group(2) == "!=" else "In"
            reqs.append(Requirement(m.group(1), op, frozenset([m.group(3)])))
        elif m := _EXISTS_RE.match(clause):
            reqs.append(Requirement(m.group(2), "DoesNotExist" if m.group(1) else "Exists"))
        else:
            raise ValueError(f"label selector {text!r}: cannot parse {clause!r}")
    return LabelSelector(tuple(reqs))


def _equality_requirements(labels: Mapping[Any, Any], where: str) -> list[Requirement]:
    reqs: list[Requirement] = []
    for key, value in labels.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"{where}: keys must be non-empty strings, got {key!r}")
        if not isinstance(value, str):
            raise ValueError(f"{where}[{key!r}] must be a string, got {value!r}")
        reqs.append(Requirement(key, "In", frozenset([value])))
    return reqs


def _parse_structured(sel: Mapping[str, Any]) -> LabelSelector:
    unknown = set(sel) - _STRUCTURED_FIELDS
    if unknown:
        raise ValueError(f"label selector: unknown fields {sorted(unknown)}")
    match_labels = sel.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise ValueError("label selector: matchLabels must be an object")
    reqs = _equality_requirements(match_labels, "label selector: matchLabels")
    expressions = sel.get("matchExpressions") or []
    if not isinstance(expressions, list | tuple):
        raise ValueError("label selector: matchExpressions must be a list")
    for i, expr in enumerate(expressions):
        where = f"label selector: matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            raise ValueError(f"{where} must be an object")
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not key:
            raise ValueError(f"{where}.key must be a non-empty string")
        if op not in _OPERATORS:
            raise ValueError(f"{where}.operator must be one of {list(_OPERATORS)}, got {op!r}")
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"{where}: operator {op} needs values")
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"{where}: operator {op} takes no values")
        reqs.append(Requirement(key, op, frozenset(str(v) for v in values)))
    return LabelSelector(tuple(reqs))


def parse_selector(selector: str | Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    """Build a LabelSelector from any accepted form (a parsed one is returned as is)."""
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return _parse_string(selector)
    if isinstance(selector, Mapping):
        if _STRUCTURED_FIELDS & set(selector):
            return _parse_structured(selector)
        return LabelSelector(tuple(_equality_requirements(selector, "label selector")))
    raise TypeError(f"label selector must be a str or a mapping, got {type(selector).__name__}")


def format_selector(selector: Mapping[str, Any] | None) -> str:
    """A structured ``metav1.LabelSelector`` as the string form list requests take.

    ``matchLabels`` come first in key order, then ``matchExpressions`` in their given order, each
    with its values sorted, so the same selector always gives the same text (and the same request).
    ``None`` or an empty selector gives ``""``, which selects everything: a caller to whom that
    would be a mistake must check for it. An operator Kubernetes does not define raises
    ``ValueError`` rather than being dropped, since dropping a clause widens the selection.
    """
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        key = expr.get("key")
        op = expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or ()))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            raise ValueError(f"unknown label selector operator {op!r}")
    return ",".join(parts)
