"""Table rendering for ``kubectl get``: column definitions and cells per kind.

kube-apiserver answers ``Accept: ...;as=Table`` with a ``meta.k8s.io/v1`` Table whose columns
come from each kind's table printer (built-ins) or the CRD's additionalPrinterColumns. The
column catalogue is data about kinds, not about HTTP, so it lives apart from the handler, which
only asks :func:`table` for a rendering when the client wants one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..registry import ResourceType
from ..selectors import label_selector_from_match
from ..storage.common import path_get

Column = tuple[dict[str, Any], Any]


def _age(ts: str | None) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    secs = max(0, int((datetime.now(UTC) - then).total_seconds()))
    if secs < 120:
        return f"{secs}s"
    if secs < 600:
        return f"{secs // 60}m{secs % 60}s"
    if secs < 3 * 3600:
        return f"{secs // 60}m"
    if secs < 48 * 3600:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATION_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _col(
    name: str, typ: str = "string", desc: str = "", fmt: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": typ,
        "format": fmt,
        "description": desc or name,
        "priority": priority,
    }


def _wide(name: str, desc: str, cell: Callable[[dict[str, Any]], Any]) -> Column:
    """A priority-1 column: ``kubectl get -o wide`` shows it, plain ``get`` does not."""
    return (_col(name, desc=desc, priority=1), cell)


def _custom_cell(typ: str, value: Any) -> Any:
    """A custom resource's cell: missing is null, strings printed, dates as an age."""
    if value is None:
        return None
    if typ == "date":
        return _age(value) if isinstance(value, str) else "<invalid>"
    if typ == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return value


def _status(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("status") or {}


def _template_containers(o: dict[str, Any]) -> list[dict[str, Any]]:
    spec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def _selector_text(o: dict[str, Any]) -> str:
    return label_selector_from_match((o.get("spec") or {}).get("selector")) or "<none>"


def _ready_of_replicas(o: dict[str, Any]) -> str:
    return f"{_status(o).get('readyReplicas', 0)}/{(o.get('spec') or {}).get('replicas', 0)}"


def _pod_ready(o: dict[str, Any]) -> str:
    ready = sum(1 for c in _status(o).get("containerStatuses") or [] if c.get("ready"))
    return f"{ready}/{len((o.get('spec') or {}).get('containers') or [])}"


def _pod_status(o: dict[str, Any]) -> str:
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    return str(_status(o).get("reason") or _status(o).get("phase") or "")


_CONTAINERS = _wide(
    "Containers",
    "Names of each container in the template.",
    lambda o: ",".join(str(c.get("name", "")) for c in _template_containers(o)),
)
_IMAGES = _wide(
    "Images",
    "Images referenced by each container in the template.",
    lambda o: ",".join(str(c.get("image", "")) for c in _template_containers(o)),
)
_READY_OF = "Number of the pod with ready state"
#: Built-in tables: (columns before Age, priority-1 columns after it), per (group, plural).
_BUILTIN_COLUMNS: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {
    ("apps", "deployments"): (
        [
            (
                _col("Ready", desc=_READY_OF),
                _ready_of_replicas,
            ),
            (
                _col(
                    "Up-to-date",
                    desc="Total number of non-terminating pods targeted by this deployment that "
                    "have the desired template spec.",
                ),
                lambda o: _status(o).get("updatedReplicas", 0),
            ),
            (
                _col(
                    "Available",
                    desc="Total number of available non-terminating pods (ready for at least "
                    "minReadySeconds) targeted by this deployment.",
                ),
                lambda o: _status(o).get("availableReplicas", 0),
            ),
        ],
        [
            _CONTAINERS,
            _IMAGES,
            _wide(
                "Selector",
                "Label selector for pods. Existing ReplicaSets whose pods are selected "
                "by this will be the ones affected by this deployment. It must match the "
                "pod template's labels.",
                _selector_text,
            ),
        ],
    ),
    ("apps", "replicasets"): (
        [
            (
                _col(
                    "Desired",
                    "integer",
                    "Replicas is the number of desired pods. This is a pointer to distinguish "
                    "between explicit zero and unspecified. Defaults to 1. More info: "
                    "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
                ),
                lambda o: (o.get("spec") or {}).get("replicas", 0),
            ),
            (
                _col(
                    "Current",
                    "integer",
                    "Replicas is the most recently observed number of non-terminating pods. "
                    "More info: https://kubernetes.io/docs/concepts/workloads/controllers/"
                    "replicaset",
                ),
                lambda o: _status(o).get("replicas", 0),
            ),
            (
                _col(
                    "Ready",
                    "integer",
                    "The number of non-terminating pods targeted by this ReplicaSet with a "
                    "Ready Condition.",
                ),
                lambda o: _status(o).get("readyReplicas", 0),
            ),
        ],
        [
            _CONTAINERS,
            _IMAGES,
            _wide(
                "Selector",
                "Selector is a label query over pods that should match the replica "
                "count. Label keys and values that must match in order to be controlled by "
                "this replica set. It must match the pod template's labels. More info: "
                "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                "#label-selectors",
                _selector_text,
            ),
        ],
    ),
    ("apps", "statefulsets"): (
        [
            (
                _col("Ready", desc=_READY_OF),
                _ready_of_replicas,
            )
        ],
        [_CONTAINERS, _IMAGES],
    ),
    ("", "pods"): (
        [
            (
                _col(
                    "Ready", desc="The aggregate readiness state of this pod for accepting traffic."
                ),
                _pod_ready,
            ),
            (
                _col("Status", desc="The aggregate status of the containers in this pod."),
                _pod_status,
            ),
            (
                _col(
                    "Restarts",
                    desc="The number of times the containers in this pod have been restarted and "
                    "when the last container in this pod has restarted.",
                ),
                lambda o: str(
                    sum(
                        int(c.get("restartCount") or 0)
                        for c in _status(o).get("containerStatuses") or []
                    )
                ),
            ),
        ],
        [
            _wide(
                "IP",
                "podIP address allocated to the pod. Routable at least within the "
                "cluster. Empty if not yet allocated.",
                lambda o: _status(o).get("podIP") or "<none>",
            ),
            _wide(
                "Node",
                "NodeName indicates in which node this pod is scheduled.",
                lambda o: (o.get("spec") or {}).get("nodeName") or "<none>",
            ),
            _wide(
                "Nominated Node",
                "nominatedNodeName is set only when this pod preempts other pods on the node.",
                lambda o: _status(o).get("nominatedNodeName") or "<none>",
            ),
            _wide(
                "Readiness Gates",
                "If specified, all readiness gates will be evaluated for pod readiness.",
                lambda o: "<none>",
            ),
        ],
    ),
    ("", "configmaps"): (
        [
            (
                _col(
                    "Data",
                    desc="Data contains the configuration data. Each key must consist of "
                    "alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte "
                    "sequences must use the BinaryData field. The keys stored in Data must not "
                    "overlap with the keys in the BinaryData field, this is enforced during "
                    "validation process.",
                ),
                lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            )
        ],
        [],
    ),
    ("", "secrets"): (
        [
            (
                _col(
                    "Type",
                    desc="Used to facilitate programmatic handling of secret data. More info: "
                    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
                ),
                lambda o: o.get("type", ""),
            ),
            (
                _col(
                    "Data",
                    desc="Data contains the secret data. Each key must consist of alphanumeric "
                    "characters, '-', '_' or '.'. The serialized form of the secret data is a "
                    "base64 encoded string, representing the arbitrary (possibly non-string) "
                    "data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
                ),
                lambda o: len(o.get("data") or {}),
            ),
        ],
        [],
    ),
    ("coordination.k8s.io", "leases"): (
        [
            (
                _col(
                    "Holder",
                    desc="holderIdentity contains the identity of the holder of a current lease. "
                    "If Coordinated Leader Election is used, the holder identity must be equal "
                    "to the elected LeaseCandidate.metadata.name field.",
                ),
                lambda o: (o.get("spec") or {}).get("holderIdentity") or "",
            )
        ],
        [],
    ),
    ("", "namespaces"): (
        [
            (
                _col("Status", desc="The status of the namespace"),
                lambda o: _status(o).get("phase", ""),
            )
        ],
        [],
    ),
}


def _name_column() -> Column:
    return (_col("Name", fmt="name", desc=_NAME_DOC), lambda o: o["metadata"].get("name", ""))


def columns(rt: ResourceType, version: str) -> list[Column]:
    """Column definitions and cell functions, as kube-apiserver's table printers have them
    (custom resources: Name plus additionalPrinterColumns, or Name and Age)."""
    if rt.crd_name is not None:
        return _custom_columns(rt, version)
    age: Column = (
        _col("Age", desc=_CREATION_DOC),
        lambda o: _age(o["metadata"].get("creationTimestamp")),
    )
    extra = _BUILTIN_COLUMNS.get(rt.key)
    if extra is None:
        return [_name_column(), age]
    before, wide = extra
    return [_name_column(), *before, age, *wide]


def _custom_columns(rt: ResourceType, version: str) -> list[Column]:
    cols: list[Column] = [_name_column()]
    defined = rt.printer_columns.get(version) or [
        {
            "name": "Age",
            "type": "date",
            "description": _CREATION_DOC,
            "jsonPath": ".metadata.creationTimestamp",
        }
    ]
    for pc in defined:
        path = str(pc.get("jsonPath", ""))
        typ = str(pc.get("type", "string"))
        desc = pc.get("description") or (
            f"Custom resource definition column (in JSONPath format): {path}"
        )
        definition = _col(str(pc.get("name", "")), typ, desc, str(pc.get("format", "")))
        definition["priority"] = int(pc.get("priority") or 0)
        cols.append((definition, lambda o, p=path, ty=typ: _custom_cell(ty, path_get(o, p))))
    return cols


def table(
    rt: ResourceType,
    version: str,
    objs: list[dict[str, Any]],
    rv: str,
    include: str,
    meta_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Table of ``objs``; ``include`` is the request's includeObject (Object, Metadata, None)."""
    cols = columns(rt, version)
    rows = []
    for o in objs:
        row: dict[str, Any] = {"cells": [fn(o) for _, fn in cols]}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": o.get("metadata", {}),
            }
        rows.append(row)
    meta: dict[str, Any] = {"resourceVersion": rv}
    meta.update(meta_extra or {})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [c for c, _ in cols],
        "rows": rows,
    }


__all__ = ["columns", "table"]
