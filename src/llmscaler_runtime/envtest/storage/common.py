"""Types, keys and small helpers every part of the storage shares.

They live apart from the parts so that the versioned store, the write pipeline, deletion and the
CRD registry can all use them without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import bad_request, conflict
from ..registry import ResourceType

Obj = dict[str, Any]
Key = tuple[str, str]
Listener = Callable[[str, Obj], None]

DEFAULT_MANAGER = "kube-controller-manager"
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NS_KEY = ("", "namespaces")
PODS_KEY = ("", "pods")


def fast_copy(obj: Any) -> Any:
    """Copy JSON-like data (dict/list/scalars) faster than ``copy.deepcopy``."""
    # Not kube.deep_copy, on purpose: the server must not import the runtime it tests.
    if isinstance(obj, dict):
        return {k: fast_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fast_copy(v) for v in obj]
    return obj


def now(after_seconds: float = 0.0) -> str:
    """The current time (or ``after_seconds`` from now) as metav1.Time, whole seconds."""
    # envtest's own on purpose (not kube.rfc3339): the server must not import the runtime it tests.
    moment = datetime.now(UTC) + timedelta(seconds=after_seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def has_generation(rt: ResourceType) -> bool:
    """Kinds whose strategy maintains metadata.generation (workloads, pods, CRDs, custom
    resources)."""
    return rt.group == "apps" or rt.key in (CRD_KEY, PODS_KEY) or rt.crd_name is not None


def bump_generation_on_delete(meta: Obj) -> None:
    """The first deletionTimestamp bumps a maintained generation (``markAsDeleting`` and
    graceful deletion in kube-apiserver): controllers see that something changed."""
    if not meta.get("deletionTimestamp") and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def parse_rv(value: Any, field: str = "resourceVersion") -> int:
    try:
        rv = int(str(value))
        if rv < 0:
            raise ValueError(value)
        return rv
    except ValueError:
        raise bad_request(
            f'invalid {field}: strconv.ParseUint: parsing "{value}": invalid syntax'
        ) from None


def check_resource_version(rt: ResourceType, name: str, rv: Any, old: Obj) -> None:
    """A write's ``metadata.resourceVersion`` precondition: empty means none; a malformed one
    is 400, a stale one 409."""
    if rv not in (None, "") and str(rv) != old["metadata"]["resourceVersion"]:
        parse_rv(rv, "metadata.resourceVersion")
        raise conflict(rt.group, rt.plural, name)


def path_get(obj: Any, path: str) -> Any:
    """The value at a dotted path such as ``.spec.replicas`` (None where any step is missing)."""
    cur: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur
