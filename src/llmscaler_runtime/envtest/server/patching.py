"""PATCH on the wire: the content type picks the patch type, ``force`` only for apply, and
``/scale`` is patched as a Scale document.

The storage applies patches to objects; what is left here is kube-apiserver's request
handling around them: which media types are patch types, how the body is read (apply bodies
are YAML), that apply needs a fieldManager, and the 200-or-201 answer of an apply that
created the object.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from .. import patch as patchlib
from ..errors import FieldError, StatusError, bad_request, field_manager_required, invalid
from .request import Reply, Request, Resource, method_not_allowed

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


def load_apply(body: bytes) -> Any:
    """Apply bodies are YAML; JSON (what most clients send) takes the fast path."""
    try:
        return json.loads(body)
    except ValueError:
        return yaml.safe_load(body)


def patch(req: Request, res: Resource, body: bytes) -> Reply:
    rt, version, namespace, name, sub = res
    req.rec["verb"] = "patch"
    if name is None:
        raise method_not_allowed()
    st = req.storage
    ptype = PATCH_TYPES.get(req.content_type())
    if ptype is None:
        raise StatusError(415, "UnsupportedMediaType", UNSUPPORTED_PATCH)
    try:
        doc = load_apply(body) if ptype == "apply" else json.loads(body or b"null")
    except (ValueError, yaml.YAMLError) as exc:
        what = "error decoding YAML" if ptype == "apply" else "error decoding patch"
        raise bad_request(f"{what}: {exc}") from None
    force = req.query.get("force") in ("true", "1")
    if ptype == "apply" and not req.query.get("fieldManager"):
        raise field_manager_required()
    if ptype != "apply" and "force" in req.query:
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
    req.maybe_conflict(rt, name)
    if sub == "scale" and ptype == "apply":
        return Reply(
            200,
            st.apply_scale(
                rt,
                namespace,
                name,
                doc,
                manager=req.query.get("fieldManager", ""),
                force=force,
                dry_run=req.dry_run(),
            ),
        )
    if sub == "scale":
        scale = st.get_scale(rt, namespace, name)
        if ptype == "json":
            scale = patchlib.json_patch(scale, doc)
        else:
            if not isinstance(doc, dict):
                raise bad_request("patch must be a JSON object")
            scale = patchlib.merge_patch(
                scale, {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
            )
        return Reply(
            200,
            st.update_scale(
                rt, namespace, name, scale, manager=req.manager(), dry_run=req.dry_run()
            ),
        )
    manager = req.query.get("fieldManager", "") if ptype == "apply" else req.manager()
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
        dry_run=req.dry_run(),
        field_validation=req.field_validation(),
    )
    return Reply(200 if existed else 201, obj, rt, version, warnings)


__all__ = ["PATCH_TYPES", "load_apply", "patch"]
