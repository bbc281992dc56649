"""Kubernetes ``Status`` errors raised by the embedded API server.

The storage layer raises :class:`StatusError`; the HTTP layer turns it into the exact ``Status``
body a real kube-apiserver sends, so clients (kubectl, client-go style libraries) react alike.
"""

from __future__ import annotations

import json
from typing import Any


class StatusError(Exception):
    """An API failure carrying the HTTP code, the ``reason`` and the human message."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def qualified_resource(group: str, plural: str) -> str:
    """``deployments.apps`` / ``pods``: how the real server names a resource in messages."""
    return f"{plural}.{group}" if group else plural


def qualified_kind(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind


def not_found(group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{qualified_resource(group, plural)} "{name}" not found',
        {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural},
    )


def already_exists(group: str, plural: str, name: str) -> StatusError:
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(group, plural)} "{name}" already exists',
        details,
    )


def conflict(group: str, plural: str, name: str) -> StatusError:
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return StatusError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {qualified_resource(group, plural)} "
        f'"{name}": the object has been modified; please apply your changes to the latest '
        "version and try again",
        details,
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def format_value(value: Any) -> str:
    """Render a value the way ``field.Error`` does in messages (strings quoted, objects named)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return json.dumps(str(value))


class FieldError:
    """One ``field.Error``: a path, a reason (FieldValueInvalid ...) and the detail text."""

    __slots__ = ("detail", "field", "reason", "type_text", "value", "with_value")

    def __init__(
        self,
        reason: str,
        field: str,
        detail: str = "",
        value: Any = None,
        *,
        with_value: bool = True,
    ) -> None:
        self.reason = reason
        self.field = field
        self.detail = detail
        self.value = value
        self.with_value = with_value
        self.type_text = {
            "FieldValueInvalid": "Invalid value",
            "FieldValueTypeInvalid": "Invalid value",
            "FieldValueRequired": "Required value",
            "FieldValueNotSupported": "Unsupported value",
            "FieldValueForbidden": "Forbidden",
            "FieldValueTooLong": "Too long",
            "FieldValueTooMany": "Too many",
            "FieldValueDuplicate": "Duplicate value",
        }.get(reason, "Invalid value")

    def body(self) -> str:
        """The message without the field path (what ``details.causes[].message`` holds)."""
        text = self.type_text
        if self.with_value and self.reason not in ("FieldValueRequired", "FieldValueForbidden"):
            text += f": {format_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()


def invalid(group: str, kind: str, plural: str, name: str, errors: list[FieldError]) -> StatusError:
    """422 Invalid with the aggregated message the real server produces."""
    texts = list(dict.fromkeys(str(e) for e in errors))  # the aggregate drops duplicates
    agg = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": e.reason, "message": e.body(), "field": e.field} for e in errors],
    }
    if group:
        details["group"] = group
    return StatusError(
        422, "Invalid", f'{qualified_kind(group, kind)} "{name}" is invalid: {agg}', details
    )


def field_manager_required() -> StatusError:
    """Server-side apply without ``?fieldManager=``: 422 on PatchOptions, as kube-apiserver."""
    return invalid(
        "meta.k8s.io",
        "PatchOptions",
        "",
        "",
        [
            FieldError(
                "FieldValueRequired",
                "fieldManager",
                "is required for apply patch",
                with_value=False,
            )
        ],
    )
