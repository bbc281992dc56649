"""Watch streaming: initial events, live events, bookmarks and the 410 of a too-old resume.

A watch is one long response: chunked line-delimited JSON events until the timeout, the
client going away or the server stopping. The stream's rules (sendInitialEvents and the
initial-events-end bookmark, periodic bookmarks only when nothing is queued, ERROR events for
410, Table rendering per event) are the same whatever transport carries them, so they are
written against a small :class:`Stream` that the HTTP handler implements.
"""

from __future__ import annotations

import json
import queue
import ssl
import time
from typing import Any, Protocol

from ..errors import StatusError, bad_request
from ..registry import ResourceType
from ..storage import Watcher
from . import tables
from .request import Request, Resource


class Stream(Protocol):
    """The response a watch writes to."""

    def begin(self) -> None:
        """Send the 200 and the chunked-encoding headers (and record the request)."""

    def chunk(self, data: bytes) -> None:
        """Send one chunk and flush it."""

    def client_gone(self) -> bool:
        """Whether the client has closed its end (checked while the watch is idle)."""

    def end(self) -> None:
        """Send the last chunk; the connection closes after a watch."""

    def abort(self) -> None:
        """The connection broke: close it without another write."""


def _event(
    req: Request, out: Stream, etype: str, obj: dict[str, Any], rt: ResourceType, version: str
) -> None:
    if req.want_table() and etype != "ERROR" and etype != "BOOKMARK":
        obj = tables.table(
            rt,
            version,
            [obj],
            obj["metadata"].get("resourceVersion", ""),
            req.include_object(),
        )
    elif version != rt.preferred_version and etype not in ("ERROR", "BOOKMARK"):
        obj = dict(obj)
        obj["apiVersion"] = rt.api_version(version)
    out.chunk(json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n")


def _bookmark(
    req: Request,
    out: Stream,
    rt: ResourceType,
    version: str,
    rv: str,
    annotations: dict[str, str] | None = None,
) -> None:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if annotations:
        meta["annotations"] = annotations
    obj = {"kind": rt.kind, "apiVersion": rt.api_version(version), "metadata": meta}
    _event(req, out, "BOOKMARK", obj, rt, version)


def serve(req: Request, out: Stream, res: Resource) -> None:
    """Run one watch to its end."""
    rt, version, namespace = res.rt, res.version, res.namespace
    api = req.api
    st = api.storage
    q = req.query
    timeout = api.default_watch_timeout
    if q.get("timeoutSeconds"):
        try:
            timeout = float(q["timeoutSeconds"])
        except ValueError:
            raise bad_request("timeoutSeconds must be a number") from None
    bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
    rv = q.get("resourceVersion")
    send_initial = q.get("sendInitialEvents")
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
                label_selector=q.get("labelSelector"),
                field_selector=q.get("fieldSelector"),
                resource_version=rv,
            )
        except StatusError as err:
            if err.code != 410:
                raise
            gone = err
    out.begin()
    try:
        if gone is not None:
            _event(req, out, "ERROR", gone.status(), rt, version)
        for etype, obj in initial:
            _event(req, out, etype, obj, rt, version)
        if w is not None and bookmarks and send_initial in ("true", "1"):
            # WatchList: the end of the initial state, as a bookmark with this annotation.
            _bookmark(req, out, rt, version, str(w.last_rv), {"k8s.io/initial-events-end": "true"})
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
                _event(req, out, etype, obj, rt, version)
                continue
            if out.client_gone():
                break
            if bookmarks and time.monotonic() - last_mark >= api.bookmark_interval:
                mark = st.bookmark_rv(w)
                if mark is not None:
                    _bookmark(req, out, rt, version, mark)
                    last_mark = time.monotonic()
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
        out.abort()
        return
    finally:
        if w is not None:
            st.stop_watch(w)
    out.end()


__all__ = ["Stream", "serve"]
