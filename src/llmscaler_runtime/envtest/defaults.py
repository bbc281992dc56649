"""Defaults and basic validation for built-in kinds, as the real API server's strategies apply.

Only what clients and controllers observe is covered (deployment replicas/strategy, pod spec
defaults, service ports, namespace phase, name syntax, deployment selector/template match).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from .errors import FieldError
from .registry import ResourceType
from .schema import OBJECT_META_FIELDS

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


_ip_counter = itertools.count(10)


def _next_cluster_ip() -> str:
    """Allocate a service IP from 10.96.0.0/16 (never reused; enough for any test run)."""
    n = next(_ip_counter)
    return f"10.96.{(n >> 8) & 0xFF}.{n & 0xFF}"


def _pod_spec_defaults(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if not isinstance(c, dict):
                continue
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            image = str(c.get("image", ""))
            tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
            c.setdefault("imagePullPolicy", "IfNotPresent" if tagged or "@" in image else "Always")
            c.setdefault("resources", {})
            for p in c.get("ports") or []:
                if isinstance(p, dict):
                    p.setdefault("protocol", "TCP")


def apply_builtin_defaults(rt: ResourceType, obj: dict[str, Any], creating: bool) -> None:
    """Mutate ``obj`` with the defaults the real server's defaulting functions set."""
    kind = (rt.group, rt.kind)
    spec = obj.get("spec")
    if kind in (("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet")):
        if not isinstance(spec, dict):
            return
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        spec.setdefault("revisionHistoryLimit", 10)
        tmpl = spec.get("template")
        if isinstance(tmpl, dict) and isinstance(tmpl.get("spec"), dict):
            _pod_spec_defaults(tmpl["spec"])
        if rt.kind == "Deployment":
            strategy = spec.setdefault("strategy", {})
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                ru = strategy.setdefault("rollingUpdate", {})
                ru.setdefault("maxUnavailable", "25%")
                ru.setdefault("maxSurge", "25%")
            spec.setdefault("progressDeadlineSeconds", 600)
        elif rt.kind == "StatefulSet":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            us = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
            if us.get("type") == "RollingUpdate":
                us.setdefault("rollingUpdate", {"partition": 0})
            spec.setdefault(
                "persistentVolumeClaimRetentionPolicy",
                {"whenDeleted": "Retain", "whenScaled": "Retain"},
            )
        elif rt.kind == "ReplicaSet":
            spec.pop("revisionHistoryLimit", None)
    elif kind == ("", "Pod"):
        if isinstance(spec, dict):
            _pod_spec_defaults(spec)
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("priority", 0)
            spec.setdefault("enableServiceLinks", True)
        if creating:
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif kind == ("", "Service"):
        if isinstance(spec, dict):
            spec.setdefault("type", "ClusterIP")
            if creating and spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
                if not spec.get("clusterIP"):
                    spec["clusterIP"] = _next_cluster_ip()
                if spec["clusterIP"] != "None":
                    spec.setdefault("clusterIPs", [spec["clusterIP"]])
                spec.setdefault("ipFamilies", ["IPv4"])
                spec.setdefault("ipFamilyPolicy", "SingleStack")
                spec.setdefault("internalTrafficPolicy", "Cluster")
            spec.setdefault("sessionAffinity", "None")
            for p in spec.get("ports") or []:
                if isinstance(p, dict):
                    p.setdefault("protocol", "TCP")
                    if "port" in p:
                        p.setdefault("targetPort", p["port"])
    elif kind == ("", "Namespace"):
        meta = obj.setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = meta.get("name", "")
        if creating:
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
    elif kind == ("", "Secret"):
        obj.setdefault("type", "Opaque")
    elif kind == ("", "Event"):
        # Fields the typed v1 Event always serializes (no omitempty, or a struct).
        obj.setdefault("involvedObject", {})
        obj.setdefault("source", {})
        obj.setdefault("firstTimestamp", None)
        obj.setdefault("lastTimestamp", None)
        obj.setdefault("eventTime", None)
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
    elif kind == ("events.k8s.io", "Event"):
        obj.setdefault("eventTime", None)
        obj.setdefault("regarding", {})
        obj.setdefault("deprecatedSource", {})
        obj.setdefault("deprecatedFirstTimestamp", None)
        obj.setdefault("deprecatedLastTimestamp", None)
    elif kind == ("coordination.k8s.io", "Lease"):
        obj.setdefault("spec", {})
    if creating and kind in (
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
    ):
        obj["status"] = {}  # the typed object's zero status, until a controller writes one
    elif creating and kind == ("", "Service"):
        obj["status"] = {"loadBalancer": {}}


#: metav1.MicroTime fields: kube-apiserver decodes them with exactly six fractional digits.
MICRO_TIME_FIELDS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("coordination.k8s.io", "Lease"): (("spec", "acquireTime"), ("spec", "renewTime")),
    ("", "Event"): (("eventTime",), ("series", "lastObservedTime")),
    ("events.k8s.io", "Event"): (("eventTime",), ("series", "lastObservedTime")),
}
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO_ELEMENTS = (
    ("2006", r"\d{4}"),
    ("-", "-"),
    ("01", r"\d{2}"),
    ("-", "-"),
    ("02", r"\d{2}"),
    ("T", "T"),
    ("15", r"\d{2}"),
    (":", ":"),
    ("04", r"\d{2}"),
    (":", ":"),
    ("05", r"\d{2}"),
    (".000000", r"\.\d{6}"),
    ("Z07:00", r"Z|[+-]\d{2}:\d{2}"),
)


def micro_time_error(value: Any) -> str | None:
    """Go's ``time.Parse`` error for a MicroTime that does not fit its layout, else None."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"json: cannot unmarshal {type(value).__name__} into Go value of type string"
    rest = value
    for elem, pattern in _MICRO_ELEMENTS:
        m = re.match(pattern, rest)
        if m is None:
            return (
                f"parsing time {json.dumps(value)} as {json.dumps(MICRO_LAYOUT)}: "
                f"cannot parse {json.dumps(rest)} as {json.dumps(elem)}"
            )
        rest = rest[m.end() :]
    if rest:
        return f"parsing time {json.dumps(value)}: extra text: {json.dumps(rest)}"
    return None


def decode_errors(rt: ResourceType, obj: dict[str, Any]) -> str | None:
    """What Go decoding of the typed object would refuse (MicroTime syntax), else None."""
    for path in MICRO_TIME_FIELDS.get((rt.group, rt.kind), ()):
        cur: Any = obj
        for part in path:
            cur = cur.get(part) if isinstance(cur, dict) else None
        err = micro_time_error(cur)
        if err:
            return err
    return None


def validate_name(rt: ResourceType, name: str) -> list[FieldError]:
    if rt.kind == "Namespace" or rt.kind == "Service":
        if not _DNS1123_LABEL.match(name) or len(name) > 63:
            return [FieldError("FieldValueInvalid", "metadata.name", _LABEL_MSG, name)]
        return []
    if rt.group == "rbac.authorization.k8s.io":
        return []
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [FieldError("FieldValueInvalid", "metadata.name", _SUBDOMAIN_MSG, name)]
    return []


def _labels_match(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    ml = selector.get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in ml.items())


def validate_builtin(rt: ResourceType, obj: dict[str, Any]) -> list[FieldError]:
    """The subset of built-in validation controllers depend on."""
    errs: list[FieldError] = []
    spec = obj.get("spec")
    if rt.group == "apps" and rt.kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        if not isinstance(spec, dict):
            return [FieldError("FieldValueRequired", "spec", with_value=False)]
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.replicas",
                    "must be greater than or equal to 0",
                    replicas,
                )
            )
        selector = spec.get("selector")
        tmpl = spec.get("template") or {}
        if not isinstance(selector, dict) or not (
            selector.get("matchLabels") or selector.get("matchExpressions")
        ):
            errs.append(FieldError("FieldValueRequired", "spec.selector", with_value=False))
        else:
            labels = (tmpl.get("metadata") or {}).get("labels") or {}
            if not _labels_match(selector, labels):
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        "spec.template.metadata.labels",
                        "`selector` does not match template `labels`",
                        labels,
                    )
                )
        tspec = tmpl.get("spec") if isinstance(tmpl, dict) else None
        errs += _validate_pod_spec(tspec, "spec.template.spec")
    elif rt.group == "" and rt.kind == "Pod":
        errs += _validate_pod_spec(spec, "spec")
    elif rt.key == ("coordination.k8s.io", "leases") and isinstance(spec, dict):
        duration = spec.get("leaseDurationSeconds")
        if isinstance(duration, int) and duration <= 0:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.leaseDurationSeconds",
                    "must be greater than 0",
                    duration,
                )
            )
        transitions = spec.get("leaseTransitions")
        if isinstance(transitions, int) and transitions < 0:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.leaseTransitions",
                    "must be greater than or equal to 0",
                    transitions,
                )
            )
    elif rt.key == ("", "events"):
        errs += _validate_event(obj, obj, core=True)
    elif rt.key == ("events.k8s.io", "events"):
        errs += _validate_event(obj, _core_view(obj), core=False)
    return errs


def _core_view(v1: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event under the core/v1 field names the validation speaks."""
    return {
        "metadata": v1.get("metadata") or {},
        "eventTime": v1.get("eventTime"),
        "involvedObject": v1.get("regarding") or {},
        "reportingComponent": v1.get("reportingController") or "",
        "reportingInstance": v1.get("reportingInstance") or "",
        "action": v1.get("action") or "",
        "reason": v1.get("reason") or "",
        "message": v1.get("note") or "",
        "type": v1.get("type") or "",
        "firstTimestamp": v1.get("deprecatedFirstTimestamp"),
        "lastTimestamp": v1.get("deprecatedLastTimestamp"),
        "count": v1.get("deprecatedCount") or 0,
        "source": v1.get("deprecatedSource") or {},
    }


def _validate_event(obj: dict[str, Any], ev: dict[str, Any], *, core: bool) -> list[FieldError]:
    """kube-apiserver's ValidateEventCreate: the legacy rules for both APIs, the strict ones
    for events.k8s.io/v1 (field paths use the internal, core/v1 names)."""
    errs: list[FieldError] = []
    ns = (ev.get("metadata") or {}).get("namespace") or ""
    involved_ns = (ev.get("involvedObject") or {}).get("namespace") or ""
    mismatch = FieldError(
        "FieldValueInvalid",
        "involvedObject.namespace",
        "does not match event.namespace",
        involved_ns,
    )
    if not ev.get("eventTime"):
        if (not involved_ns and ns not in ("", "default")) or (involved_ns and ns != involved_ns):
            errs.append(mismatch)
    else:
        if not involved_ns and ns not in ("default", "kube-system"):
            errs.append(mismatch)
        for field, name in (
            ("reportingComponent", "reportingComponent" if core else "reportingController"),
            ("reportingInstance", "reportingInstance"),
            ("action", "action"),
            ("reason", "reason"),
        ):
            if not ev.get(field):
                errs.append(FieldError("FieldValueRequired", name, with_value=False))
    if core:
        return errs
    if not ev.get("eventTime"):
        errs.append(FieldError("FieldValueRequired", "eventTime", with_value=False))
    if ev.get("type") not in ("Normal", "Warning"):
        errs.append(
            FieldError(
                "FieldValueInvalid", "type", f"has invalid value: {ev.get('type') or ''}", ""
            )
        )
    for field in ("firstTimestamp", "lastTimestamp", "count", "source"):
        source = ev.get("source") or {}
        if field == "source":
            unset = not source.get("component") and not source.get("host")
        else:
            unset = not ev.get(field)
        if not unset:
            errs.append(FieldError("FieldValueInvalid", field, "needs to be unset", ""))
    return errs


def validate_builtin_update(
    rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
) -> list[FieldError]:
    """Immutable fields the real update validation guards (workload selectors, pod containers'
    names/images are not; immutable ConfigMaps/Secrets are)."""
    errs: list[FieldError] = []
    if rt.group == "apps":
        before = (old.get("spec") or {}).get("selector")
        after = (new.get("spec") or {}).get("selector")
        if before != after:
            errs.append(
                FieldError("FieldValueInvalid", "spec.selector", "field is immutable", after)
            )
    elif rt.group == "" and rt.kind in ("ConfigMap", "Secret") and old.get("immutable"):
        for field in ("data", "binaryData") if rt.kind == "ConfigMap" else ("data",):
            if old.get(field) != new.get(field):
                errs.append(
                    FieldError(
                        "FieldValueForbidden",
                        field,
                        "field is immutable when `immutable` is set",
                        with_value=False,
                    )
                )
        if not new.get("immutable"):
            errs.append(
                FieldError(
                    "FieldValueForbidden",
                    "immutable",
                    "field is immutable when `immutable` is set",
                    with_value=False,
                )
            )
    return errs


def _validate_pod_spec(spec: Any, path: str) -> list[FieldError]:
    if not isinstance(spec, dict):
        return [FieldError("FieldValueRequired", path, with_value=False)]
    containers = spec.get("containers")
    if not containers:
        return [FieldError("FieldValueRequired", f"{path}.containers", with_value=False)]
    errs: list[FieldError] = []
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            continue
        if not c.get("name"):
            errs.append(
                FieldError("FieldValueRequired", f"{path}.containers[{i}].name", with_value=False)
            )
        if not c.get("image"):
            errs.append(
                FieldError("FieldValueRequired", f"{path}.containers[{i}].image", with_value=False)
            )
    return errs


_WORKLOAD_COMMON = {"replicas", "selector", "template", "minReadySeconds"}
# Known fields per (group, kind): top level, then spec (None = not checked).
_KNOWN: dict[tuple[str, str], tuple[frozenset[str], frozenset[str] | None]] = {
    ("apps", "Deployment"): (
        frozenset({"spec", "status"}),
        frozenset(
            _WORKLOAD_COMMON
            | {"strategy", "revisionHistoryLimit", "paused", "progressDeadlineSeconds"}
        ),
    ),
    ("apps", "ReplicaSet"): (frozenset({"spec", "status"}), frozenset(_WORKLOAD_COMMON)),
    ("apps", "StatefulSet"): (
        frozenset({"spec", "status"}),
        frozenset(
            _WORKLOAD_COMMON
            | {
                "volumeClaimTemplates",
                "serviceName",
                "podManagementPolicy",
                "updateStrategy",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
                "ordinals",
            }
        ),
    ),
    ("", "Pod"): (frozenset({"spec", "status"}), None),
    ("", "Service"): (frozenset({"spec", "status"}), None),
    ("", "Namespace"): (frozenset({"spec", "status"}), None),
    ("", "ConfigMap"): (frozenset({"data", "binaryData", "immutable"}), None),
    ("", "Secret"): (frozenset({"data", "stringData", "type", "immutable"}), None),
    ("", "ServiceAccount"): (
        frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"}),
        None,
    ),
    ("coordination.k8s.io", "Lease"): (
        frozenset({"spec"}),
        frozenset(
            {
                "holderIdentity",
                "leaseDurationSeconds",
                "acquireTime",
                "renewTime",
                "leaseTransitions",
                "strategy",
                "preferredHolder",
            }
        ),
    ),
    ("rbac.authorization.k8s.io", "Role"): (frozenset({"rules"}), None),
    ("rbac.authorization.k8s.io", "ClusterRole"): (frozenset({"rules", "aggregationRule"}), None),
    ("rbac.authorization.k8s.io", "RoleBinding"): (frozenset({"subjects", "roleRef"}), None),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (frozenset({"subjects", "roleRef"}), None),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (frozenset({"spec", "status"}), None),
}


def drop_unknown_builtin_fields(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Remove fields a built-in kind does not have (as Go decoding does); returns their paths.

    Only the top level, ``metadata`` and the spec of workloads/leases are checked; deeper
    unknown fields of built-in kinds are kept as sent (not supported).
    """
    known = _KNOWN.get((rt.group, rt.kind))
    if known is None:
        return []
    top, spec_known = known
    unknown: list[str] = []
    for key in list(obj):
        if key not in top and key not in ("apiVersion", "kind", "metadata"):
            unknown.append(key)
            del obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in list(meta):
            if key not in OBJECT_META_FIELDS:
                unknown.append(f"metadata.{key}")
                del meta[key]
    spec = obj.get("spec")
    if spec_known is not None and isinstance(spec, dict):
        for key in list(spec):
            if key not in spec_known:
                unknown.append(f"spec.{key}")
                del spec[key]
    return unknown
