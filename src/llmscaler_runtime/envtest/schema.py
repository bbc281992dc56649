"""CRD structural schemas: defaulting, pruning, OpenAPI v3 validation and CEL rules.

Messages follow kube-openapi / apiextensions-apiserver wording so that a rejected custom
resource reads exactly like one rejected by a real cluster.
"""

from __future__ import annotations

import copy
import re
import threading
from typing import Any

import celpy
from celpy.adapter import json_to_cel

from .errors import FieldError

_cel_env = celpy.Environment()
_cel_lock = threading.Lock()
_cel_cache: dict[str, Any] = {}


def compile_rule(rule: str) -> Any:
    """Compile (and cache) a CEL program; raises ``celpy.CELParseError`` on a bad rule."""
    with _cel_lock:
        prog = _cel_cache.get(rule)
        if prog is None:
            prog = _cel_env.program(_cel_env.compile(rule))
            _cel_cache[rule] = prog
        return prog


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---- defaulting ----------------------------------------------------------------------------


def apply_defaults(schema: dict[str, Any] | None, obj: Any) -> Any:
    """Fill ``default`` values of a structural schema into ``obj`` (in place, returns it)."""
    if not schema:
        return obj
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name not in obj and "default" in sub:
                obj[name] = copy.deepcopy(sub["default"])
            if name in obj and obj[name] is None and "default" in sub and not sub.get("nullable"):
                obj[name] = copy.deepcopy(sub["default"])
        for name, value in obj.items():
            if name in props:
                apply_defaults(props[name], value)
            elif isinstance(schema.get("additionalProperties"), dict):
                apply_defaults(schema["additionalProperties"], value)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(schema["items"], item)
    return obj


# ---- pruning -------------------------------------------------------------------------------

#: The fields of ObjectMeta: anything else under a custom resource's metadata is pruned.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def prune_nulls(schema: dict[str, Any] | None, obj: Any) -> None:
    """Drop nulls of non-nullable fields that have no default (those with one are defaulted
    later), as apiextensions-apiserver does before defaulting."""
    if not schema:
        return
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for name in list(obj):
            sub = props.get(name)
            if sub is None and isinstance(addl, dict):
                sub = addl
            value = obj[name]
            if (
                value is None
                and sub is not None
                and not sub.get("nullable")
                and "default" not in sub
            ):
                del obj[name]
            elif sub is not None:
                prune_nulls(sub, value)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            prune_nulls(schema["items"], item)


def prune(schema: dict[str, Any] | None, obj: Any, path: str = "", root: bool = True) -> list[str]:
    """Drop fields the schema does not declare (in place); returns the pruned paths."""
    pruned: list[str] = []
    if not schema or schema.get("x-kubernetes-preserve-unknown-fields"):
        if isinstance(obj, dict) and schema and schema.get("properties"):
            for name, sub in schema["properties"].items():
                if name in obj:
                    pruned += prune(sub, obj[name], _join(path, name), False)
        return pruned
    if isinstance(obj, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        for name in list(obj):
            if root and name == "metadata" and isinstance(obj[name], dict):
                for field in [f for f in obj[name] if f not in OBJECT_META_FIELDS]:
                    del obj[name][field]
                    pruned.append(f"metadata.{field}")
                continue
            if root and name in ("apiVersion", "kind", "metadata"):
                continue
            if props is not None and name in props:
                pruned += prune(props[name], obj[name], _join(path, name), False)
            elif isinstance(addl, dict):
                pruned += prune(addl, obj[name], _join(path, name), False)
            elif addl is True:
                continue
            elif props is not None or schema.get("type") == "object":
                del obj[name]
                pruned.append(_join(path, name))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            pruned += prune(schema["items"], item, f"{path}[{i}]", False)
    return pruned


# ---- validation ----------------------------------------------------------------------------

_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return _TYPE_NAMES.get(type(value), "object")


def _type_ok(want: str, value: Any) -> bool:
    if want == "object":
        return isinstance(value, dict)
    if want == "array":
        return isinstance(value, list)
    if want == "string":
        return isinstance(value, str)
    if want == "boolean":
        return isinstance(value, bool)
    if want == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if want == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def validate(
    schema: dict[str, Any] | None, obj: Any, old: Any = None, path: str = ""
) -> list[FieldError]:
    """All OpenAPI + CEL violations of ``obj``; openapi errors sorted, CEL errors after."""
    if not schema:
        return []
    errs: list[FieldError] = []
    cel: list[FieldError] = []
    _validate(schema, obj, old, path, errs, cel, root=True)
    errs.sort(key=lambda e: e.field)
    if has_rules(schema) and any(e.reason in _BLOCKING for e in errs):
        # These errors block CEL evaluation, as in apiextensions-apiserver (hasBlockingErr).
        return [
            *errs,
            FieldError(
                "FieldValueInvalid",
                "<nil>",
                "some validation rules were not checked because the object was invalid; "
                "correct the existing errors to complete validation",
                None,
            ),
        ]
    return errs + cel


#: Schema violations after which apiextensions-apiserver does not run the CEL rules.
_BLOCKING = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)


def has_rules(schema: Any) -> bool:
    """Whether any x-kubernetes-validations rule appears anywhere in the schema."""
    if not isinstance(schema, dict):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    if any(has_rules(s) for s in (schema.get("properties") or {}).values()):
        return True
    return has_rules(schema.get("items")) or has_rules(schema.get("additionalProperties"))


def _validate(
    s: dict[str, Any],
    v: Any,
    old: Any,
    path: str,
    errs: list[FieldError],
    cel: list[FieldError],
    root: bool = False,
) -> None:
    want = s.get("type")
    if v is None:
        if s.get("nullable") or not want:
            return
        errs.append(
            FieldError(
                "FieldValueTypeInvalid",
                path,
                f'{path} in body must be of type {want}: "null"',
                "null",
            )
        )
        return
    if s.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
            errs.append(
                FieldError(
                    "FieldValueTypeInvalid",
                    path,
                    f'{path} in body must be of type integer,string: "{_type_name(v)}"',
                    _type_name(v),
                )
            )
            return
    elif want and not _type_ok(want, v):
        t = _type_name(v)
        errs.append(
            FieldError(
                "FieldValueTypeInvalid", path, f'{path} in body must be of type {want}: "{t}"', t
            )
        )
        return
    if "enum" in s and v not in s["enum"]:
        supported = ", ".join(f'"{e}"' if isinstance(e, str) else _num(e) for e in s["enum"])
        errs.append(FieldError("FieldValueNotSupported", path, f"supported values: {supported}", v))
    if isinstance(v, int | float) and not isinstance(v, bool):
        if s.get("format") == "int32" and not (-(2**31) <= v < 2**31):
            # kube-openapi's format check reports no field path and an empty value.
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "<nil>",
                    f"Checked value must be of type integer with format int32 in {path}",
                    "",
                )
            )
        if "minimum" in s:
            lo = s["minimum"]
            if v < lo or (s.get("exclusiveMinimum") and v == lo):
                op = "greater than" if s.get("exclusiveMinimum") else "greater than or equal to"
                errs.append(
                    FieldError(
                        "FieldValueInvalid", path, f"{path} in body should be {op} {_num(lo)}", v
                    )
                )
        if "maximum" in s:
            hi = s["maximum"]
            if v > hi or (s.get("exclusiveMaximum") and v == hi):
                op = "less than" if s.get("exclusiveMaximum") else "less than or equal to"
                errs.append(
                    FieldError(
                        "FieldValueInvalid", path, f"{path} in body should be {op} {_num(hi)}", v
                    )
                )
        if "multipleOf" in s and s["multipleOf"] and v % s["multipleOf"] != 0:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    path,
                    f"{path} in body should be a multiple of {_num(s['multipleOf'])}",
                    v,
                )
            )
    if isinstance(v, str):
        if "maxLength" in s and len(v) > s["maxLength"]:
            errs.append(
                FieldError(
                    "FieldValueTooLong",
                    path,
                    f"may not be more than {s['maxLength']} bytes",
                    v,
                    with_value=False,
                )
            )
        if "minLength" in s and len(v) < s["minLength"]:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    path,
                    f"{path} in body should be at least {s['minLength']} chars long",
                    v,
                )
            )
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append(
                FieldError(
                    "FieldValueInvalid", path, f"{path} in body should match '{s['pattern']}'", v
                )
            )
    if isinstance(v, list):
        if "maxItems" in s and len(v) > s["maxItems"]:
            errs.append(
                FieldError(
                    "FieldValueTooMany", path, f"must have at most {s['maxItems']} items", len(v)
                )
            )
        if "minItems" in s and len(v) < s["minItems"]:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    path,
                    f"{path} in body should have at least {s['minItems']} items",
                    v,
                )
            )
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(v):
                _validate(items, item, None, f"{path}[{i}]", errs, cel)
    if isinstance(v, dict):
        props = s.get("properties") or {}
        for req in s.get("required") or []:
            if req not in v:
                errs.append(
                    FieldError("FieldValueRequired", _join(path, req), "", None, with_value=False)
                )
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            errs.append(
                FieldError(
                    "FieldValueTooMany",
                    path,
                    f"must have at most {s['maxProperties']} items",
                    len(v),
                )
            )
        addl = s.get("additionalProperties")
        for name, value in v.items():
            if root and name == "metadata":
                continue
            sub = props.get(name)
            if sub is None and isinstance(addl, dict):
                sub = addl
            if sub is not None:
                o = old.get(name) if isinstance(old, dict) else None
                _validate(sub, value, o, _join(path, name), errs, cel)
    rules = s.get("x-kubernetes-validations")
    if rules:
        _run_cel(rules, v, old, path, cel, str(want or "object"))


def _cel_error(exc: Exception) -> str:
    """Word a CEL runtime error like cel-go does (``no such key: x``, ``unknown time zone x``,
    Go's ``is a directory`` for a zone name that is a directory of the zone database)."""
    first = exc.args[0] if exc.args else exc
    text = str(first)
    m = re.search(r"no such member in mapping: '([^']*)'", text)
    if m:
        return f"no such key: {m.group(1)}"
    # celpy wraps the zoneinfo failure of timestamp.getHours(zone) and friends; cel-go
    # reports Go's time.LoadLocation error
    m = re.search(r"Unparsable timezone: StringType\('([^']*)'\)", str(exc.args))
    if m is None:
        m = re.search(r"ZoneInfo keys must [^,]*, got: ([^'\"]*)", str(exc.args))
    if m:
        return f"unknown time zone {m.group(1)}"
    if isinstance(exc, IsADirectoryError):  # a zone database directory, such as Europe
        return "is a directory"
    return text


def _run_cel(
    rules: list[dict[str, Any]],
    v: Any,
    old: Any,
    path: str,
    out: list[FieldError],
    type_name: str = "object",
) -> None:
    """Evaluate ``rules`` on ``v``. A rule that fails at runtime (an error rather than false)
    is reported as kube-apiserver does: the schema's type as the value and "<error>
    evaluating rule: <message, or the rule when it has none>"."""
    for rule in rules:
        text = rule.get("rule", "")
        transition = "oldSelf" in text
        if transition and old is None:
            continue
        activation: dict[str, Any] = {"self": json_to_cel(v)}
        if transition:
            activation["oldSelf"] = json_to_cel(old)
        field = path
        fp = rule.get("fieldPath")
        if fp:
            field = path + fp if fp.startswith(".") else _join(path, fp)
        reason = rule.get("reason") or "FieldValueInvalid"
        try:
            result = compile_rule(text).evaluate(activation)
        except Exception as exc:  # CEL runtime errors are reported, never crash the server
            result = exc
        if isinstance(result, Exception):
            shown = (rule.get("message") or text).strip()
            detail = f"{_cel_error(result)} evaluating rule: {shown}"
            out.append(FieldError("FieldValueInvalid", path, detail, type_name))
            continue
        if result is True or (not isinstance(result, bool) and bool(result)):
            continue
        msg = rule.get("message") or f"failed rule: {text}"
        expr = rule.get("messageExpression")
        if expr:
            try:
                got = compile_rule(expr).evaluate(activation)
                if isinstance(got, str) and got:
                    msg = str(got)
            except Exception:  # a failing messageExpression falls back to message, as k8s does
                pass
        # The value is shown for scalars only (objects and arrays are omitted, as cel-go's
        # caller in apiextensions-apiserver does).
        out.append(FieldError(reason, field, msg, v, with_value=not isinstance(v, dict | list)))


def check_rules_compile(schema: Any, path: str = "") -> list[str]:
    """CEL rules that do not compile (a CRD carrying them is rejected at creation)."""
    bad: list[str] = []
    if isinstance(schema, dict):
        for rule in schema.get("x-kubernetes-validations") or []:
            try:
                compile_rule(rule.get("rule", ""))
            except Exception as exc:
                bad.append(
                    f"{path or '<root>'}: compilation failed for rule {rule.get('rule')!r}: {exc}"
                )
        for key in ("properties",):
            for name, sub in (schema.get(key) or {}).items():
                bad += check_rules_compile(sub, _join(path, name))
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                bad += check_rules_compile(schema[key], path)
    return bad
