"""A dict-based Kubernetes client for any kind.

The official ``kubernetes`` package supplies configuration, auth (tokens, client certificates,
exec plugins with refresh) and the urllib3 connection pool; requests are built here and answers
are decoded as plain JSON. The generated model classes are avoided on purpose: deserialising
into them is slow and silently drops fields they do not know, which loses CRD content.

The client is thread-safe: it holds one ApiClient whose urllib3 PoolManager is shared by all
threads; no per-call mutable state lives on the instance.
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import quote, urlencode

import kubernetes.client
import structlog
import urllib3

from .config import load_config
from .errors import ApiError, TransportError, error_from_response
from .mapper import ResourceInfo, RESTMapper, split_api_version

__all__ = ["Client", "PatchType", "WatchStream"]

log = structlog.get_logger(__name__)

PatchType = Literal["merge", "strategic", "json"]

_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
DEFAULT_TIMEOUT = 60.0
# A watch connection is held for the server-side timeout; the client-side read timeout only has
# to catch a dead connection, so it is the server timeout plus this slack.
WATCH_READ_SLACK = 30.0
MIN_POOL_SIZE = 32
# Retry only failed connection attempts (nothing was sent). urllib3's default would also retry
# 429/503 answers by itself, sleeping for Retry-After inside the call: callers (the reflector,
# the reconcile rate limiter) decide about retries, so answers are always handed back.
_RETRIES = urllib3.Retry(
    total=None,
    connect=3,
    read=0,
    status=0,
    other=0,
    redirect=0,
    respect_retry_after_header=False,
    raise_on_status=False,
)

QueryValue = str | int | float | bool | None
Query = Mapping[str, QueryValue] | Sequence[tuple[str, QueryValue]]


def _query_string(query: Query | None) -> str:
    if not query:
        return ""
    pairs = query.items() if isinstance(query, Mapping) else query
    encoded: list[tuple[str, str]] = []
    for key, value in pairs:
        if value is None:
            continue
        if isinstance(value, bool):
            encoded.append((key, "true" if value else "false"))
        else:
            encoded.append((key, str(value)))
    return urlencode(encoded) if encoded else ""


def _encode_body(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class WatchStream:
    """Iterator over one watch connection's events (line-delimited JSON).

    Yields ``{"type": ..., "object": {...}}`` dicts. An ``ERROR`` event is raised as the
    matching ApiError (``Gone`` for 410, so callers relist). Undecodable lines are logged and
    skipped rather than ending the stream. ``close()`` may be called from another thread to
    unblock a reader; the iterator then just ends.
    """

    _READ_SIZE = 65536

    def __init__(self, response: Any, *, api_version: str = "", kind: str = "") -> None:
        self._response = response
        self._buffer = b""
        self._closed = False
        self._reading = False
        self._lock = threading.Lock()
        self._api_version = api_version
        self._kind = kind

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once closed by the caller, by the server (EOF) or after an error event."""
        return self._closed

    def close(self) -> None:
        """Stop the stream; safe to call twice and from any thread.

        Another thread may be blocked reading: only the socket shutdown (a plain syscall) is
        done here then, which wakes it; the reader releases the response itself, because
        http.client objects must not be torn down under a concurrent read.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        try:
            self._response.shutdown()
        except Exception:  # already closed sockets raise on some platforms
            pass
        if not reading:
            self._release()

    def _release(self) -> None:
        # close() so the pool reconnects instead of reusing a connection with an unread stream
        for step in (self._response.close, self._response.release_conn):
            try:
                step()
            except Exception:
                pass

    def _read_chunk(self) -> bytes | None:
        """One read from the socket, or None when the stream was closed meanwhile."""
        with self._lock:
            if self._closed:
                return None
            self._reading = True
        try:
            chunk: bytes = self._response.read1(self._READ_SIZE)
        except Exception as exc:
            with self._lock:
                self._reading = False
                closed = self._closed
            if closed:
                self._release()
                return None
            self.close()
            if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
                raise TransportError(0, "TransportError", f"watch read failed: {exc}") from exc
            raise
        with self._lock:
            self._reading = False
            closed = self._closed
        if closed:
            self._release()
            return None
        return chunk

    def _next_line(self) -> bytes | None:
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = self._buffer[:newline]
                self._buffer = self._buffer[newline + 1 :]
                return line
            chunk = self._read_chunk()
            if chunk is None:
                return None
            if not chunk:
                rest, self._buffer = self._buffer, b""
                self.close()
                return rest if rest.strip() else None
            self._buffer += chunk

    def __next__(self) -> dict[str, Any]:
        while True:
            line = self._next_line()
            if line is None:
                raise StopIteration
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("watch.undecodable_line", line=line[:200].decode("utf-8", "replace"))
                continue
            if not isinstance(event, dict):
                log.warning("watch.malformed_event", event_repr=repr(event)[:200])
                continue
            if event.get("type") == "ERROR":
                obj = event.get("object")
                self.close()
                status = obj.get("code", 0) if isinstance(obj, dict) else 0
                raise error_from_response(
                    status if isinstance(status, int) else 0,
                    obj if isinstance(obj, dict) else None,
                )
            obj = event.get("object")
            if isinstance(obj, dict) and self._kind and event.get("type") != "BOOKMARK":
                obj.setdefault("apiVersion", self._api_version)
                obj.setdefault("kind", self._kind)
            return event


class Client:
    """Thread-safe client working on plain dict objects of any group/version/kind."""

    def __init__(
        self,
        config: kubernetes.client.Configuration | None = None,
        *,
        api_client: kubernetes.client.ApiClient | None = None,
        mapper: RESTMapper | None = None,
        user_agent: str = "llmscaler",
    ) -> None:
        if api_client is None:
            if config is None:
                config = load_config()
            if (config.connection_pool_maxsize or 0) < MIN_POOL_SIZE:
                # every informer holds one pooled connection for its watch
                config.connection_pool_maxsize = MIN_POOL_SIZE
            api_client = kubernetes.client.ApiClient(config)
        self._api_client = api_client
        self._config: kubernetes.client.Configuration = api_client.configuration
        self._host = str(self._config.host).rstrip("/")
        self._user_agent = user_agent
        self.mapper = mapper if mapper is not None else RESTMapper(self._discovery_get)

    @classmethod
    def from_kubeconfig(cls, path: str | None = None) -> Client:
        """Client for ``path`` or, when None, the standard lookup order of load_config."""
        return cls(load_config(path))

    @property
    def configuration(self) -> kubernetes.client.Configuration:
        """The connection settings in use (host, auth, TLS)."""
        return self._config

    def close(self) -> None:
        """Drop pooled connections."""
        self._api_client.rest_client.pool_manager.clear()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- raw requests ---------------------------------------------------------------------

    def _discovery_get(self, path: str) -> dict[str, Any]:
        result = self.request("GET", path)
        return result if isinstance(result, dict) else {}

    def _headers(self, method: str, path: str, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = dict(self._api_client.default_headers)
        headers["Accept"] = "application/json"
        headers["User-Agent"] = self._user_agent
        if content_type:
            headers["Content-Type"] = content_type
        # lets the kubernetes package add the bearer token, refreshing exec/SA tokens first
        self._api_client.update_params_for_auth(headers, [], ["BearerToken"], path, method, None)
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        stream: bool = False,
        timeout: float | None = None,
    ) -> Any:
        """Send one request; return decoded JSON (or the open response when ``stream``).

        Error answers become typed ApiErrors; failures without an answer become
        TransportError. ``body`` may be JSON data, ``str`` or ``bytes``.
        """
        method = method.upper()
        data = _encode_body(body)
        if data is not None and content_type is None:
            content_type = "application/json"
        url = self._host + path
        qs = _query_string(query)
        if qs:
            url += "?" + qs
        headers = self._headers(method, path, content_type)
        read_timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
        pool = self._api_client.rest_client.pool_manager
        try:
            response = pool.request(
                method,
                url,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=min(read_timeout, 10.0), read=read_timeout),
                preload_content=False,
                redirect=False,
                retries=_RETRIES,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise TransportError(0, "TransportError", f"{method} {path}: {exc}") from exc
        if response.status >= 400:
            try:
                payload = response.read()
            except (urllib3.exceptions.HTTPError, OSError):
                payload = b""
            finally:
                response.release_conn()
            raise error_from_response(response.status, payload, response.headers)
        if stream:
            return response
        try:
            payload = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(0, "TransportError", f"{method} {path}: {exc}") from exc
        finally:
            response.release_conn()
        if not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError as exc:
            raise ApiError(
                response.status, "InvalidResponse", f"{method} {path}: answer is not JSON"
            ) from exc

    # -- paths ------------------------------------------------------------------------------

    def _info(self, api_version: str, kind: str) -> ResourceInfo:
        split_api_version(api_version)  # clear ValueError before any network call
        return self.mapper.resource_for(api_version, kind)

    @staticmethod
    def _path(
        info: ResourceInfo,
        namespace: str | None,
        name: str | None = None,
        subresource: str | None = None,
        *,
        need_namespace: bool = True,
    ) -> str:
        path = info.base_path()
        if info.namespaced:
            if namespace:
                path += "/namespaces/" + quote(namespace, safe="")
            elif need_namespace:
                raise ValueError(f"{info.kind} is namespaced: a namespace is required")
        path += "/" + info.plural
        if name is not None:
            if not name:
                raise ValueError("name must not be empty")
            path += "/" + quote(name, safe="")
        if subresource:
            path += "/" + subresource
        return path

    @staticmethod
    def _type_of(obj: Mapping[str, Any]) -> tuple[str, str]:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            raise ValueError("object needs string apiVersion and kind")
        return api_version, kind

    # -- verbs ------------------------------------------------------------------------------

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """GET one object (or one of its subresources)."""
        info = self._info(api_version, kind)
        result: dict[str, Any] = self.request("GET", self._path(info, namespace, name, subresource))
        return result

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> dict[str, Any]:
        """One LIST page; ``namespace=None`` lists across all namespaces.

        Items get ``apiVersion``/``kind`` filled in, because the server omits them inside
        lists for built-in types and handlers downstream want self-describing objects.
        """
        info = self._info(api_version, kind)
        query = {
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
            "limit": limit,
            "continue": continue_ or None,
            "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds,
        }
        result: dict[str, Any] = self.request(
            "GET", self._path(info, namespace, need_namespace=False), query=query
        )
        for item in result.get("items") or ():
            if isinstance(item, dict):
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
        return result

    def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Follow ``continue`` tokens; return (all items, the list's resourceVersion)."""
        items: builtins.list[dict[str, Any]] = []
        token: str | None = None
        list_rv = ""
        while True:
            page = self.list(
                api_version,
                kind,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=limit,
                continue_=token,
                resource_version=resource_version if token is None else None,
                timeout_seconds=timeout_seconds,
            )
            items.extend(page.get("items") or ())
            meta = _meta(page)
            list_rv = str(meta.get("resourceVersion") or list_rv)
            token = meta.get("continue") or None
            if not token:
                return items, list_rv

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
    ) -> WatchStream:
        """Open a watch; iterate the returned stream and ``close()`` it when done."""
        info = self._info(api_version, kind)
        query = {
            "watch": "true",
            "resourceVersion": resource_version or None,
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
            "allowWatchBookmarks": True if allow_bookmarks else None,
            "timeoutSeconds": timeout_seconds,
        }
        read_timeout = (timeout_seconds or 300) + WATCH_READ_SLACK
        response = self.request(
            "GET",
            self._path(info, namespace, need_namespace=False),
            query=query,
            stream=True,
            timeout=read_timeout,
        )
        return WatchStream(response, api_version=api_version, kind=kind)

    def create(
        self,
        obj: dict[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """POST a new object (or a subresource such as ``pods/eviction``)."""
        api_version, kind = self._type_of(obj)
        info = self._info(api_version, kind)
        ns = namespace or _meta(obj).get("namespace")
        name = _meta(obj).get("name") if subresource else None
        query = {"dryRun": "All" if dry_run else None, "fieldManager": field_manager}
        result: dict[str, Any] = self.request(
            "POST", self._path(info, ns, name, subresource), query=query, body=obj
        )
        return result

    def update(
        self,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PUT the whole object; a stale ``metadata.resourceVersion`` fails with Conflict."""
        api_version, kind = self._type_of(obj)
        info = self._info(api_version, kind)
        meta = _meta(obj)
        result: dict[str, Any] = self.request(
            "PUT",
            self._path(info, meta.get("namespace"), str(meta.get("name") or ""), subresource),
            query={"fieldManager": field_manager},
            body=obj,
        )
        return result

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT the ``status`` subresource (spec changes in ``obj`` are ignored by the server)."""
        return self.update(obj, subresource="status")

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """PATCH with a JSON merge, strategic merge (built-in kinds only) or JSON patch."""
        content_type = _PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"patch_type must be one of {sorted(_PATCH_CONTENT_TYPES)}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type != "json" and not isinstance(patch, dict):
            raise ValueError(f"a {patch_type} patch is a JSON object")
        info = self._info(api_version, kind)
        result: dict[str, Any] = self.request(
            "PATCH",
            self._path(info, namespace, name, subresource),
            query={"fieldManager": field_manager},
            body=patch,
            content_type=content_type,
        )
        return result

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply: send only the fields this manager owns (JSON is valid YAML).

        ``force`` takes ownership from other managers, as controllers should for fields they
        are responsible for; without it a shared field answers 409 Conflict.
        """
        if not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        api_version, kind = self._type_of(obj)
        meta = _meta(obj)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("server-side apply needs metadata.name")
        info = self._info(api_version, kind)
        result: dict[str, Any] = self.request(
            "PATCH",
            self._path(info, meta.get("namespace"), name, subresource),
            query={"fieldManager": field_manager, "force": True if force else None},
            body=obj,
            content_type=APPLY_CONTENT_TYPE,
        )
        return result

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any] | None:
        """DELETE; returns the object (finalizers/grace pending) or the server's Status."""
        if propagation_policy not in (None, "Foreground", "Background", "Orphan"):
            raise ValueError("propagation_policy must be Foreground, Background or Orphan")
        info = self._info(api_version, kind)
        body: dict[str, Any] | None = None
        if propagation_policy is not None or grace_period_seconds is not None:
            body = {"kind": "DeleteOptions", "apiVersion": "v1"}
            if propagation_policy is not None:
                body["propagationPolicy"] = propagation_policy
            if grace_period_seconds is not None:
                body["gracePeriodSeconds"] = grace_period_seconds
        result: dict[str, Any] | None = self.request(
            "DELETE", self._path(info, namespace, name), body=body
        )
        return result

    def get_scale(self, api_version: str, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """GET the ``scale`` subresource (autoscaling/v1 Scale)."""
        return self.get(api_version, kind, name, namespace, subresource="scale")
