"""The HTTP face of the embedded API server: REST paths, discovery, OpenAPI, watch streaming.

Standard-library ``ThreadingHTTPServer`` with one thread per connection (a watch holds its
thread), HTTP/1.1 keep-alive and chunked line-delimited JSON for watches, as kube-apiserver.
"""

from __future__ import annotations

import json
import queue
import select
import socket
import ssl
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from . import openapi
from .errors import (
    FieldError,
    StatusError,
    bad_request,
    conflict,
    field_manager_required,
    invalid,
    not_found,
    qualified_resource,
)
from .faults import Faults, RecordedRequest
from .registry import ResourceType
from .storage import Storage, Watcher

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-envtest",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
}
UNSUPPORTED_PATCH = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
    "application/strategic-merge-patch+json"
)


def _age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    secs = max(0, int((datetime.now(UTC) - then).total_seconds()))
    if secs < 120:
        return f"{secs}s"
    if secs < 600:
        return f"{secs // 60}m{secs % 60}s"
    if secs < 3 * 3600:
        return f"{secs // 60}m"
    if secs < 48 * 3600:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATION_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _col(
    name: str, typ: str = "string", desc: str = "", fmt: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": typ,
        "format": fmt,
        "description": desc or name,
        "priority": priority,
    }


def _custom_cell(typ: str, value: Any) -> Any:
    """A custom resource's cell: missing is null, strings printed, dates as an age."""
    if value is None:
        return None
    if typ == "date":
        return _age(value) if isinstance(value, str) else "<invalid>"
    if typ == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return value


def _status(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("status") or {}


def _template_containers(o: dict[str, Any]) -> list[dict[str, Any]]:
    spec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def _selector_text(o: dict[str, Any]) -> str:
    from .selectors import label_selector_from_match

    return label_selector_from_match((o.get("spec") or {}).get("selector")) or "<none>"


def _ready_of_replicas(o: dict[str, Any]) -> str:
    return f"{_status(o).get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 0)}"


def _pod_ready(o: dict[str, Any]) -> str:
    ready = sum(1 for c in _status(o).get("containerStatuses") or [] if c.get("ready"))
    return f"{ready}/{len((o.get('spec') or {}).get('containers') or [])}"


def _pod_status(o: dict[str, Any]) -> str:
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str(_status(o).get("reason") or _status(o).get("phase") or "")


_CONTAINERS = (
    _col("Containers", desc="Names of each container in the template.", priority=1),
    lambda o: ",".join(str(c.get("name", "")) for c in _template_containers(o)),
)
_IMAGES = (
    _col("Images", desc="Images referenced by each container in the template.", priority=1),
    lambda o: ",".join(str(c.get("image", "")) for c in _template_containers(o)),
)
_READY_OF = "Number of the pod with ready state"
#: Built-in tables: (columns before Age, priority-1 columns after it), per (group, plural).
_BUILTIN_COLUMNS: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {
    ("apps", "deployments"): (
        [
            (
                _col("Ready", desc=_READY_OF),
                _ready_of_replicas,
            ),
            (
                _col(
                    "Up-to-date",
                    desc="Total number of non-terminating pods targeted by this deployment that "
                    "have the desired template spec.",
                ),
                lambda o: _status(o).get("updatedReplicas", 0),
            ),
            (
                _col(
                    "Available",
                    desc="Total number of available non-terminating pods (ready for at least "
                    "minReadySeconds) targeted by this deployment.",
                ),
                lambda o: _status(o).get("availableReplicas", 0),
            ),
        ],
        [
            _CONTAINERS,
            _IMAGES,
            (
                _col(
                    "Selector",
                    desc="Label selector for pods. Existing ReplicaSets whose pods are selected "
                    "by this will be the ones affected by this deployment. It must match the "
                    "pod template's labels.",
                    priority=1,
                ),
                _selector_text,
            ),
        ],
    ),
    ("apps", "replicasets"): (
        [
            (
                _col(
                    "Desired",
                    "integer",
                    "Replicas is the number of desired pods. This is a pointer to distinguish "
                    "between explicit zero and unspecified. Defaults to 1. More info: "
                    "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
                ),
                lambda o: (o.get("spec") or {}).get("replicas", 0),
            ),
            (
                _col(
                    "Current",
                    "integer",
                    "Replicas is the most recently observed number of non-terminating pods. "
                    "More info: https://kubernetes.io/docs/concepts/workloads/controllers/"
                    "replicaset",
                ),
                lambda o: _status(o).get("replicas", 0),
            ),
            (
                _col(
                    "Ready",
                    "integer",
                    "The number of non-terminating pods targeted by this ReplicaSet with a "
                    "Ready Condition.",
                ),
                lambda o: _status(o).get("readyReplicas", 0),
            ),
        ],
        [
            _CONTAINERS,
            _IMAGES,
            (
                _col(
                    "Selector",
                    desc="Selector is a label query over pods that should match the replica "
                    "count. Label keys and values that must match in order to be controlled by "
                    "this replica set. It must match the pod template's labels. More info: "
                    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                    "#label-selectors",
                    priority=1,
                ),
                _selector_text,
            ),
        ],
    ),
    ("apps", "statefulsets"): (
        [
            (
                _col("Ready", desc=_READY_OF),
                _ready_of_replicas,
            )
        ],
        [_CONTAINERS, _IMAGES],
    ),
    ("", "pods"): (
        [
            (
                _col(
                    "Ready", desc="The aggregate readiness state of this pod for accepting traffic."
                ),
                _pod_ready,
            ),
            (
                _col("Status", desc="The aggregate status of the containers in this pod."),
                _pod_status,
            ),
            (
                _col(
                    "Restarts",
                    desc="The number of times the containers in this pod have been restarted and "
                    "when the last container in this pod has restarted.",
                ),
                lambda o: str(
                    sum(
                        int(c.get("restartCount") or 0)
                        for c in _status(o).get("containerStatuses") or []
                    )
                ),
            ),
        ],
        [
            (
                _col(
                    "IP",
                    desc="podIP address allocated to the pod. Routable at least within the "
                    "cluster. Empty if not yet allocated.",
                    priority=1,
                ),
                lambda o: _status(o).get("podIP") or "<none>",
            ),
            (
                _col(
                    "Node",
                    desc="NodeName indicates in which node this pod is scheduled.",
                    priority=1,
                ),
                lambda o: (o.get("spec") or {}).get("nodeName") or "<none>",
            ),
            (
                _col(
                    "Nominated Node",
                    desc="nominatedNodeName is set only when this pod preempts other pods on "
                    "the node.",
                    priority=1,
                ),
                lambda o: _status(o).get("nominatedNodeName") or "<none>",
            ),
            (
                _col(
                    "Readiness Gates",
                    desc="If specified, all readiness gates will be evaluated for pod readiness.",
                    priority=1,
                ),
                lambda o: "<none>",
            ),
        ],
    ),
    ("", "configmaps"): (
        [
            (
                _col(
                    "Data",
                    desc="Data contains the configuration data. Each key must consist of "
                    "alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte "
                    "sequences must use the BinaryData field. The keys stored in Data must not "
                    "overlap with the keys in the BinaryData field, this is enforced during "
                    "validation process.",
                ),
                lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            )
        ],
        [],
    ),
    ("", "secrets"): (
        [
            (
                _col(
                    "Type",
                    desc="Used to facilitate programmatic handling of secret data. More info: "
                    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
                ),
                lambda o: o.get("type", ""),
            ),
            (
                _col(
                    "Data",
                    desc="Data contains the secret data. Each key must consist of alphanumeric "
                    "characters, '-', '_' or '.'. The serialized form of the secret data is a "
                    "base64 encoded string, representing the arbitrary (possibly non-string) "
                    "data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
                ),
                lambda o: len(o.get("data") or {}),
            ),
        ],
        [],
    ),
    ("coordination.k8s.io", "leases"): (
        [
            (
                _col(
                    "Holder",
                    desc="holderIdentity contains the identity of the holder of a current lease. "
                    "If Coordinated Leader Election is used, the holder identity must be equal "
                    "to the elected LeaseCandidate.metadata.name field.",
                ),
                lambda o: (o.get("spec") or {}).get("holderIdentity") or "",
            )
        ],
        [],
    ),
    ("", "namespaces"): (
        [
            (
                _col("Status", desc="The status of the namespace"),
                lambda o: _status(o).get("phase", ""),
            )
        ],
        [],
    ),
}


def _jsonpath(obj: Any, path: str) -> Any:
    cur = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


class ApiServer:
    """Owns the storage, the faults and the listening socket."""

    def __init__(
        self,
        storage: Storage,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        bookmark_interval: float = 60.0,
        default_watch_timeout: float = 1800.0,
    ) -> None:
        self.storage = storage
        self.faults = Faults()
        self.faults.drop_watches_hook = storage.drop_watches
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self._stopping = threading.Event()
        handler = type("Handler", (_Handler,), {"api": self})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 256
        if ssl_context is not None:
            self.httpd.socket = ssl_context.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if ssl_context is not None else "http"
        self.host = host
        self.port = int(self.httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="envtest-apiserver",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self.storage.drop_watches()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ---- discovery ------------------------------------------------------------------------

    def resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        for rt in sorted(self.storage.registry.all(), key=lambda r: r.plural):
            if rt.group != group or version not in rt.versions:
                continue
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            for sub in sorted(rt.subresources):
                resources.append(
                    {
                        "name": f"{rt.plural}/{sub}",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": "Scale" if sub == "scale" else rt.kind,
                        "group": "autoscaling" if sub == "scale" else None,
                        "version": "v1" if sub == "scale" else None,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            if rt.key == ("", "namespaces"):
                resources.append(
                    {
                        "name": "namespaces/finalize",
                        "singularName": "",
                        "namespaced": False,
                        "kind": "Namespace",
                        "verbs": ["update"],
                    }
                )
        for r in resources:
            for k in ("group", "version"):
                if r.get(k) is None:
                    r.pop(k, None)
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def group_list(self) -> dict[str, Any]:
        groups = []
        for name, versions in self.storage.registry.groups().items():
            if not name:
                continue
            groups.append(self._group(name, versions))
        groups.sort(
            key=lambda g: (not g["name"].endswith("k8s.io") and "." in g["name"], g["name"])
        )
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _group(self, name: str, versions: list[str]) -> dict[str, Any]:
        preferred = versions[0]
        for rt in self.storage.registry.all():
            if rt.group == name:
                preferred = rt.preferred_version
                break
        return {
            "name": name,
            "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
            "preferredVersion": {"groupVersion": f"{name}/{preferred}", "version": preferred},
        }

    # ---- tables (kubectl get) ---------------------------------------------------------------

    def columns(self, rt: ResourceType, version: str) -> list[tuple[dict[str, Any], Any]]:
        """Column definitions and cell functions, as kube-apiserver's table printers have them
        (custom resources: Name plus additionalPrinterColumns, or Name and Age)."""
        if rt.crd_name is not None:
            return self._custom_columns(rt, version)
        age: tuple[dict[str, Any], Any] = (
            _col("Age", desc=_CREATION_DOC),
            lambda o: _age(o["metadata"].get("creationTimestamp")),
        )
        cols: list[tuple[dict[str, Any], Any]] = [
            (_col("Name", fmt="name", desc=_NAME_DOC), lambda o: o["metadata"].get("name", ""))
        ]
        extra = _BUILTIN_COLUMNS.get(rt.key)
        if extra is None:
            return [*cols, age]
        before, wide = extra
        return [*cols, *before, age, *wide]

    @staticmethod
    def _custom_columns(rt: ResourceType, version: str) -> list[tuple[dict[str, Any], Any]]:
        cols: list[tuple[dict[str, Any], Any]] = [
            (_col("Name", fmt="name", desc=_NAME_DOC), lambda o: o["metadata"].get("name", ""))
        ]
        defined = rt.printer_columns.get(version) or [
            {
                "name": "Age",
                "type": "date",
                "description": _CREATION_DOC,
                "jsonPath": ".metadata.creationTimestamp",
            }
        ]
        for pc in defined:
            path = str(pc.get("jsonPath", ""))
            typ = str(pc.get("type", "string"))
            desc = pc.get("description") or (
                f"Custom resource definition column (in JSONPath format): {path}"
            )
            definition = _col(str(pc.get("name", "")), typ, desc, str(pc.get("format", "")))
            definition["priority"] = int(pc.get("priority") or 0)
            cols.append((definition, lambda o, p=path, ty=typ: _custom_cell(ty, _jsonpath(o, p))))
        return cols

    def table(
        self,
        rt: ResourceType,
        version: str,
        objs: list[dict[str, Any]],
        rv: str,
        include: str,
        meta_extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        cols = self.columns(rt, version)
        rows = []
        for o in objs:
            row: dict[str, Any] = {"cells": [fn(o) for _, fn in cols]}
            if include == "Object":
                row["object"] = o
            elif include != "None":
                row["object"] = {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o.get("metadata", {}),
                }
            rows.append(row)
        meta: dict[str, Any] = {"resourceVersion": rv}
        meta.update(meta_extra or {})
        return {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
            "columnDefinitions": [c for c, _ in cols],
            "rows": rows,
        }


class _Handler(BaseHTTPRequestHandler):
    api: ApiServer
    protocol_version = "HTTP/1.1"
    server_version = "envtest-apiserver"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging (tests would drown in it)."""

    # ---- plumbing -------------------------------------------------------------------------

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self._status = code

    def _error(self, err: StatusError) -> None:
        retry = (err.details or {}).get("retryAfterSeconds")
        self._send(err.code, err.status(), {"Retry-After": str(retry)} if retry else None)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        self._status = 0
        self._recorded = False
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        self.query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self.rec: dict[str, str] = {
            "verb": "",
            "resource": "",
            "subresource": "",
            "namespace": "",
            "group": "",
            "name": "",
        }
        body = b""
        try:
            body = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
            faults = self.api.faults
            faults.apply_latency(method, path)
            code = faults.error_for(method, path)
            if code is not None:
                raise StatusError(
                    code,
                    _reason_for(code),
                    f"injected fault: {code} on {method} {path}",
                    {"retryAfterSeconds": 1} if code == 429 else None,
                )
            self._route(method, path, body)
        except StatusError as err:
            self._error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # the server keeps serving whatever a request does
            import logging

            logging.getLogger(__name__).exception("envtest request failed")
            try:
                self._error(StatusError(500, "InternalError", f"Internal error occurred: {exc}"))
            except OSError:
                self.close_connection = True
        finally:
            self._record(method, path)

    def _record(self, method: str, path: str) -> None:
        """Record once per request (watches record when the stream starts)."""
        if self._recorded:
            return
        self._recorded = True
        self.api.faults.record(
            RecordedRequest(
                method=method,
                path=path,
                verb=self.rec["verb"],
                resource=self.rec["resource"],
                subresource=self.rec["subresource"],
                namespace=self.rec["namespace"],
                user_agent=self.headers.get("User-Agent", ""),
                group=self.rec["group"],
                name=self.rec["name"],
                status=self._status,
            )
        )

    # ---- routing --------------------------------------------------------------------------

    def _route(self, method: str, path: str, body: bytes) -> None:
        segs = [s for s in path.split("/") if s]
        api = self.api
        if path in ("/healthz", "/livez", "/readyz"):
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(data)
            self._status = 200
            return
        if path == "/version":
            return self._send(200, SERVER_VERSION)
        if path == "/api":
            return self._send(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{api.host}:{api.port}"}
                    ],
                },
            )
        if path == "/apis":
            return self._send(200, api.group_list())
        if segs[:2] == ["openapi", "v3"]:
            if len(segs) == 2:
                return self._send(200, openapi.root_doc(api.storage.registry))
            gv = segs[2:]
            if gv[:1] == ["api"] and len(gv) == 2:
                return self._send(200, openapi.group_version_doc(api.storage.registry, "", gv[1]))
            if gv[:1] == ["apis"] and len(gv) == 3 and gv[1] in api.storage.registry.groups():
                return self._send(
                    200, openapi.group_version_doc(api.storage.registry, gv[1], gv[2])
                )
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if segs[:1] == ["api"] and len(segs) >= 2:
            group, version, rest = "", segs[1], segs[2:]
            if version != "v1":
                raise StatusError(
                    404, "NotFound", "the server could not find the requested resource"
                )
        elif segs[:1] == ["apis"] and len(segs) >= 2:
            group = segs[1]
            versions = api.storage.registry.groups().get(group)
            if versions is None:
                raise StatusError(
                    404, "NotFound", "the server could not find the requested resource"
                )
            if len(segs) == 2:
                return self._send(
                    200, {"kind": "APIGroup", "apiVersion": "v1", **api._group(group, versions)}
                )
            version, rest = segs[2], segs[3:]
            if version not in versions:
                raise StatusError(
                    404, "NotFound", "the server could not find the requested resource"
                )
        else:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            if method != "GET":
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return self._send(200, api.resource_list(group, version))
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        plural, name, sub = (
            rest[0],
            rest[1] if len(rest) > 1 else None,
            rest[2] if len(rest) > 2 else None,
        )
        if len(rest) > 3:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        rt = api.storage.registry.by_resource(group, version, plural)
        self.rec.update(
            resource=plural,
            group=group,
            namespace=namespace or "",
            name=name or "",
            subresource=sub or "",
        )
        if rt is None:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if (
            sub is not None
            and sub not in rt.subresources
            and not (rt.key == ("", "namespaces") and sub == "finalize")
        ):
            if rt.crd_name is not None and name is not None:
                # apiextensions-apiserver answers as if the object did not exist.
                raise not_found(rt.group, rt.plural, name)
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        if not rt.namespaced:
            namespace = None
        self._resource(method, rt, version, namespace, name, sub, body)

    # ---- helpers --------------------------------------------------------------------------

    def _decode(self, body: bytes, *, allow_yaml: bool = True) -> Any:
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype in ("application/json", "*/*", ""):
            try:
                return json.loads(body or b"null")
            except ValueError as exc:
                raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        if ctype == "application/vnd.kubernetes.protobuf":
            from . import protobuf

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

    def _validate_list_options(self, watch: bool) -> None:
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

    def _field_validation(self) -> str:
        fv = self.query.get("fieldValidation", "") or "Warn"
        if fv not in ("Strict", "Warn", "Ignore"):
            raise bad_request(
                f'fieldValidation parameter "{fv}" is not valid: '
                "must be one of Ignore, Warn, Strict"
            )
        return fv

    def _manager(self) -> str:
        fm = self.query.get("fieldManager")
        if fm:
            return fm
        ua = self.headers.get("User-Agent") or "unknown"
        return ua.split("/")[0]

    def _dry_run(self) -> bool:
        dr = self.query.get("dryRun")
        if dr is None:
            return False
        if dr != "All":
            raise bad_request(f'Invalid value: "{dr}": supported values: "All"')
        return True

    def _want_table(self) -> bool:
        return "as=Table" in (self.headers.get("Accept") or "")

    def _send_obj(
        self,
        code: int,
        rt: ResourceType,
        version: str,
        obj: dict[str, Any],
        warnings: list[str] | None = None,
    ) -> None:
        headers = {}
        if warnings:
            headers["Warning"] = ", ".join(
                f'299 - "{w.replace(chr(34), chr(92) + chr(34))}"' for w in warnings
            )
        if self._want_table():
            obj = self.api.table(
                rt,
                version,
                [obj],
                obj["metadata"].get("resourceVersion", ""),
                self.query.get("includeObject", "Metadata"),
            )
        self._send(code, obj, headers)

    def _maybe_conflict(self, rt: ResourceType, name: str) -> None:
        if self.api.faults.take_conflict():
            raise conflict(rt.group, rt.plural, name)

    # ---- resource verbs -------------------------------------------------------------------

    def _resource(
        self,
        method: str,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        name: str | None,
        sub: str | None,
        body: bytes,
    ) -> None:
        st = self.api.storage
        if method == "GET" and name is None:
            watching = self.query.get("watch") in ("true", "1")
            self._validate_list_options(watching)
            if watching:
                self.rec["verb"] = "watch"
                return self._watch(rt, version, namespace)
            self.rec["verb"] = "list"
            lst = st.list_rt(
                rt,
                namespace,
                label_selector=self.query.get("labelSelector"),
                field_selector=self.query.get("fieldSelector"),
                limit=int(self.query["limit"]) if self.query.get("limit", "").isdigit() else None,
                continue_token=self.query.get("continue") or None,
                version=version,
                resource_version=self.query.get("resourceVersion"),
            )
            if self._want_table():
                extra = {k: v for k, v in lst["metadata"].items() if k != "resourceVersion"}
                return self._send(
                    200,
                    self.api.table(
                        rt,
                        version,
                        lst["items"],
                        lst["metadata"]["resourceVersion"],
                        self.query.get("includeObject", "Metadata"),
                        extra,
                    ),
                )
            return self._send(200, lst)
        if method == "GET":
            assert name is not None
            self.rec["verb"] = "get"
            if sub == "scale":
                return self._send(200, st.get_scale(rt, namespace, name))
            return self._send_obj(200, rt, version, st.get_rt(rt, namespace, name, version))
        if method == "POST":
            self.rec["verb"] = "create"
            if name is not None:
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            obj = self._decode(body)
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            self._maybe_conflict(
                rt, str((meta or {}).get("name", "")) if isinstance(meta, dict) else ""
            )
            created, warnings = st.create_rt(
                rt,
                namespace,
                obj,
                manager=self._manager(),
                dry_run=self._dry_run(),
                field_validation=self._field_validation(),
            )
            return self._send_obj(201, rt, version, created, warnings)
        if method == "PUT":
            self.rec["verb"] = "update"
            if name is None:
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            obj = self._decode(body)
            self._maybe_conflict(rt, name)
            if sub == "scale":
                return self._send(
                    200,
                    st.update_scale(
                        rt, namespace, name, obj, manager=self._manager(), dry_run=self._dry_run()
                    ),
                )
            if sub == "finalize":
                sub = None
            updated, warnings = st.update_rt(
                rt,
                namespace,
                name,
                obj,
                subresource=sub,
                manager=self._manager(),
                dry_run=self._dry_run(),
                field_validation=self._field_validation(),
            )
            return self._send_obj(200, rt, version, updated, warnings)
        if method == "PATCH":
            self.rec["verb"] = "patch"
            if name is None:
                raise StatusError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return self._patch(rt, version, namespace, name, sub, body)
        if method == "DELETE":
            return self._delete(rt, version, namespace, name, body)
        raise StatusError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    def _patch(
        self,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        name: str,
        sub: str | None,
        body: bytes,
    ) -> None:
        st = self.api.storage
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        ptype = PATCH_TYPES.get(ctype)
        if ptype is None:
            raise StatusError(415, "UnsupportedMediaType", UNSUPPORTED_PATCH)
        try:
            doc = _load_apply(body) if ptype == "apply" else json.loads(body or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            what = "error decoding YAML" if ptype == "apply" else "error decoding patch"
            raise bad_request(f"{what}: {exc}") from None
        force = self.query.get("force") in ("true", "1")
        if ptype == "apply" and not self.query.get("fieldManager"):
            raise field_manager_required()
        if ptype != "apply" and "force" in self.query:
            raise invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                "",
                [
                    FieldError(
                        "FieldValueForbidden",
                        "force",
                        "may not be specified for non-apply patch",
                        with_value=False,
                    )
                ],
            )
        self._maybe_conflict(rt, name)
        if sub == "scale" and ptype == "apply":
            return self._send(
                200,
                st.apply_scale(
                    rt,
                    namespace,
                    name,
                    doc,
                    manager=self.query.get("fieldManager", ""),
                    force=force,
                    dry_run=self._dry_run(),
                ),
            )
        if sub == "scale":
            scale = st.get_scale(rt, namespace, name)
            from . import patch as patchlib

            if ptype == "json":
                scale = patchlib.json_patch(scale, doc)
            else:
                if not isinstance(doc, dict):
                    raise bad_request("patch must be a JSON object")
                scale = patchlib.merge_patch(
                    scale, {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
                )
            return self._send(
                200,
                st.update_scale(
                    rt, namespace, name, scale, manager=self._manager(), dry_run=self._dry_run()
                ),
            )
        manager = self.query.get("fieldManager", "") if ptype == "apply" else self._manager()
        existed = True
        if ptype == "apply":
            try:
                st.get_rt(rt, namespace, name)
            except StatusError:
                existed = False
        obj, warnings = st.patch_rt(
            rt,
            namespace,
            name,
            ptype,
            doc,
            subresource=sub,
            manager=manager,
            force=force,
            dry_run=self._dry_run(),
            field_validation=self._field_validation(),
        )
        self._send_obj(200 if existed else 201, rt, version, obj, warnings)

    def _delete(
        self, rt: ResourceType, version: str, namespace: str | None, name: str | None, body: bytes
    ) -> None:
        st = self.api.storage
        opts: dict[str, Any] = {}
        if body.strip():
            decoded = self._decode(body, allow_yaml=False)
            if isinstance(decoded, dict):
                opts = decoded
        grace = opts.get("gracePeriodSeconds")
        if "gracePeriodSeconds" in self.query:
            try:
                grace = int(self.query["gracePeriodSeconds"])
            except ValueError:
                raise bad_request("gracePeriodSeconds must be an integer") from None
        propagation = self.query.get("propagationPolicy") or opts.get("propagationPolicy")
        if propagation not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request(
                f'propagationPolicy: Unsupported value: "{propagation}": supported values: '
                '"Foreground", "Background", "Orphan"'
            )
        dry = self._dry_run() or opts.get("dryRun") == ["All"]
        if name is None:
            self.rec["verb"] = "deletecollection"
            lst = st.list_rt(
                rt,
                namespace,
                label_selector=self.query.get("labelSelector"),
                field_selector=self.query.get("fieldSelector"),
                version=version,
            )
            deleted = []
            for o in lst["items"]:
                try:
                    deleted.append(
                        st.delete_rt(
                            rt,
                            o["metadata"].get("namespace"),
                            o["metadata"]["name"],
                            grace_period_seconds=grace,
                            propagation_policy=propagation,
                            dry_run=dry,
                        )
                    )
                except StatusError as err:
                    if err.code != 404:
                        raise
            lst["items"] = [d for d in deleted if d is not None]
            return self._send(200, lst)
        self.rec["verb"] = "delete"
        self._maybe_conflict(rt, name)
        result = st.delete_rt(
            rt,
            namespace,
            name,
            grace_period_seconds=grace,
            propagation_policy=propagation,
            preconditions=opts.get("preconditions"),
            dry_run=dry,
        )
        uid = (result or {}).get("metadata", {}).get("uid")
        if result is not None and not dry and rt.key not in _RETURNS_DELETED_OBJECT:
            try:
                still = st.get_rt(rt, namespace, name)
            except StatusError:
                still = None
            if still is None or still["metadata"].get("uid") != uid:
                result = None  # removed at once: kube-apiserver answers with a Status
        if result is None:
            details: dict[str, Any] = {"name": name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            if uid:
                details["uid"] = uid
            return self._send(
                200,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                },
            )
        self._send_obj(200, rt, version, result)

    # ---- watch ----------------------------------------------------------------------------

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, etype: str, obj: dict[str, Any], rt: ResourceType, version: str) -> None:
        if self._want_table() and etype != "ERROR" and etype != "BOOKMARK":
            obj = self.api.table(
                rt,
                version,
                [obj],
                obj["metadata"].get("resourceVersion", ""),
                self.query.get("includeObject", "Metadata"),
            )
        elif version != rt.preferred_version and etype not in ("ERROR", "BOOKMARK"):
            obj = dict(obj)
            obj["apiVersion"] = rt.api_version(version)
        self._chunk(
            json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"
        )

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            if isinstance(self.connection, ssl.SSLSocket):
                return False  # TLS records cannot be peeked; a closed peer shows on next write
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _watch(self, rt: ResourceType, version: str, namespace: str | None) -> None:
        api = self.api
        st = api.storage
        timeout = api.default_watch_timeout
        if self.query.get("timeoutSeconds"):
            try:
                timeout = float(self.query["timeoutSeconds"])
            except ValueError:
                raise bad_request("timeoutSeconds must be a number") from None
        bookmarks = self.query.get("allowWatchBookmarks") in ("true", "1")
        rv = self.query.get("resourceVersion")
        send_initial = self.query.get("sendInitialEvents")
        if send_initial in ("true", "1"):
            rv = None  # the current state first (resourceVersionMatch=NotOlderThan)
        elif send_initial is not None and rv in (None, "", "0"):
            rv = str(st.resource_version)  # sendInitialEvents=false: from now on
        gone: StatusError | None = None
        w: Watcher | None = None
        initial: list[tuple[str, dict[str, Any]]] = []
        if api.faults.take_gone():
            gone = StatusError(
                410, "Expired", f"too old resource version: {rv or 0} ({st.resource_version})"
            )
        else:
            try:
                w, initial = st.watch_rt(
                    rt,
                    namespace,
                    label_selector=self.query.get("labelSelector"),
                    field_selector=self.query.get("fieldSelector"),
                    resource_version=rv,
                )
            except StatusError as err:
                if err.code != 410:
                    raise
                gone = err
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self._status = 200
        self._record("GET", urlsplit(self.path).path.rstrip("/"))
        try:
            if gone is not None:
                self._event("ERROR", gone.status(), rt, version)
            for etype, obj in initial:
                self._event(etype, obj, rt, version)
            if w is not None and bookmarks and send_initial in ("true", "1"):
                # WatchList: the end of the initial state, as a bookmark with this annotation.
                self._event(
                    "BOOKMARK",
                    {
                        "kind": rt.kind,
                        "apiVersion": rt.api_version(version),
                        "metadata": {
                            "resourceVersion": str(w.last_rv),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    },
                    rt,
                    version,
                )
            deadline = time.monotonic() + timeout
            last_mark = time.monotonic()
            while w is not None and not api.stopping:
                now = time.monotonic()
                if now >= deadline:
                    break
                item: tuple[str, dict[str, Any]] | bool | None
                try:
                    item = w.events.get(timeout=min(0.5, deadline - now))
                except queue.Empty:
                    item = False
                if item is None:
                    break
                if isinstance(item, tuple):
                    etype, obj = item
                    self._event(etype, obj, rt, version)
                    continue
                if self._client_gone():
                    break
                if bookmarks and time.monotonic() - last_mark >= api.bookmark_interval:
                    mark = st.bookmark_rv(w)
                    if mark is not None:
                        self._event(
                            "BOOKMARK",
                            {
                                "kind": rt.kind,
                                "apiVersion": rt.api_version(version),
                                "metadata": {"resourceVersion": mark},
                            },
                            rt,
                            version,
                        )
                        last_mark = time.monotonic()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
            return
        finally:
            if w is not None:
                st.stop_watch(w)
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True


#: Kinds whose storage answers a DELETE with the deleted object (``ReturnDeletedObject``);
#: every other kind answers an immediate deletion with a ``Status``.
_RETURNS_DELETED_OBJECT = frozenset(
    {("", "pods"), ("", "services"), ("", "serviceaccounts"), ("", "namespaces")}
)


def _load_apply(body: bytes) -> Any:
    """Apply bodies are YAML; JSON (what most clients send) takes the fast path."""
    try:
        return json.loads(body)
    except ValueError:
        return yaml.safe_load(body)


def _reason_for(code: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(code, "Unknown")


__all__ = ["ApiServer", "qualified_resource"]
