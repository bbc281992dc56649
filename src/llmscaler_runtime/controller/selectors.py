"""Kubernetes label selectors: parsed once, matched against an object's labels.

Accepts the string form used by ``kubectl -l`` / ``labelSelector=`` (``a=b,c!=d,e in (f,g),
h notin (i),j,!k``) and the structured ``metav1.LabelSelector`` form (``matchLabels`` and
``matchExpressions`` with In/NotIn/Exists/DoesNotExist). Malformed input raises ``ValueError``
naming the offending part, at construction rather than on the first event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["LabelSelector", "Requirement", "parse_selector"]

_KEY = r"[A-Za-z0-9](?:[A-Za-z0-9._/-]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
_RE_NOT_EXISTS = re.compile(rf"^!\s*({_KEY})$")
_RE_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^()]*)\)$")
_RE_EQ = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_RE_EXISTS = re.compile(rf"^({_KEY})$")
_RE_VALUE = re.compile(rf"^{_VALUE}$")
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}


@attrs.frozen
class Requirement:
    """One clause; the selector matches when every clause does."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@attrs.frozen
class LabelSelector:
    """A parsed selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"label selector {text!r}: unbalanced ')'")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise ValueError(f"label selector {text!r}: unbalanced '('")
    parts.append("".join(current))
    return parts


def _parse_string(text: str) -> LabelSelector:
    if not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if m := _RE_NOT_EXISTS.match(part):
            reqs.append(Requirement(m.group(1), "DoesNotExist"))
        elif m := _RE_SET.match(part):
            values = [v.strip() for v in m.group(3).split(",")]
            for v in values:
                if not _RE_VALUE.match(v):
                    raise ValueError(f"label selector {text!r}: invalid value {v!r} in {part!r}")
            op = "In" if m.group(2) == "in" else "NotIn"
            reqs.append(Requirement(m.group(1), op, frozenset(values)))
        elif m := _RE_EQ.match(part):
            op = "NotIn" if m.group(2) == "!=" else "In"
            reqs.append(Requirement(m.group(1), op, frozenset([m.group(3)])))
        elif m := _RE_EXISTS.match(part):
            reqs.append(Requirement(m.group(1), "Exists"))
        else:
            raise ValueError(f"label selector {text!r}: cannot parse {part!r}")
    return LabelSelector(tuple(reqs))


def _parse_structured(sel: Mapping[str, Any]) -> LabelSelector:
    unknown = set(sel) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise ValueError(f"label selector: unknown fields {sorted(unknown)}")
    reqs: list[Requirement] = []
    for key, value in (sel.get("matchLabels") or {}).items():
        if not isinstance(value, str):
            raise ValueError(f"label selector: matchLabels[{key!r}] must be a string")
        reqs.append(Requirement(str(key), "In", frozenset([value])))
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        where = f"label selector: matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            raise ValueError(f"{where} must be an object")
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not key:
            raise ValueError(f"{where}.key must be a non-empty string")
        if op not in _OPERATORS:
            raise ValueError(f"{where}.operator must be one of {sorted(_OPERATORS)}, got {op!r}")
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"{where}: operator {op} needs values")
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"{where}: operator {op} takes no values")
        reqs.append(Requirement(key, op, frozenset(str(v) for v in values)))
    return LabelSelector(tuple(reqs))


def parse_selector(selector: str | Mapping[str, Any] | LabelSelector) -> LabelSelector:
    """Parse either selector form (a parsed one is returned as is)."""
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return _parse_string(selector)
    if isinstance(selector, Mapping):
        return _parse_structured(selector)
    raise TypeError(f"label selector must be a str or a mapping, got {type(selector).__name__}")
