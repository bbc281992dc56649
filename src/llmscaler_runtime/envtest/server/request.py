"""One request's options: its query and headers decoded the way kube-apiserver reads them.

Body decoding (JSON, YAML, protobuf), list-option validation, ``fieldValidation``,
``fieldManager``, ``dryRun`` and content negotiation are the same for every verb; they are
collected here so that the verb modules (verbs, patching, deletion, watch) ask a
:class:`Request` instead of each reading the raw query, and so that none of them needs the
HTTP handler itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import yaml

from ..errors import FieldError, StatusError, bad_request, conflict, invalid
from ..faults import Faults
from ..registry import ResourceType
from ..storage import Storage


class ServerState(Protocol):
    """What the verbs need of the server (``ApiServer`` provides it)."""

    storage: Storage
    faults: Faults
    host: str
    port: int
    bookmark_interval: float
    default_watch_timeout: float

    @property
    def stopping(self) -> bool: ...


class Headers(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


def method_not_allowed() -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


class Resource(NamedTuple):
    """A routed resource request: the type, the version asked for, and which object
    (``name`` None for the collection) or subresource."""

    rt: ResourceType
    version: str
    namespace: str | None
    name: str | None
    sub: str | None


@dataclass
class Reply:
    """What a verb answers: a document, or (``rt`` set) an object of that resource in
    ``version``, which the handler renders as a Table when the client asks for one."""

    code: int
    body: Any
    rt: ResourceType | None = None
    version: str = ""
    warnings: list[str] = field(default_factory=list)


class Request:
    """The query, headers and server of one request, and what the recorder learns of it."""

    def __init__(self, api: ServerState, query: Mapping[str, str], headers: Headers) -> None:
        self.api = api
        self.query = query
        self.headers = headers
        #: What the request recorder logs (filled in by routing and the verbs).
        self.rec: dict[str, str] = {
            "verb": "",
            "resource": "",
            "subresource": "",
            "namespace": "",
            "group": "",
            "name": "",
        }

    @property
    def storage(self) -> Storage:
        return self.api.storage

    def content_type(self, default: str = "") -> str:
        return str(self.headers.get("Content-Type") or default).split(";")[0].strip()

    def decode(self, body: bytes, *, allow_yaml: bool = True) -> Any:
        ctype = self.content_type("application/json")
        if ctype in ("application/json", "*/*", ""):
            try:
                return json.loads(body or b"null")
            except ValueError as exc:
                raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        if ctype == "application/vnd.kubernetes.protobuf":
            from .. import protobuf

            return protobuf.decode(body)
        if allow_yaml and ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                return yaml.safe_load(body)
            except yaml.YAMLError as exc:
                raise bad_request(f"error converting YAML to JSON: {exc}") from None
        raise StatusError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml",
        )

    def validate_list_options(self, watch: bool) -> None:
        """kube-apiserver's ListOptions validation (resourceVersionMatch, sendInitialEvents)."""
        q = self.query
        match = q.get("resourceVersionMatch", "")
        send_initial = q.get("sendInitialEvents")
        errs: list[FieldError] = []

        def forbidden(field: str, detail: str) -> None:
            errs.append(FieldError("FieldValueForbidden", field, detail, with_value=False))

        def unsupported(values: str) -> None:
            errs.append(
                FieldError(
                    "FieldValueNotSupported",
                    "resourceVersionMatch",
                    f"supported values: {values}",
                    match,
                )
            )

        if watch:
            if send_initial is not None and match != "NotOlderThan":
                forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )
            if match:
                if send_initial is None:
                    forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                        "provided",
                    )
                if match != "NotOlderThan":
                    unsupported('"NotOlderThan"')
                if q.get("continue"):
                    forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    )
        else:
            if match:
                if not q.get("resourceVersion"):
                    forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                if q.get("continue"):
                    forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    )
                if match not in ("Exact", "NotOlderThan"):
                    unsupported('"Exact", "NotOlderThan", ""')
                if match == "Exact" and q.get("resourceVersion") == "0":
                    forbidden(
                        "resourceVersionMatch",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
            if send_initial is not None:
                forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
        if errs:
            raise invalid("meta.k8s.io", "ListOptions", "", "", errs)

    def field_validation(self) -> str:
        fv = self.query.get("fieldValidation", "") or "Warn"
        if fv not in ("Strict", "Warn", "Ignore"):
            raise bad_request(
                f'fieldValidation parameter "{fv}" is not valid: '
                "must be one of Ignore, Warn, Strict"
            )
        return fv

    def manager(self) -> str:
        """The field manager: ``fieldManager``, else the client's User-Agent product."""
        fm = self.query.get("fieldManager")
        if fm:
            return fm
        ua = str(self.headers.get("User-Agent") or "unknown")
        return ua.split("/")[0]

    def dry_run(self) -> bool:
        dr = self.query.get("dryRun")
        if dr is None:
            return False
        if dr != "All":
            raise bad_request(f'Invalid value: "{dr}": supported values: "All"')
        return True

    def want_table(self) -> bool:
        return "as=Table" in (self.headers.get("Accept") or "")

    def include_object(self) -> str:
        return self.query.get("includeObject", "Metadata")

    def maybe_conflict(self, rt: ResourceType, name: str) -> None:
        """An injected 409 (``Faults``) for this write."""
        if self.api.faults.take_conflict():
            raise conflict(rt.group, rt.plural, name)


__all__ = ["Headers", "Reply", "Request", "Resource", "ServerState", "method_not_allowed"]
