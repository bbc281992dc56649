"""Label and field selectors with the grammar and error messages of apimachinery."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import bad_request

Requirement = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split_top(selector: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def _eq(key: str, val: str, negate: bool) -> Requirement:
    def check(lb: Mapping[str, str]) -> bool:
        return (lb.get(key) != val) if negate else (key in lb and lb[key] == val)

    return check


def _in(key: str, values: set[str], negate: bool) -> Requirement:
    def check(lb: Mapping[str, str]) -> bool:
        return (lb.get(key) not in values) if negate else (lb.get(key) in values)

    return check


def _exists(key: str, negate: bool) -> Requirement:
    def check(lb: Mapping[str, str]) -> bool:
        return (key not in lb) if negate else (key in lb)

    return check


def _field_req(path: str, val: str, negate: bool) -> Callable[[Mapping[str, Any]], bool]:
    def check(obj: Mapping[str, Any]) -> bool:
        got = _field_value(obj, path)
        return got != val if negate else got == val

    return check


def parse_label_selector(selector: str | None) -> Callable[[Mapping[str, str]], bool]:
    """Compile ``a=b,c!=d,e in (x,y),f notin (z),g,!h`` into a predicate over label maps."""
    if not selector or not selector.strip():
        return lambda _labels: True
    reqs: list[Requirement] = []
    for part in _split_top(selector):
        m = _EQ_RE.match(part)
        if m:
            key, op, val = m.groups()
            reqs.append(_eq(key, val, op == "!="))
            continue
        m = _SET_RE.match(part)
        if m:
            neg, key, op, vals = m.groups()
            if op:
                if neg:
                    raise bad_request(f"unable to parse requirement: {part.strip()}")
                values = {v.strip() for v in vals.split(",") if v.strip()}
                reqs.append(_in(key, values, op == "notin"))
            else:
                reqs.append(_exists(key, bool(neg)))
            continue
        raise bad_request(
            f"unable to parse requirement: found '{part.strip()}', expected: label selector"
        )
    return lambda labels: all(r(labels) for r in reqs)


def label_selector_from_match(selector: Mapping[str, Any] | None) -> str:
    """Render a ``LabelSelector`` object (matchLabels + matchExpressions) as selector text."""
    # Not cache.format_selector, on purpose: the server must not import the runtime it tests.
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        key = expr.get("key")
        vals = ",".join(expr.get("values") or [])
        if op == "In":
            parts.append(f"{key} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({vals})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


_FIELD_RE = re.compile(r"^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$")


#: Selectable fields that are not the object path of the same name (core/v1 Event).
FIELD_ALIASES = {"source": "source.component"}


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    path = FIELD_ALIASES.get(path, path)
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    return str(cur)


def parse_field_selector(
    selector: str | None, supported: frozenset[str]
) -> Callable[[Mapping[str, Any]], bool]:
    """Compile a field selector; unsupported fields are a 400 as the real server answers."""
    if not selector or not selector.strip():
        return lambda _obj: True
    reqs: list[Callable[[Mapping[str, Any]], bool]] = []
    for part in selector.split(","):
        if not part.strip():
            continue
        m = _FIELD_RE.match(part)
        if not m:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{part}'")
        path, op, val = m.groups()
        if path not in supported:
            raise bad_request(f"field label not supported: {path}")
        reqs.append(_field_req(path, val, op == "!="))
    return lambda obj: all(r(obj) for r in reqs)
