"""The resource types the embedded server serves: built-in kinds plus those added by CRDs."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import attrs

from .errors import StatusError

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
BASE_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@attrs.frozen
class ScaleSpec:
    """Where the scale subresource reads and writes replicas (CRD ``subresources.scale``)."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = ".status.selector"


@attrs.frozen
class ResourceType:
    """One served resource (group, versions, plural, kind, scope, subresources, schema)."""

    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    scale: ScaleSpec | None = None
    verbs: tuple[str, ...] = ALL_VERBS
    field_selectors: frozenset[str] = BASE_FIELDS
    # CRD-only: per-version openAPIV3Schema, printer columns and owning CRD name.
    schemas: dict[str, dict[str, Any]] = attrs.field(factory=dict, eq=False, hash=False)
    printer_columns: dict[str, list[dict[str, Any]]] = attrs.field(
        factory=dict, eq=False, hash=False
    )
    crd_name: str | None = None
    storage_version: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def preferred_version(self) -> str:
        return self.storage_version or self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        v = version or self.preferred_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def schema(self, version: str | None = None) -> dict[str, Any] | None:
        if not self.schemas:
            return None
        return self.schemas.get(version or self.preferred_version) or next(
            iter(self.schemas.values())
        )


def _rt(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short: Iterable[str] = (),
    cats: Iterable[str] = (),
    sub: Iterable[str] = (),
    scale: bool = False,
    fields: Iterable[str] = (),
) -> ResourceType:
    return ResourceType(
        group=group,
        versions=(version,),
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=tuple(short),
        categories=tuple(cats),
        subresources=frozenset(sub) | ({"scale"} if scale else frozenset()),
        scale=ScaleSpec(label_selector_path=None) if scale else None,
        field_selectors=BASE_FIELDS | frozenset(fields),
        storage_version=version,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _rt(
        "",
        "v1",
        "Namespace",
        "namespaces",
        namespaced=False,
        short=["ns"],
        sub=["status"],
        fields=["status.phase"],
    ),
    _rt(
        "",
        "v1",
        "Pod",
        "pods",
        short=["po"],
        cats=["all"],
        sub=["status"],
        fields=[
            "status.phase",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.podIP",
            "status.nominatedNodeName",
        ],
    ),
    _rt("", "v1", "Service", "services", short=["svc"], cats=["all"], sub=["status"]),
    _rt("", "v1", "ConfigMap", "configmaps", short=["cm"]),
    _rt("", "v1", "Secret", "secrets", fields=["type"]),
    _rt("", "v1", "ServiceAccount", "serviceaccounts", short=["sa"]),
    _rt(
        "",
        "v1",
        "Event",
        "events",
        short=["ev"],
        fields=[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
            "source",
        ],
    ),
    _rt(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        short=["deploy"],
        cats=["all"],
        sub=["status"],
        scale=True,
    ),
    _rt(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        short=["rs"],
        cats=["all"],
        sub=["status"],
        scale=True,
    ),
    _rt(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        short=["sts"],
        cats=["all"],
        sub=["status"],
        scale=True,
    ),
    _rt("coordination.k8s.io", "v1", "Lease", "leases"),
    _rt("events.k8s.io", "v1", "Event", "events", short=["ev"]),
    _rt(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        namespaced=False,
        short=["crd", "crds"],
        cats=["api-extensions"],
        sub=["status"],
    ),
    _rt("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _rt("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _rt("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False),
    _rt(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        namespaced=False,
    ),
)


class Registry:
    """Thread-safe lookup of resource types by (group, plural) and by (group, kind)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._by_key: dict[tuple[str, str], ResourceType] = {}
        for rt in BUILTIN_TYPES:
            self._by_key[rt.key] = rt

    def add(self, rt: ResourceType) -> None:
        with self._lock:
            self._by_key[rt.key] = rt

    def remove(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._by_key.pop(key, None)

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_key.values())

    def by_resource(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            rt = self._by_key.get((group, plural))
        if rt is None or version not in rt.versions:
            return None
        return rt

    def by_kind(self, api_version: str, kind: str) -> ResourceType:
        group, _, version = api_version.rpartition("/")
        with self._lock:
            for rt in self._by_key.values():
                if rt.group == group and rt.kind == kind and version in rt.versions:
                    return rt
        raise StatusError(
            404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"'
        )

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions (core group under the empty string)."""
        out: dict[str, list[str]] = {}
        with self._lock:
            for rt in self._by_key.values():
                vs = out.setdefault(rt.group, [])
                for v in rt.versions:
                    if v not in vs:
                        vs.append(v)
        return out


# ---- list semantics shared by strategic merge patch and server-side apply -------------------

# Lists merged by key in built-in kinds (field name -> merge key).  Anything not listed is atomic.
BUILTIN_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
}
# Lists whose items are a set of scalars (strategic merge, SSA "v:" keys).
BUILTIN_SET_LISTS = frozenset({"finalizers"})


@attrs.frozen
class ListKind:
    """How a list field merges: ``map`` (keyed), ``set`` (scalars) or ``atomic``."""

    type: str
    keys: tuple[str, ...] = ()


ATOMIC = ListKind("atomic")


def schema_at(schema: dict[str, Any] | None, path: tuple[str, ...]) -> dict[str, Any] | None:
    """Descend an OpenAPI v3 schema along field names (list items are traversed implicitly)."""
    cur = schema
    for name in path:
        if cur is None:
            return None
        while cur.get("type") == "array" and "items" in cur:
            cur = cur["items"]
        props = cur.get("properties")
        if props and name in props:
            cur = props[name]
        elif isinstance(cur.get("additionalProperties"), dict):
            cur = cur["additionalProperties"]
        else:
            return None
    return cur


def list_kind(rt: ResourceType | None, path: tuple[str, ...]) -> ListKind:
    """Merge semantics of the list at ``path`` (field names from the object root)."""
    if not path:
        return ATOMIC
    name = path[-1]
    if path[0] == "metadata" or rt is None or not rt.schemas:
        if name in BUILTIN_SET_LISTS:
            return ListKind("set")
        if name == "ports":
            # Service ports merge on port; container ports on containerPort.
            return ListKind(
                "map", ("port",) if path[:2] == ("spec", "ports") else ("containerPort",)
            )
        key = BUILTIN_MERGE_KEYS.get(name)
        if key and (rt is None or not rt.schemas or path[0] == "metadata"):
            return ListKind("map", (key,))
        return ATOMIC
    node = schema_at(rt.schema(), path)
    if node is None:
        return ATOMIC
    lt = node.get("x-kubernetes-list-type")
    if lt == "map":
        return ListKind("map", tuple(node.get("x-kubernetes-list-map-keys") or ()))
    if lt == "set":
        return ListKind("set")
    return ATOMIC
