"""Discovery: the version, the API group and resource lists, and the OpenAPI documents.

Everything a client asks before it touches an object (``/version``, ``/api``, ``/apis``,
``/apis/<group>``, ``/api/v1``, ``/openapi/v3/...``) is derived from the registry alone, so it
is answered here without storage or handler state: :func:`document` maps such a path to its
document, and the routing only has to ask.
"""

from __future__ import annotations

from typing import Any

from .. import openapi
from ..errors import StatusError
from ..registry import Registry

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


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """The APIResourceList of one group version (``/api/v1``, ``/apis/apps/v1``)."""
    resources: list[dict[str, Any]] = []
    for rt in sorted(registry.all(), key=lambda r: r.plural):
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


def group_list(registry: Registry) -> dict[str, Any]:
    """The APIGroupList (``/apis``): well-known groups first, as kube-apiserver sorts them."""
    groups = []
    for name, versions in registry.groups().items():
        if not name:
            continue
        groups.append(group(registry, name, versions))
    groups.sort(key=lambda g: (not g["name"].endswith("k8s.io") and "." in g["name"], g["name"]))
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str, versions: list[str]) -> dict[str, Any]:
    """One APIGroup entry: its versions and the preferred one."""
    preferred = versions[0]
    for rt in registry.all():
        if rt.group == name:
            preferred = rt.preferred_version
            break
    return {
        "name": name,
        "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{name}/{preferred}", "version": preferred},
    }


def not_found() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource")


def document(registry: Registry, path: str, host: str, port: int) -> Any | None:
    """The discovery document at ``path`` (None when it is no discovery path); 404 for an
    unknown OpenAPI group version."""
    segs = [s for s in path.split("/") if s]
    if path == "/version":
        return SERVER_VERSION
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{host}:{port}"}
            ],
        }
    if path == "/apis":
        return group_list(registry)
    if segs[:2] == ["openapi", "v3"]:
        if len(segs) == 2:
            return openapi.root_doc(registry)
        gv = segs[2:]
        if gv[:1] == ["api"] and len(gv) == 2:
            return openapi.group_version_doc(registry, "", gv[1])
        if gv[:1] == ["apis"] and len(gv) == 3 and gv[1] in registry.groups():
            return openapi.group_version_doc(registry, gv[1], gv[2])
        raise not_found()
    return None


__all__ = ["SERVER_VERSION", "document", "group", "group_list", "not_found", "resource_list"]
