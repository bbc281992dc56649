"""Typed API errors built from the Kubernetes ``Status`` body.

Callers branch on *what happened* (not found, conflict, expired watch, throttled) far more
often than on the raw HTTP code, and the Status body's ``reason`` is more precise than the code
(409 is both ``AlreadyExists`` and ``Conflict``; 500 can be ``ServerTimeout``). So the mapping
looks at the reason first and falls back to the status code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "error_from_response",
]


class ApiError(Exception):
    """An error answered by (or on the way to) the API server.

    ``body`` is the decoded Status object when the server sent one; ``details`` is its
    ``details`` field (name, kind, causes, retryAfterSeconds) so callers can show field errors.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.details = details


class BadRequest(ApiError):
    """400: the request itself is malformed (bad selector, bad patch)."""


class Unauthorized(ApiError):
    """401: the credentials were missing or rejected."""


class Forbidden(ApiError):
    """403: authenticated but not allowed by RBAC (or the namespace is terminating)."""


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""


class MethodNotAllowed(ApiError):
    """405: the verb is not supported on this resource."""


class Conflict(ApiError):
    """409: optimistic-concurrency failure (stale resourceVersion) or an apply conflict."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: create of a name that is taken.

    A subclass of Conflict because both come back as 409 and code that only cares about
    "someone else got there first" can catch Conflict.
    """


class Gone(ApiError):
    """410: the requested resourceVersion is too old (compacted); the caller must relist."""


class Invalid(ApiError):
    """422: validation failed; ``details['causes']`` lists the offending fields."""


class TooManyRequests(ApiError):
    """429: throttled (API priority and fairness); ``retry_after`` is the server's hint."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, reason, message, body, details)
        self.retry_after = retry_after


class InternalError(ApiError):
    """500: the server failed; usually worth retrying with backoff."""


class ServiceUnavailable(ApiError):
    """503: the server (or an aggregated API) is not ready; retry with backoff."""


class ServerTimeout(ApiError):
    """504, or 500 with reason ServerTimeout/Timeout: the server gave up; retry."""


class TransportError(ApiError):
    """The request never got an HTTP answer (connection refused, reset, read timeout).

    Status is 0. Keeping it an ApiError lets retry loops catch one exception family.
    """


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "ServerTimeout": ServerTimeout,
    "Timeout": ServerTimeout,
}

_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}

_DEFAULT_REASON: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def _decode_body(body: bytes | str | dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    if body is None:
        return None, ""
    if isinstance(body, dict):
        return body, ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        decoded = json.loads(text)
    except ValueError:
        return None, text.strip()
    if isinstance(decoded, dict):
        return decoded, ""
    return None, text.strip()


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    if not headers:
        return None
    lowered = name.lower()
    for key, value in headers.items():
        if str(key).lower() == lowered:
            return str(value)
    return None


def _parse_retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # HTTP-date form is never used by the API server; ignore it
    return max(seconds, 0.0)


def error_from_response(
    status: int,
    body: bytes | str | dict[str, Any] | None,
    headers: Mapping[str, Any] | None = None,
) -> ApiError:
    """Build the most specific ApiError for an HTTP error answer.

    ``body`` may be a Status object (raw or decoded) or arbitrary text from a proxy; the
    latter still yields an error of the right class with the text as message.
    """
    decoded, text = _decode_body(body)
    status_obj = decoded if decoded is not None and decoded.get("kind") == "Status" else None
    if status_obj is None and decoded is not None and "reason" in decoded:
        status_obj = decoded  # watch ERROR objects sometimes omit "kind"
    reason = ""
    message = text
    details: dict[str, Any] | None = None
    if status_obj is not None:
        reason = str(status_obj.get("reason") or "")
        message = str(status_obj.get("message") or text)
        raw_details = status_obj.get("details")
        details = raw_details if isinstance(raw_details, dict) else None
        code = status_obj.get("code")
        if not status and isinstance(code, int):
            status = code
    cls = _BY_REASON.get(reason) or _BY_STATUS.get(status)
    if cls is None:
        cls = InternalError if status >= 500 else ApiError
    if cls is Conflict and status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    if not reason:
        reason = _DEFAULT_REASON.get(status, "Unknown")
    if not message:
        message = f"HTTP {status}"
    if issubclass(cls, TooManyRequests):
        retry_after = _parse_retry_after(_header(headers, "Retry-After"))
        if retry_after is None and details is not None:
            seconds = details.get("retryAfterSeconds")
            if isinstance(seconds, int | float):
                retry_after = float(seconds)
        return cls(status, reason, message, status_obj, details, retry_after=retry_after)
    return cls(status, reason, message, status_obj, details)
