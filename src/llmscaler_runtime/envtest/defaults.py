"""Defaults and basic validation for built-in kinds, as the real API server's strategies apply.

Only what clients and controllers observe is covered (deployment replicas/strategy, pod spec
defaults, service ports, namespace phase, name syntax, deployment selector/template match).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from .errors import FieldError
from .registry import ResourceType

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


_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
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
            if key not in _META_FIELDS:
                unknown.append(f"metadata.{key}")
                del meta[key]
    spec = obj.get("spec")
    if spec_known is not None and isinstance(spec, dict):
        for key in list(spec):
            if key not in spec_known:
                unknown.append(f"spec.{key}")
                del spec[key]
    return unknown
