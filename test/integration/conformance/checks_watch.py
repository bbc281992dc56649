"""Watch (resume, bookmarks, 410, selectors), list paging, Events and Leases."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from .framework import (
    MERGE,
    Server,
    check,
    core_path,
    drop_times,
    llms_path,
    mask_numbers,
    scaler,
    strip_meta,
)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/{ns}/events"


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"v": "0"}}


def watch(s: Server, path: str, seconds: int, **query: Any) -> list[dict[str, Any]]:
    """Every event of a watch that the server ends after ``seconds``."""
    q = {"watch": "true", "timeoutSeconds": str(seconds), **query}
    with s.stream(path, q, timeout=seconds + 30) as events:
        return list(events)


def describe(ev: dict[str, Any]) -> Any:
    """An event reduced to its type and the object's identity and payload."""
    obj = ev.get("object") or {}
    if ev.get("type") == "BOOKMARK":
        meta = obj.get("metadata") or {}
        return {
            "type": "BOOKMARK",
            "kind": obj.get("kind"),
            "apiVersion": obj.get("apiVersion"),
            "metadata": sorted(meta),
            "annotations": meta.get("annotations"),
            "keys": sorted(obj),
        }
    if ev.get("type") == "ERROR":
        return {
            "type": "ERROR",
            "code": obj.get("code"),
            "reason": obj.get("reason"),
            "message": mask_numbers(str(obj.get("message"))),
        }
    return [
        ev.get("type"),
        (obj.get("metadata") or {}).get("name"),
        obj.get("data") or obj.get("spec"),
    ]


@check("watch")
def check_watch_resume_from_list(s: Server, ns: str) -> Any:
    """A watch from a list's resourceVersion replays exactly what happened after it."""
    path = core_path(ns, "configmaps")
    s.ok("POST", path, cm("a", {"w": "1"}))
    rv = s.ok("GET", path, query={"labelSelector": "w=1"})["metadata"]["resourceVersion"]
    s.ok("POST", path, cm("b", {"w": "1"}))
    s.ok("PATCH", path + "/a", {"data": {"v": "1"}}, content_type=MERGE)
    s.ok("DELETE", path + "/b")
    events = watch(s, path, 1, resourceVersion=rv, labelSelector="w=1")
    return [describe(e) for e in events]


@check("watch")
def check_watch_resume_from_event(s: Server, ns: str) -> Any:
    """Resuming from an event's resourceVersion skips that event and everything before."""
    path = llms_path(ns)
    s.ok("POST", path, scaler("a"))
    mid = s.ok("PATCH", path + "/a", {"spec": {"maxReplicas": 5}}, content_type=MERGE)
    s.ok("PATCH", path + "/a", {"spec": {"maxReplicas": 6}}, content_type=MERGE)
    s.ok("POST", path, scaler("b"))
    events = watch(s, path, 1, resourceVersion=mid["metadata"]["resourceVersion"])
    return [
        [e["type"], e["object"]["metadata"]["name"], e["object"]["spec"]["maxReplicas"]]
        for e in events
    ]


@check("watch")
def check_watch_without_resource_version(s: Server, ns: str) -> Any:
    """A watch without resourceVersion starts with ADDED for every existing object."""
    path = llms_path(ns)
    for name in ("b", "a", "c"):
        s.ok("POST", path, scaler(name))
    events = watch(s, path, 1)
    return sorted([e["type"], e["object"]["metadata"]["name"]] for e in events)


@check("watch")
def check_watch_bookmarks(s: Server, ns: str) -> Any:
    """allowWatchBookmarks: a BOOKMARK (only a resourceVersion) shortly before the timeout."""
    path = core_path(ns, "configmaps")
    s.ok("POST", path, cm("a", {"w": "1"}))
    rv = s.ok("GET", path, query={"labelSelector": "w=1"})["metadata"]["resourceVersion"]
    started = time.monotonic()
    events = watch(s, path, 3, resourceVersion=rv, allowWatchBookmarks="true", labelSelector="w=1")
    took = time.monotonic() - started
    marks = [e for e in events if e["type"] == "BOOKMARK"]
    return {
        "events": [describe(e) for e in events],
        "bookmark_rv_not_older": all(
            int(m["object"]["metadata"]["resourceVersion"]) >= int(rv) for m in marks
        ),
        "ended_by_timeout": 2.5 < took < 10,
    }


@check("watch")
def check_watch_too_old_resource_version(s: Server, ns: str) -> Any:
    """A resume point from before the resource's history: one ERROR event with 410 Expired,
    for a watch; the same resourceVersion is fine for a list."""
    path = llms_path(ns)
    s.ok("POST", path, scaler("a"))
    events = watch(s, path, 2, resourceVersion="1")
    listed = s.call(
        "GET", path, query={"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan"}
    )
    return {"watch": [describe(e) for e in events], "list": listed.code}


@check("watch")
def check_watch_label_selector_transitions(s: Server, ns: str) -> Any:
    """An object moving into / out of a selector is seen as ADDED / DELETED."""
    path = core_path(ns, "configmaps")
    s.ok("POST", path, cm("a", {"team": "x"}))
    rv = s.ok("GET", path, query={"labelSelector": "team=y"})["metadata"]["resourceVersion"]
    s.ok("PATCH", path + "/a", {"metadata": {"labels": {"team": "y"}}}, content_type=MERGE)
    s.ok("PATCH", path + "/a", {"data": {"v": "2"}}, content_type=MERGE)
    s.ok("PATCH", path + "/a", {"metadata": {"labels": {"team": "z"}}}, content_type=MERGE)
    events = watch(s, path, 1, resourceVersion=rv, labelSelector="team=y")
    return [describe(e) for e in events]


@check("watch")
def check_watch_field_selector(s: Server, ns: str) -> Any:
    """metadata.name field selector on a watch, and an unsupported field selector."""
    path = llms_path(ns)
    s.ok("POST", path, scaler("a"))
    s.ok("POST", path, scaler("b"))
    events = watch(s, path, 1, fieldSelector="metadata.name=b")
    bad = s.call("GET", path, query={"fieldSelector": "spec.minReplicas=1"})
    return {
        "events": [[e["type"], e["object"]["metadata"]["name"]] for e in events],
        "bad": bad.status(),
    }


@check("watch")
def check_watch_initial_events(s: Server, ns: str) -> Any:
    """WatchList (sendInitialEvents): the current state, then a BOOKMARK annotated
    k8s.io/initial-events-end; with sendInitialEvents=false nothing from before."""
    path = core_path(ns, "configmaps")
    s.ok("POST", path, cm("a", {"w": "1"}))
    s.ok("POST", path, cm("b", {"w": "1"}))
    out = {}
    for send in ("true", "false"):
        events = watch(
            s,
            path,
            1,
            sendInitialEvents=send,
            allowWatchBookmarks="true",
            resourceVersionMatch="NotOlderThan",
            labelSelector="w=1",
        )
        # A periodic BOOKMARK (no annotation) may land inside the 1 s window at the server's
        # own pace, on either server: only the initial-events-end one is part of the contract.
        out[send] = [describe(e) for e in events if not _periodic_bookmark(e)]
    return out


def _periodic_bookmark(event: Any) -> bool:
    """A BOOKMARK that only moves the resourceVersion (not the initial-events-end marker)."""
    if not isinstance(event, dict) or event.get("type") != "BOOKMARK":
        return False
    meta = (event.get("object") or {}).get("metadata") or {}
    return "k8s.io/initial-events-end" not in (meta.get("annotations") or {})


@check("watch")
def check_watch_and_list_option_errors(s: Server, ns: str) -> Any:
    """ListOptions validation: resourceVersionMatch and sendInitialEvents, watch and list."""
    path = llms_path(ns)
    out = {}
    for query in (
        {"watch": "true", "sendInitialEvents": "true"},
        {"watch": "true", "resourceVersionMatch": "Exact", "resourceVersion": "1"},
        {"sendInitialEvents": "true"},
        {"resourceVersionMatch": "NotOlderThan"},
        {"resourceVersionMatch": "Exact", "resourceVersion": "0"},
        {"resourceVersionMatch": "Newest", "resourceVersion": "1"},
    ):
        ans = s.call("GET", path, query={**query, "timeoutSeconds": "1"})
        out[json.dumps(query, sort_keys=True)] = ans.status()
    return out


@check("watch")
def check_kubectl_get_watch(s: Server, ns: str) -> Any:
    """kubectl get --watch-only prints nothing for a quiet resource and exits at the timeout."""
    s.ok("POST", llms_path(ns), scaler("a"))
    proc = s.kubectl("get", "-n", ns, "llms", "--watch", "--request-timeout=2s")
    lines = [re.sub(r"\s+\S+$", " <age>", line) for line in proc.out.splitlines()]
    return lines


# ---- list paging -------------------------------------------------------------------------------


@check("list paging")
def check_list_paging(s: Server, ns: str) -> Any:
    """limit/continue: page sizes, remainingItemCount, the last page without a token."""
    path = llms_path(ns)
    for i in range(5):
        s.ok("POST", path, scaler(f"s{i}"))
    pages = []
    token = ""
    while True:
        query: dict[str, Any] = {"limit": "2"}
        if token:
            query["continue"] = token
        page = s.ok("GET", path, query=query)
        meta = page["metadata"]
        pages.append(
            {
                "names": [o["metadata"]["name"] for o in page["items"]],
                "remaining": meta.get("remainingItemCount"),
                "continue": bool(meta.get("continue")),
                "kind": page["kind"],
            }
        )
        token = meta.get("continue") or ""
        if not token or len(pages) > 5:
            break
    return pages


@check("list paging")
def check_list_paging_sees_a_snapshot(s: Server, ns: str) -> Any:
    """Objects created between pages: the second page still comes from the first's snapshot."""
    path = llms_path(ns)
    for name in ("a", "c", "e"):
        s.ok("POST", path, scaler(name))
    first = s.ok("GET", path, query={"limit": "1"})
    s.ok("POST", path, scaler("d"))
    s.ok("DELETE", path + "/e")
    second = s.ok("GET", path, query={"limit": "5", "continue": first["metadata"]["continue"]})
    return {
        "first": [o["metadata"]["name"] for o in first["items"]],
        "second": [o["metadata"]["name"] for o in second["items"]],
        "rv_kept": second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"],
    }


@check("list paging")
def check_list_paging_bad_continue_token(s: Server, ns: str) -> Any:
    """A continue token that is not one."""
    ans = s.call("GET", llms_path(ns), query={"limit": "1", "continue": "not-a-token"})
    return ans.status()


@check("list paging")
def check_list_selector_errors(s: Server, ns: str) -> Any:
    """Label selectors that do not parse, and one that does."""
    out = {}
    for sel in ("a in (b", "!", "a==", "a in (b,c),!d,e!=f"):
        ans = s.call("GET", llms_path(ns), query={"labelSelector": sel})
        out[sel] = ans.status() if ans.code >= 300 else ans.body["kind"]
    return out


@check("list paging")
def check_kubectl_chunked_list(s: Server, ns: str) -> Any:
    for i in range(3):
        s.ok("POST", llms_path(ns), scaler(f"s{i}"))
    proc = s.kubectl("get", "-n", ns, "llms", "--chunk-size=1", "-o", "name")
    return [proc.rc, proc.out]


# ---- Events ------------------------------------------------------------------------------------


def core_event(ns: str, name: str, reason: str = "SuccessfulRescale") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {
            "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
            "kind": "LLMScaler",
            "name": "a",
            "namespace": ns,
        },
        "reason": reason,
        "message": "New size: 3",
        "type": "Normal",
        "source": {"component": "llmscaler"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:01Z",
        "count": 2,
    }


def v1_event(ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "modelsphere.dev/llmscaler",
        "reportingInstance": "llmscaler-0",
        "action": "Scale",
        "reason": "SuccessfulRescale",
        "note": "New size: 3",
        "type": "Normal",
        "regarding": {
            "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
            "kind": "LLMScaler",
            "name": "a",
            "namespace": ns,
        },
    }


@check("Events")
def check_event_core_round_trip(s: Server, ns: str) -> Any:
    """A core/v1 Event as llmscaler writes it, read back."""
    made = s.call("POST", core_path(ns, "events"), core_event(ns, "a.1"))
    got = s.ok("GET", core_path(ns, "events", "a.1"))
    return {"code": made.code, "object": strip_meta(got)}


@check("Events")
def check_event_core_field_selectors(s: Server, ns: str) -> Any:
    """What kubectl describe asks for: events by involvedObject fields, reason and type."""
    s.ok("POST", core_path(ns, "events"), core_event(ns, "a.1"))
    s.ok("POST", core_path(ns, "events"), core_event(ns, "a.2", "FailedRescale"))
    out = {}
    for sel in (
        f"involvedObject.name=a,involvedObject.namespace={ns},involvedObject.kind=LLMScaler",
        "reason=FailedRescale",
        "type=Normal,source=llmscaler",
        "involvedObject.uid=",
    ):
        ans = s.call("GET", core_path(ns, "events"), query={"fieldSelector": sel})
        out[sel] = (
            ans.status()
            if ans.code >= 300
            else sorted(o["metadata"]["name"] for o in ans.body["items"])
        )
    return out


@check("Events")
def check_event_v1_round_trip(s: Server, ns: str) -> Any:
    """An events.k8s.io/v1 Event, read back through the same API."""
    made = s.call("POST", EVENTS_V1.format(ns=ns), v1_event(ns, "b.1"))
    got = s.ok("GET", EVENTS_V1.format(ns=ns) + "/b.1")
    return {"code": made.code, "object": strip_meta(got)}


@check("Events")
def check_event_v1_seen_as_core(s: Server, ns: str) -> Any:
    """One Event storage: an events.k8s.io/v1 Event is a core/v1 Event too, and back."""
    s.ok("POST", EVENTS_V1.format(ns=ns), v1_event(ns, "b.1"))
    s.ok("POST", core_path(ns, "events"), core_event(ns, "a.1"))
    as_core = s.call("GET", core_path(ns, "events", "b.1"))
    as_v1 = s.call("GET", EVENTS_V1.format(ns=ns) + "/a.1")
    return {
        "as_core": strip_meta(as_core.body) if as_core.code == 200 else as_core.status(),
        "as_v1": strip_meta(as_v1.body) if as_v1.code == 200 else as_v1.status(),
    }


@check("Events")
def check_event_v1_validation(s: Server, ns: str) -> Any:
    """events.k8s.io/v1 requires eventTime, reportingController, reportingInstance, action."""
    body = v1_event(ns, "b.1")
    for k in ("eventTime", "reportingController", "reportingInstance", "action"):
        del body[k]
    body["type"] = "Info"
    return s.call("POST", EVENTS_V1.format(ns=ns), body).status()


@check("Events")
def check_kubectl_events(s: Server, ns: str) -> Any:
    """kubectl events for one object (the columns, the order)."""
    s.ok("POST", llms_path(ns), scaler("a"))
    s.ok("POST", core_path(ns, "events"), core_event(ns, "a.1"))
    s.ok("POST", core_path(ns, "events"), core_event(ns, "a.2", "FailedRescale"))
    proc = s.kubectl("events", "-n", ns, "--for=llmscaler/a")
    return [proc.rc, re.sub(r"\S+ \(x2 over \S+\)|\b\d+\w*\b", "<age>", proc.out), proc.err]


# ---- Leases ------------------------------------------------------------------------------------


def lease(name: str, holder: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "holderIdentity": holder,
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:00.000000Z",
        "leaseTransitions": 0,
    }
    body.update(spec)
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": body,
    }


@check("Leases")
def check_lease_round_trip(s: Server, ns: str) -> Any:
    """A leader-election Lease: MicroTime precision as sent and as normalized."""
    path = LEASES.format(ns=ns)
    made = s.call("POST", path, lease("a", "pod-1", renewTime="2026-01-01T00:00:00.5Z"))
    second = s.call("POST", path, lease("b", "pod-1", acquireTime="2026-01-01T00:00:00Z"))
    return {"a": [made.code, strip_meta(made.body)], "b": [second.code, strip_meta(second.body)]}


@check("Leases")
def check_lease_handover(s: Server, ns: str) -> Any:
    """Leader election's writes: renew by update, a stale update refused, a takeover."""
    path = LEASES.format(ns=ns)
    held = s.ok("POST", path, lease("a", "pod-1"))
    renewed = dict(held, spec=dict(held["spec"], renewTime="2026-01-01T00:00:05.000000Z"))
    renewed = s.ok("PUT", path + "/a", renewed)
    stale = dict(held, spec=dict(held["spec"], holderIdentity="pod-2", leaseTransitions=1))
    refused = s.call("PUT", path + "/a", stale).status()
    taken = dict(renewed, spec=dict(renewed["spec"], holderIdentity="pod-2", leaseTransitions=1))
    taken = s.ok("PUT", path + "/a", taken)
    return {
        "refused": refused,
        "spec": taken["spec"],
        "generation": taken["metadata"].get("generation"),
    }


@check("Leases")
def check_lease_validation(s: Server, ns: str) -> Any:
    path = LEASES.format(ns=ns)
    bad = s.call("POST", path, lease("a", "p", leaseDurationSeconds=0, leaseTransitions=-1))
    return bad.status()


@check("Leases")
def check_kubectl_get_leases(s: Server, ns: str) -> Any:
    s.ok("POST", LEASES.format(ns=ns), lease("a", "pod-1"))
    proc = s.kubectl("get", "-n", ns, "leases")
    return drop_times([proc.rc, re.sub(r"\b\d+(s|m|h|d)\w*\b", "<age>", proc.out)])
