"""Small helpers shared by the simulated controllers: storage protocol, clock, selectors, hashing.

The simulator only talks to the embedded server through the in-process ``Storage`` contract, so it
is typed against a structural protocol here; that keeps it usable with the real storage and with
the small fakes the unit tests use.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import random
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from llmscaler_runtime.envtest.errors import StatusError

Obj = dict[str, Any]
Listener = Callable[[str, Obj], None]

#: Alphabet of apimachinery's ``rand.String`` / ``SafeEncodeString`` (no vowels, no look-alikes).
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
STARTUP_ANNOTATION = "envtest.llmscaler.dev/startup-seconds"
STS_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
STS_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
CONTROLLER_REVISION_HASH = "controller-revision-hash"


class StorageLike(Protocol):
    """The slice of ``llmscaler_runtime.envtest.storage.Storage`` the simulator and GC use."""

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj: ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> tuple[list[Obj], str]: ...

    def create(self, obj: Obj) -> Obj: ...

    def update(self, obj: Obj, *, subresource: str | None = None) -> Obj: ...

    def patch_merge(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Obj,
        *,
        subresource: str | None = None,
    ) -> Obj: ...

    def delete(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Obj | None: ...

    def add_listener(self, cb: Listener) -> None: ...


class Clock(Protocol):
    """Monotonic seconds; unit tests inject a fake whose time only moves when they say so.

    envtest's own on purpose (not ``llmscaler_runtime.clock.Clock``): the server must not import
    the runtime it tests, and the simulator's timers need nothing but monotonic ``now()``.
    """

    def now(self) -> float: ...


class MonotonicClock:
    """The real clock (``time.monotonic``)."""

    def now(self) -> float:
        import time

        return time.monotonic()


def status_code(exc: BaseException) -> int | None:
    """HTTP code of a storage error, ``None`` for anything that is not an API status."""
    if isinstance(exc, StatusError):
        return exc.code
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


def is_not_found(exc: BaseException) -> bool:
    return status_code(exc) == 404


def get_if_exists(
    storage: Any, api_version: str, kind: str, namespace: str | None, name: str
) -> dict[str, Any] | None:
    """The object, or None when it is gone: a controller syncing a key that was deleted
    meanwhile has nothing to do, so only a 404 is swallowed."""
    try:
        obj: dict[str, Any] = storage.get(api_version, kind, namespace, name)
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise
    return obj


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    lb = meta(obj).get("labels")
    return dict(lb) if isinstance(lb, Mapping) else {}


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    an = meta(obj).get("annotations")
    return dict(an) if isinstance(an, Mapping) else {}


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid", ""))


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name", ""))


def namespace_of(obj: Mapping[str, Any]) -> str | None:
    ns = meta(obj).get("namespace")
    return str(ns) if ns else None


def is_terminating(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true`` (at most one exists on a valid object)."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True) -> Obj:
    """A controller ownerReference to ``owner`` as kube-controller-manager writes it."""
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelector`` semantics. A nil/empty selector matches nothing for workloads.

    apps/v1 requires a non-empty selector; treating an empty one as "match nothing" (as
    ``LabelSelectorAsSelector`` + the controllers' guard do) avoids adopting every pod in a
    namespace by accident.
    """
    if not selector:
        return False
    match_labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not match_labels and not exprs:
        return False
    for key, value in match_labels.items():
        if labels.get(key) != value:
            return False
    for expr in exprs:
        key = expr.get("key", "")
        op = expr.get("operator", "")
        values = set(expr.get("values") or [])
        if op == "In":
            if labels.get(key) not in values:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            return False
    return True


def resolve_int_or_percent(value: Any, total: int, *, round_up: bool, default: str) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: ints as-is, "25%" scaled and rounded."""
    if value is None:
        value = default
    if isinstance(value, bool):
        raise ValueError(f"invalid int-or-percent value {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        pct = int(text[:-1])
        scaled = pct * total / 100.0
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(text)


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(value: str) -> str:
    """``rand.SafeEncodeString``: map each character onto the safe alphabet."""
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in value)


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """A stable pod-template hash (FNV-32a over canonical JSON, safe-encoded like the real one).

    The real controller hashes a Go-specific dump of the struct, so the value differs from a real
    cluster's, but it has the same properties: stable for equal templates, changes on any edit.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def random_suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(SAFE_ALPHABET) for _ in range(n))


def rfc3339(wall_seconds: float) -> str:
    """Second-precision UTC timestamp, the format metav1.Time serialises to."""
    # envtest's own on purpose (not kube.rfc3339): the server must not import the runtime it tests.
    ts = _dt.datetime.fromtimestamp(int(wall_seconds), tz=_dt.UTC)
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_condition(pod: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    cond = pod_condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not finished and not being deleted."""
    return pod_phase(pod) not in ("Succeeded", "Failed") and not is_terminating(pod)


def spec_replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` of a workload, defaulted to 1 as the API does."""
    return int_field((obj.get("spec") or {}).get("replicas"), 1)


def status_int(obj: Mapping[str, Any], field: str) -> int:
    """An integer status field, 0 when absent."""
    return int_field((obj.get("status") or {}).get(field), 0)


def int_field(value: Any, default: int) -> int:
    if value is None or isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
