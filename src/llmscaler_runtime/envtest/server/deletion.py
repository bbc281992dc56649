"""DELETE and deletecollection on the wire: delete options, and what the answer is.

Options come from the query and from a DeleteOptions body (gracePeriodSeconds,
propagationPolicy, preconditions, dryRun). The answer is kube-apiserver's: the object while it
lingers (finalizers, a grace period), the deleted object for the kinds whose storage returns
it, and a ``Status`` of Success for everything removed at once. The storage decides *whether*
an object goes; this module only decides how that is reported.
"""

from __future__ import annotations

from typing import Any

from ..errors import StatusError, bad_request
from .request import Reply, Request, Resource

#: Kinds whose storage answers a DELETE with the deleted object (``ReturnDeletedObject``);
#: every other kind answers an immediate deletion with a ``Status``.
_RETURNS_DELETED_OBJECT = frozenset(
    {("", "pods"), ("", "services"), ("", "serviceaccounts"), ("", "namespaces")}
)


def delete(req: Request, res: Resource, body: bytes) -> Reply:
    rt, version, namespace, name, _ = res
    st = req.storage
    opts: dict[str, Any] = {}
    if body.strip():
        decoded = req.decode(body, allow_yaml=False)
        if isinstance(decoded, dict):
            opts = decoded
    grace = opts.get("gracePeriodSeconds")
    if "gracePeriodSeconds" in req.query:
        try:
            grace = int(req.query["gracePeriodSeconds"])
        except ValueError:
            raise bad_request("gracePeriodSeconds must be an integer") from None
    propagation = req.query.get("propagationPolicy") or opts.get("propagationPolicy")
    if propagation not in (None, "Orphan", "Background", "Foreground"):
        raise bad_request(
            f'propagationPolicy: Unsupported value: "{propagation}": supported values: '
            '"Foreground", "Background", "Orphan"'
        )
    dry = req.dry_run() or opts.get("dryRun") == ["All"]
    if name is None:
        req.rec["verb"] = "deletecollection"
        lst = st.list_rt(
            rt,
            namespace,
            label_selector=req.query.get("labelSelector"),
            field_selector=req.query.get("fieldSelector"),
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
        return Reply(200, lst)
    req.rec["verb"] = "delete"
    req.maybe_conflict(rt, name)
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
        return Reply(
            200,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            },
        )
    return Reply(200, result, rt, version)


__all__ = ["delete"]
