"""The plain resource verbs: list, get, create and update (``PUT``, ``/status``, ``/scale``,
``/finalize``).

Each turns a routed request into one storage call and a :class:`~.request.Reply`; PATCH,
DELETE and watch have modules of their own because each carries protocol rules of its own
(patch types and apply, delete options and the Status answer, the chunked stream).
"""

from __future__ import annotations

from . import tables
from .request import Reply, Request, Resource, method_not_allowed


def list_objects(req: Request, res: Resource) -> Reply:
    rt, version, namespace = res.rt, res.version, res.namespace
    req.rec["verb"] = "list"
    q = req.query
    lst = req.storage.list_rt(
        rt,
        namespace,
        label_selector=q.get("labelSelector"),
        field_selector=q.get("fieldSelector"),
        limit=int(q["limit"]) if q.get("limit", "").isdigit() else None,
        continue_token=q.get("continue") or None,
        version=version,
        resource_version=q.get("resourceVersion"),
    )
    if req.want_table():
        extra = {k: v for k, v in lst["metadata"].items() if k != "resourceVersion"}
        return Reply(
            200,
            tables.table(
                rt,
                version,
                lst["items"],
                lst["metadata"]["resourceVersion"],
                req.include_object(),
                extra,
            ),
        )
    return Reply(200, lst)


def get(req: Request, res: Resource) -> Reply:
    rt, version, namespace, name, sub = res
    assert name is not None
    req.rec["verb"] = "get"
    if sub == "scale":
        return Reply(200, req.storage.get_scale(rt, namespace, name))
    return Reply(200, req.storage.get_rt(rt, namespace, name, version), rt, version)


def create(req: Request, res: Resource, body: bytes) -> Reply:
    rt, version, namespace, name, _ = res
    req.rec["verb"] = "create"
    if name is not None:
        raise method_not_allowed()
    obj = req.decode(body)
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    req.maybe_conflict(rt, str((meta or {}).get("name", "")) if isinstance(meta, dict) else "")
    created, warnings = req.storage.create_rt(
        rt,
        namespace,
        obj,
        manager=req.manager(),
        dry_run=req.dry_run(),
        field_validation=req.field_validation(),
    )
    return Reply(201, created, rt, version, warnings)


def update(req: Request, res: Resource, body: bytes) -> Reply:
    rt, version, namespace, name, sub = res
    req.rec["verb"] = "update"
    if name is None:
        raise method_not_allowed()
    obj = req.decode(body)
    req.maybe_conflict(rt, name)
    st = req.storage
    if sub == "scale":
        return Reply(
            200,
            st.update_scale(rt, namespace, name, obj, manager=req.manager(), dry_run=req.dry_run()),
        )
    if sub == "finalize":
        sub = None
    updated, warnings = st.update_rt(
        rt,
        namespace,
        name,
        obj,
        subresource=sub,
        manager=req.manager(),
        dry_run=req.dry_run(),
        field_validation=req.field_validation(),
    )
    return Reply(200, updated, rt, version, warnings)


__all__ = ["create", "get", "list_objects", "update"]
