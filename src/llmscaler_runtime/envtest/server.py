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
from .errors import StatusError, bad_request, conflict, qualified_resource
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
        bookmark_interval: float = 5.0,
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
        def col(name: str, typ: str = "string", desc: str = "", fmt: str = "") -> dict[str, Any]:
            return {
                "name": name,
                "type": typ,
                "format": fmt,
                "description": desc or name,
                "priority": 0,
            }

        cols: list[tuple[dict[str, Any], Any]] = [
            (
                col("Name", fmt="name", desc="Name must be unique within a namespace."),
                lambda o: o["metadata"].get("name", ""),
            )
        ]
        if rt.key == ("apps", "deployments"):
            cols += [
                (
                    col("Ready"),
                    lambda o: (
                        f"{(o.get('status') or {}).get('readyReplicas', 0)}/"
                        f"{(o.get('spec') or {}).get('replicas', 0)}"
                    ),
                ),
                (
                    col("Up-to-date", "integer"),
                    lambda o: (o.get("status") or {}).get("updatedReplicas", 0),
                ),
                (
                    col("Available", "integer"),
                    lambda o: (o.get("status") or {}).get("availableReplicas", 0),
                ),
            ]
        elif rt.key == ("", "pods"):
            cols += [
                (
                    col("Ready"),
                    lambda o: "{}/{}".format(
                        sum(
                            1
                            for c in (o.get("status") or {}).get("containerStatuses") or []
                            if c.get("ready")
                        ),
                        len((o.get("spec") or {}).get("containers") or []),
                    ),
                ),
                (
                    col("Status"),
                    lambda o: (
                        "Terminating"
                        if o["metadata"].get("deletionTimestamp")
                        else (o.get("status") or {}).get("phase", "")
                    ),
                ),
                (col("Restarts", "integer"), lambda o: 0),
            ]
        elif rt.key == ("", "namespaces"):
            cols += [(col("Status"), lambda o: (o.get("status") or {}).get("phase", ""))]
        for pc in rt.printer_columns.get(version, []):
            path = pc.get("jsonPath", "")
            if pc.get("name", "").lower() == "age":
                continue
            cols.append(
                (
                    col(pc.get("name", ""), pc.get("type", "string"), pc.get("description", "")),
                    lambda o, p=path: _jsonpath(o, p) if _jsonpath(o, p) is not None else "",
                )
            )
        cols.append(
            (
                col("Age", desc="CreationTimestamp is a timestamp."),
                lambda o: _age(o["metadata"].get("creationTimestamp")),
            )
        )
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
            if self.query.get("watch") in ("true", "1"):
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
        if force and ptype != "apply":
            raise bad_request("force is not allowed for non-apply patch types")
        self._maybe_conflict(rt, name)
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
        if result is None:
            return self._send(
                200,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"name": name, "group": rt.group, "kind": rt.plural},
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
                return
            assert w is not None
            for etype, obj in initial:
                self._event(etype, obj, rt, version)
            deadline = time.monotonic() + timeout
            last_mark = time.monotonic()
            while not api.stopping:
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
