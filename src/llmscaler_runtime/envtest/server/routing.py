"""Routing: which document or which resource a request path names.

kube-apiserver's URL scheme (``/api/v1/namespaces/<ns>/<plural>/<name>/<sub>``, ``/apis/<group>
/<version>/...``) is resolved here against the registry, without touching the request or the
storage: :func:`resolve` yields either a discovery :class:`Document` or a :class:`Target`, and
:func:`lookup` turns a target into its resource type, with the 404s kube-apiserver answers
for unknown resources and subresources. The handler records the target before the lookup, so
the request recorder sees what was asked even when it does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import not_found
from ..registry import Registry, ResourceType
from . import discovery
from .request import method_not_allowed

HEALTH_PATHS = ("/healthz", "/livez", "/readyz")


@dataclass(frozen=True)
class Document:
    """A discovery document to answer with 200."""

    body: Any


@dataclass(frozen=True)
class Target:
    """A resource path: the collection (``name`` None), one object, or a subresource."""

    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    sub: str | None


def resolve(registry: Registry, method: str, path: str, host: str, port: int) -> Document | Target:
    """The document or resource ``path`` names; 404 (405) for what the server does not serve."""
    doc = discovery.document(registry, path, host, port)
    if doc is not None:
        return Document(doc)
    segs = [s for s in path.split("/") if s]
    if segs[:1] == ["api"] and len(segs) >= 2:
        group, version, rest = "", segs[1], segs[2:]
        if version != "v1":
            raise discovery.not_found()
    elif segs[:1] == ["apis"] and len(segs) >= 2:
        group = segs[1]
        versions = registry.groups().get(group)
        if versions is None:
            raise discovery.not_found()
        if len(segs) == 2:
            return Document(
                {
                    "kind": "APIGroup",
                    "apiVersion": "v1",
                    **discovery.group(registry, group, versions),
                }
            )
        version, rest = segs[2], segs[3:]
        if version not in versions:
            raise discovery.not_found()
    else:
        raise discovery.not_found()
    if not rest:
        if method != "GET":
            raise method_not_allowed()
        return Document(discovery.resource_list(registry, group, version))
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise discovery.not_found()
    return Target(
        group=group,
        version=version,
        plural=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else None,
        sub=rest[2] if len(rest) > 2 else None,
    )


def lookup(registry: Registry, target: Target) -> tuple[ResourceType, str | None]:
    """The resource type of ``target`` and its namespace (None for cluster-scoped kinds)."""
    rt = registry.by_resource(target.group, target.version, target.plural)
    if rt is None:
        raise discovery.not_found()
    sub, name = target.sub, target.name
    if (
        sub is not None
        and sub not in rt.subresources
        and not (rt.key == ("", "namespaces") and sub == "finalize")
    ):
        if rt.crd_name is not None and name is not None:
            # apiextensions-apiserver answers as if the object did not exist.
            raise not_found(rt.group, rt.plural, name)
        raise discovery.not_found()
    return rt, target.namespace if rt.namespaced else None


__all__ = ["HEALTH_PATHS", "Document", "Target", "lookup", "resolve"]
