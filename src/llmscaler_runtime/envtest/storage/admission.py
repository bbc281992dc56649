"""Admission of a written object: kind and version checks, pruning, defaulting and validation.

What every create and update must pass before the store sees it, in kube-apiserver's order:
decode (unknown fields per ``fieldValidation``), prune and default (the CRD's schema, or the
built-in defaults), validate (schema with CEL rules, or the built-in rules). Kept apart from
the write pipeline because it looks at one object (and its predecessor) only, never at the store.
"""

from __future__ import annotations

from typing import Any

from .. import defaults, schema
from ..errors import FieldError, bad_request, invalid
from ..registry import ResourceType
from .common import CRD_KEY, Obj
from .crds import CrdRegistry


def check_kind(rt: ResourceType, obj: Any) -> None:
    """The body is an object of this resource; stamps the storage apiVersion and kind."""
    if not isinstance(obj, dict):
        raise bad_request("the object provided is not a JSON object")
    av = obj.get("apiVersion")
    kind = obj.get("kind")
    if kind is not None and kind != rt.kind:
        raise bad_request(
            f"the API version in the data ({av}) does not match the expected API version "
            f"({rt.api_version()})"
            if av and av != rt.api_version()
            else f'kind "{kind}" does not match the expected kind "{rt.kind}"'
        )
    if av is not None:
        group, _, version = str(av).rpartition("/")
        if group != rt.group or version not in rt.versions:
            raise bad_request(
                f"the API version in the data ({av}) does not match the expected API "
                f"version ({rt.api_version()})"
            )
    obj["apiVersion"] = rt.api_version()
    obj["kind"] = rt.kind


def prepare(
    rt: ResourceType, obj: Obj, old: Obj | None, field_validation: str, crds: CrdRegistry
) -> list[str]:
    """Defaults, pruning and validation; returns warnings, raises 400/422."""
    warnings: list[str] = []
    s = rt.schema()

    def unknown_fields(paths: list[str]) -> list[str]:
        """Dropped fields: a 400 under Strict, warnings under Warn, silence under Ignore."""
        unknown = [f'unknown field "{p}"' for p in paths]
        if unknown and field_validation == "Strict":
            raise bad_request(
                f'{rt.kind} in version "{rt.preferred_version}" cannot be handled as a '
                f"{rt.kind}: strict decoding error: " + ", ".join(unknown)
            )
        return unknown if field_validation == "Warn" else []

    if s is not None:
        warnings += unknown_fields(schema.prune(s, obj))
        schema.prune_nulls(s, obj)
        schema.apply_defaults(s, obj)
    else:
        undecodable = defaults.decode_errors(rt, obj)
        if undecodable:
            raise bad_request(
                f'{rt.kind} in version "{rt.preferred_version}" cannot be handled as a '
                f"{rt.kind}: {undecodable}"
            )
        warnings += unknown_fields(defaults.drop_unknown_builtin_fields(rt, obj))
        defaults.apply_builtin_defaults(rt, obj, creating=old is None)
    name = obj["metadata"].get("name", "")
    errs: list[FieldError] = []
    if old is None:
        errs += defaults.validate_name(rt, name)
    if s is not None:
        errs += schema.validate(s, obj, old)
    else:
        errs += defaults.validate_builtin(rt, obj)
        if old is not None:
            errs += defaults.validate_builtin_update(rt, old, obj)
    if rt.key == CRD_KEY:
        errs += crds.validate(obj)
    if errs:
        # Events of both APIs are one internal (core) type, so their errors name "Event".
        group = "" if rt.key == ("events.k8s.io", "events") else rt.group
        raise invalid(group, rt.kind, rt.plural, name, errs)
    return warnings


__all__ = ["check_kind", "prepare"]
