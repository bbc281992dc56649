"""OpenAPI v3 documents per group-version, built from built-in schemas and CRD schemas.

kubectl 1.32 reads them to decide that the server validates fields itself (the PATCH operation
advertises ``fieldValidation``), to compute strategic merge patches (patch merge keys) and for
``kubectl explain`` (descriptions, found through ``x-kubernetes-group-version-kind``).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from .registry import Registry, ResourceType

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
CORE = "io.k8s.api.core.v1."


def _ref(name: str, desc: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"allOf": [{"$ref": f"#/components/schemas/{name}"}], "default": {}}
    if desc:
        out["description"] = desc
    return out


def _s(desc: str, typ: str = "string", **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"description": desc, "type": typ}
    out.update(kw)
    return out


_META_DESC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_API_VERSION_DESC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DESC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}

COMMON: dict[str, dict[str, Any]] = {
    META + "ObjectMeta": {
        "description": "ObjectMeta is metadata that all persisted resources must have.",
        "type": "object",
        "properties": {
            "name": _s("Name must be unique within a namespace."),
            "generateName": _s("Optional prefix used to generate a unique name."),
            "namespace": _s("Namespace defines the space within which each name must be unique."),
            "labels": {
                **_STR_MAP,
                "description": "Map of string keys and values used to select objects.",
            },
            "annotations": {
                **_STR_MAP,
                "description": "Unstructured key value map stored with a resource.",
            },
            "uid": _s("UID is the unique in time and space value for this object."),
            "resourceVersion": _s(
                "An opaque value that represents the internal version of this object."
            ),
            "generation": _s(
                "A sequence number representing a specific generation of the desired state.",
                "integer",
                format="int64",
            ),
            "creationTimestamp": _s("Time at which the object was created.", format="date-time"),
            "deletionTimestamp": _s(
                "Time at which this resource will be deleted.", format="date-time"
            ),
            "deletionGracePeriodSeconds": _s(
                "Seconds allowed for graceful termination.", "integer", format="int64"
            ),
            "finalizers": {
                "description": "Must be empty before the object is deleted from the registry.",
                "type": "array",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            },
            "ownerReferences": {
                "description": "Objects depended by this object.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"],
            },
            "managedFields": {
                "description": "Fields managed by each workflow (field manager).",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-type": "atomic",
            },
        },
    },
    META + "LabelSelector": {
        "description": "A label query over a set of resources.",
        "type": "object",
        "properties": {
            "matchLabels": {**_STR_MAP, "description": "Map of {key,value} pairs."},
            "matchExpressions": {
                "description": "List of label selector requirements.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-type": "atomic",
            },
        },
        "x-kubernetes-map-type": "atomic",
    },
    CORE + "Container": {
        "description": "A single application container that you want to run within a pod.",
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": _s("Name of the container specified as a DNS_LABEL.", default=""),
            "image": _s("Container image name."),
            "command": {
                "description": "Entrypoint array.",
                "type": "array",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "atomic",
            },
            "args": {
                "description": "Arguments to the entrypoint.",
                "type": "array",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "atomic",
            },
            "ports": {
                "description": "List of ports to expose from the container.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-patch-strategy": "merge",
            },
            "env": {
                "description": "List of environment variables to set in the container.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
            "resources": {
                "description": "Compute Resources required by this container.",
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "volumeMounts": {
                "description": "Pod volumes to mount into the container's filesystem.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-map-keys": ["mountPath"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "mountPath",
                "x-kubernetes-patch-strategy": "merge",
            },
            "imagePullPolicy": _s("Image pull policy. One of Always, Never, IfNotPresent."),
            "readinessProbe": {
                "description": "Periodic probe of container service readiness.",
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
        "x-kubernetes-preserve-unknown-fields": True,
    },
    CORE + "PodSpec": {
        "description": "PodSpec is a description of a pod.",
        "type": "object",
        "required": ["containers"],
        "properties": {
            "containers": {
                "description": "List of containers belonging to the pod.",
                "type": "array",
                "items": _ref(CORE + "Container"),
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
            "initContainers": {
                "description": "List of initialization containers.",
                "type": "array",
                "items": _ref(CORE + "Container"),
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
            "volumes": {
                "description": "List of volumes that can be mounted by containers.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge,retainKeys",
            },
            "nodeName": _s("Request to schedule this pod onto a specific node."),
            "serviceAccountName": _s("Name of the ServiceAccount to use to run this pod."),
            "terminationGracePeriodSeconds": _s(
                "Duration in seconds the pod needs to terminate gracefully.",
                "integer",
                format="int64",
            ),
            "restartPolicy": _s("Restart policy for all containers within the pod."),
        },
        "x-kubernetes-preserve-unknown-fields": True,
    },
    CORE + "PodTemplateSpec": {
        "description": "Describes the data a pod should have when created from a template.",
        "type": "object",
        "properties": {
            "metadata": _ref(META + "ObjectMeta", _META_DESC),
            "spec": _ref(CORE + "PodSpec", "Specification of the desired behavior of the pod."),
        },
    },
}


def _top(
    kind_desc: str,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "apiVersion": _s(_API_VERSION_DESC),
        "kind": _s(_KIND_DESC),
        "metadata": _ref(META + "ObjectMeta", _META_DESC),
    }
    if spec is not None:
        props["spec"] = spec
    if status is not None:
        props["status"] = status
    props.update(extra or {})
    return {"description": kind_desc, "type": "object", "properties": props}


_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _workload_spec(desc: str) -> dict[str, Any]:
    return {
        "description": desc,
        "type": "object",
        "required": ["selector", "template"],
        "properties": {
            "replicas": _s("Number of desired pods. Defaults to 1.", "integer", format="int32"),
            "selector": _ref(META + "LabelSelector", "Label selector for pods."),
            "template": _ref(
                CORE + "PodTemplateSpec", "Template describes the pods that will be created."
            ),
            "strategy": {
                **_OPEN,
                "description": "The strategy used to replace existing pods with new ones.",
            },
            "minReadySeconds": _s(
                "Minimum number of seconds for which a newly created pod should be ready.",
                "integer",
                format="int32",
            ),
        },
        "x-kubernetes-preserve-unknown-fields": True,
    }


BUILTIN_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("apps", "Deployment"): _top(
        "Deployment enables declarative updates for Pods and ReplicaSets.",
        _workload_spec("Specification of the desired behavior of the Deployment."),
        {**_OPEN, "description": "Most recently observed status of the Deployment."},
    ),
    ("apps", "ReplicaSet"): _top(
        "ReplicaSet ensures that a specified number of pod replicas are running at any given time.",
        _workload_spec("Spec defines the specification of the desired behavior of the ReplicaSet."),
        {**_OPEN, "description": "Most recently observed status of the ReplicaSet."},
    ),
    ("apps", "StatefulSet"): _top(
        "StatefulSet represents a set of pods with consistent identities.",
        _workload_spec("Spec defines the desired identities of pods in this set."),
        {**_OPEN, "description": "Status is the current status of Pods in this StatefulSet."},
    ),
    ("", "Pod"): _top(
        "Pod is a collection of containers that can run on a host.",
        _ref(CORE + "PodSpec"),
        {**_OPEN, "description": "Most recently observed status of the pod."},
    ),
    ("", "ConfigMap"): _top(
        "ConfigMap holds configuration data for pods to consume.",
        extra={
            "data": {**_STR_MAP, "description": "Data contains the configuration data."},
            "binaryData": {**_STR_MAP, "description": "BinaryData contains the binary data."},
            "immutable": _s(
                "If true, the data stored in the ConfigMap cannot be updated.",
                "boolean",
            ),
        },
    ),
    ("", "Secret"): _top(
        "Secret holds secret data of a certain type.",
        extra={
            "data": {**_STR_MAP, "description": "Data contains the secret data (base64)."},
            "stringData": {
                **_STR_MAP,
                "description": "Non-binary secret data in string form.",
            },
            "type": _s("Used to facilitate programmatic handling of secret data."),
            "immutable": _s(
                "If true, the data stored in the Secret cannot be updated.",
                "boolean",
            ),
        },
    ),
}


def _schema_name(rt: ResourceType, version: str) -> str:
    if not rt.group:
        return f"{CORE}{rt.kind}"
    if rt.crd_name is None:
        return f"io.k8s.api.{rt.group.split('.')[0]}.{version}.{rt.kind}"
    return ".".join(reversed(rt.group.split("."))) + f".{version}.{rt.kind}"


def _kind_schema(rt: ResourceType, version: str) -> dict[str, Any]:
    gvk = [{"group": rt.group, "kind": rt.kind, "version": version}]
    if rt.crd_name is not None:
        s = copy.deepcopy(rt.schema(version) or {"type": "object"})
        props = s.setdefault("properties", {})
        props["apiVersion"] = _s(_API_VERSION_DESC)
        props["kind"] = _s(_KIND_DESC)
        props["metadata"] = _ref(META + "ObjectMeta", _META_DESC)
    else:
        s = copy.deepcopy(
            BUILTIN_SCHEMAS.get((rt.group, rt.kind))
            or _top(
                f"{rt.kind} ({rt.api_version(version)}).",
                {**_OPEN, "description": f"Specification of the {rt.kind}."}
                if rt.kind
                not in ("Event", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
                else None,
                {**_OPEN, "description": f"Status of the {rt.kind}."} if rt.has_status else None,
            )
        )
        if rt.kind in (
            "Event",
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "ServiceAccount",
        ):
            s["x-kubernetes-preserve-unknown-fields"] = True
    s["x-kubernetes-group-version-kind"] = gvk
    return s


_PARAMS = [
    {
        "name": "dryRun",
        "in": "query",
        "description": "When present, indicates that modifications should not be persisted.",
        "schema": {"type": "string", "uniqueItems": True},
    },
    {
        "name": "fieldManager",
        "in": "query",
        "description": "Name of the actor or entity making these changes.",
        "schema": {"type": "string", "uniqueItems": True},
    },
    {
        "name": "fieldValidation",
        "in": "query",
        "description": "How to handle unknown or duplicate fields.",
        "schema": {"type": "string", "uniqueItems": True},
    },
]


def _op(rt: ResourceType, version: str, action: str, ref: str, with_params: bool) -> dict[str, Any]:
    body = {"content": {"application/json": {"schema": {"$ref": ref}}}}
    op: dict[str, Any] = {
        "description": f"{action} the specified {rt.kind}",
        "operationId": f"{action}{rt.kind}",
        "responses": {"200": {"description": "OK", **body}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "kind": rt.kind, "version": version},
    }
    if with_params:
        op["parameters"] = list(_PARAMS)
        op["requestBody"] = {"required": True, **body}
    return op


def group_version_doc(registry: Registry, group: str, version: str) -> dict[str, Any]:
    schemas: dict[str, Any] = copy.deepcopy(COMMON)
    paths: dict[str, Any] = {}
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    for rt in registry.all():
        if rt.group != group or version not in rt.versions:
            continue
        name = _schema_name(rt, version)
        schemas[name] = _kind_schema(rt, version)
        ref = f"#/components/schemas/{name}"
        path = (
            f"{prefix}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
            if rt.namespaced
            else f"{prefix}/{rt.plural}/{{name}}"
        )
        paths[path] = {
            "get": _op(rt, version, "get", ref, False),
            "put": _op(rt, version, "put", ref, True),
            "patch": _op(rt, version, "patch", ref, True),
            "parameters": [
                {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
            ]
            + (
                [
                    {
                        "name": "namespace",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ]
                if rt.namespaced
                else []
            ),
        }
        coll = path.rsplit("/", 1)[0]
        paths[coll] = {"post": _op(rt, version, "post", ref, True)}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def root_doc(registry: Registry) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for group, versions in sorted(registry.groups().items()):
        for v in versions:
            key = f"apis/{group}/{v}" if group else f"api/{v}"
            digest = (
                hashlib.sha256(
                    json.dumps(group_version_doc(registry, group, v), sort_keys=True).encode()
                )
                .hexdigest()[:32]
                .upper()
            )
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}
