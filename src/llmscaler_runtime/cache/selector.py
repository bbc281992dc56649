"""Label selectors evaluated in memory, so cached lists filter like the API server does.

Supports the string syntax (``a=b,c!=d,e in (x,y),f notin (z),g,!h``), a plain
``{key: value}`` map (all must be equal) and the ``LabelSelector`` object form
(``matchLabels`` / ``matchExpressions``) used in workload specs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["LabelSelector", "Requirement", "parse_selector"]

_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^()]*)\)$")
_CMP_RE = re.compile(rf"^({_KEY})\s*(==|!=|=)\s*({_VALUE})$")
_EXISTS_RE = re.compile(rf"^(!?)\s*({_KEY})$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")


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
        """True when every requirement holds for ``labels``."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Match the ``metadata.labels`` of an object."""
        meta = obj.get("metadata") or {}
        return self.matches(meta.get("labels") or {})


def _split_clauses(text: str) -> list[str]:
    clauses: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced parentheses in selector {text!r}")
        if ch == "," and depth == 0:
            clauses.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced parentheses in selector {text!r}")
    clauses.append("".join(current).strip())
    return clauses


def _parse_string(text: str) -> LabelSelector:
    if not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for clause in _split_clauses(text):
        if not clause:
            raise ValueError(f"empty clause in selector {text!r}")
        if m := _SET_RE.match(clause):
            values = [v.strip() for v in m.group(3).split(",")]
            if not values or any(not _VALUE_RE.match(v) for v in values):
                raise ValueError(f"bad value list in selector clause {clause!r}")
            op = "In" if m.group(2) == "in" else "NotIn"
            reqs.append(Requirement(m.group(1), op, frozenset(values)))
        elif m := _CMP_RE.match(clause):
            op = "NotIn" if m.group(2) == "!=" else "In"
            reqs.append(Requirement(m.group(1), op, frozenset([m.group(3)])))
        elif m := _EXISTS_RE.match(clause):
            reqs.append(Requirement(m.group(2), "DoesNotExist" if m.group(1) else "Exists"))
        else:
            raise ValueError(f"cannot parse selector clause {clause!r}")
    return LabelSelector(tuple(reqs))


def _parse_object(sel: Mapping[str, Any]) -> LabelSelector:
    reqs = [
        Requirement(str(k), "In", frozenset([str(v)]))
        for k, v in (sel.get("matchLabels") or {}).items()
    ]
    for expr in sel.get("matchExpressions") or ():
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown matchExpressions operator {op!r}")
        values = frozenset(str(v) for v in expr.get("values") or ())
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"operator {op} needs values")
        reqs.append(Requirement(str(expr.get("key")), op, values))
    return LabelSelector(tuple(reqs))


def parse_selector(selector: str | Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    """Build a LabelSelector from any accepted form; ValueError names the bad clause."""
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return _parse_string(selector)
    if "matchLabels" in selector or "matchExpressions" in selector:
        return _parse_object(selector)
    return LabelSelector(
        tuple(Requirement(str(k), "In", frozenset([str(v)])) for k, v in selector.items())
    )
