"""Field metadata for the LLMScaler types: the single source of the CRD schema and the parser.

Each attrs field of each API type has one :class:`FieldMeta` here: its JSON name, the
description ``kubectl explain`` shows, whether it is required, its default and its bounds.
``_codec`` enforces exactly these rules when parsing and ``crd`` renders them into the
OpenAPI schema, so a default or a minimum is written once. Cross-field rules are
:class:`Rule` entries: a CEL expression for the API server plus the message both sides use.
"""

from __future__ import annotations

from typing import Any

import attrs

from .types import (
    HEADER_NAME_PATTERN,
    SECRET_KEY_PATTERN,
    TARGET_MAX_LENGTH,
    TARGET_PATTERN,
    Condition,
    CustomProvider,
    HeaderSource,
    HeaderValueSource,
    LLMScalerSpec,
    LLMScalerStatus,
    MetricSpec,
    Preemption,
    ScaleDown,
    SecretKeySelector,
    TargetRef,
)


class _NoValue:
    """Marker for "no value": distinct from None, which can be a legitimate absent value."""

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()


@attrs.frozen
class Rule:
    """A cross-field constraint, rendered as an ``x-kubernetes-validations`` entry.

    ``field_path`` (relative, e.g. ``.minReplicas``) makes the API server report the error on
    the field the user must change; ``reason`` is one of the apiserver's field error types.
    """

    rule: str
    message: str
    field_path: str | None = None
    reason: str | None = None


@attrs.frozen
class FieldMeta:
    """How one attrs field appears in JSON and in the OpenAPI schema."""

    json: str
    description: str
    required: bool = False
    #: JSON value the API server (and the parser) fills in when the field is absent.
    default: Any = NO_VALUE
    #: Python value used when the field is absent and has neither default nor attrs default.
    absent: Any = NO_VALUE
    format: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    pattern: str | None = None
    #: Allowed values for a plain ``str`` field (Enum-typed fields take theirs from the Enum).
    enum: tuple[str, ...] | None = None
    rules: tuple[Rule, ...] = ()
    #: Extra schema keys copied verbatim (e.g. list-type markers).
    extra: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class TypeMeta:
    """Object-level schema data: its description and the rules that span several fields."""

    description: str
    rules: tuple[Rule, ...] = ()


TARGET_RULE = Rule(
    rule=f"self.matches('{TARGET_PATTERN}') && double(self) > 0.0",
    message=(
        "target must be a finite number greater than zero written as a plain decimal, "
        "such as '0.8' or '80'; a % suffix is not accepted"
    ),
)
MIN_MAX_RULE = Rule(
    rule="self.minReplicas <= self.maxReplicas",
    message="minReplicas must be less than or equal to maxReplicas",
    field_path=".minReplicas",
)
CUSTOM_PROVIDER_RULE = Rule(
    rule="!has(self.metricProvider) || self.metricProvider != 'Custom' || has(self.customProvider)",
    message="customProvider is required when metricProvider is Custom",
    field_path=".customProvider",
    reason="FieldValueRequired",
)
METRICS_RULE = Rule(
    rule=(
        "(has(self.metricProvider) && self.metricProvider == 'Custom') || "
        "(has(self.metrics) && size(self.metrics) > 0)"
    ),
    message="metrics must list at least one metric when metricProvider is Prometheus",
    field_path=".metrics",
    reason="FieldValueRequired",
)
HEADER_VALUE_RULE = Rule(
    rule="has(self.value) != has(self.valueFrom)",
    message="exactly one of value and valueFrom must be set on a serverHeadersFrom entry",
)
HEADERS_FROM_RULE = Rule(
    rule=(
        "!has(self.serverHeadersFrom) || !has(self.serverHeaders) || "
        "self.serverHeadersFrom.all(h, !(h.name in self.serverHeaders))"
    ),
    message="a header must not be named in both serverHeaders and serverHeadersFrom",
    # FieldValueInvalid (the default), not FieldValueDuplicate: kube-apiserver reports a
    # duplicate as "Duplicate value" and drops the message that says what to fix
    field_path=".serverHeadersFrom",
)

_INT32 = "int32"
_DNS_NAME_MAX = 253

TYPES: dict[type, TypeMeta] = {
    LLMScalerSpec: TypeMeta(
        "Desired behaviour of the scaler: the workload to size, where its scaling signal "
        "comes from, the replica bounds and the scale-down damping.",
        rules=(MIN_MAX_RULE, CUSTOM_PROVIDER_RULE, METRICS_RULE, HEADERS_FROM_RULE),
    ),
    HeaderSource: TypeMeta(
        "One HTTP header sent with every request to serverAddress: its value is either "
        "written here (value) or read from a Secret in the scaler's namespace (valueFrom). "
        "Exactly one of the two is set.",
        rules=(HEADER_VALUE_RULE,),
    ),
    HeaderValueSource: TypeMeta("Where the header's value is read from."),
    SecretKeySelector: TypeMeta(
        "A key of a Secret in the LLMScaler's own namespace. The manager reads it with a "
        "get on that one Secret (never list or watch), keeps it in memory for at most 30 "
        "seconds, and never writes the value to logs, Events, status or metrics."
    ),
    TargetRef: TypeMeta(
        "The workload whose spec.replicas this scaler owns. It is looked up in the scaler's "
        "own namespace; any kind with spec.replicas and status.readyReplicas works."
    ),
    MetricSpec: TypeMeta(
        "A PromQL query returning exactly one per-replica value, and the value each replica "
        "should run at. desired = ceil(readyReplicas * value / target)."
    ),
    CustomProvider: TypeMeta(
        "Settings for metricProvider Custom: which decision of the decision server to follow."
    ),
    ScaleDown: TypeMeta(
        "How fast the fleet may shrink and which pods go first. Scale-up is never delayed."
    ),
    Preemption: TypeMeta(
        "Accepted for compatibility with the original API. The controller does not implement "
        "preemption; setting it has no effect."
    ),
    LLMScalerStatus: TypeMeta("What the controller last observed and decided."),
    Condition: TypeMeta(
        "One aspect of the scaler's state (metav1.Condition): AbleToScale, ScalingActive, "
        "ScalingLimited or Ready."
    ),
}

FIELDS: dict[type, dict[str, FieldMeta]] = {
    TargetRef: {
        "api_version": FieldMeta(
            "apiVersion",
            "API group/version of the target, for example apps/v1 or leaderworkerset.x-k8s.io/v1.",
            required=True,
            min_length=1,
        ),
        "kind": FieldMeta(
            "kind",
            "Kind of the target: Deployment, StatefulSet, LeaderWorkerSet or any kind with "
            "spec.replicas and status.readyReplicas. The rollout guard and cache-aware "
            "victim selection only apply to Deployments.",
            required=True,
            min_length=1,
        ),
        "name": FieldMeta(
            "name",
            "Name of the target in the scaler's namespace.",
            required=True,
            min_length=1,
            max_length=_DNS_NAME_MAX,
        ),
    },
    MetricSpec: {
        "name": FieldMeta(
            "name",
            "Label for this metric in logs, events and conditions.",
            absent="",
        ),
        "query": FieldMeta(
            "query",
            "PromQL evaluated at {serverAddress}/api/v1/query. It must return exactly one "
            "series (aggregate with avg(...)) scoped to this workload's pods, for example by "
            "namespace and app labels. An error, no series, several series, NaN or Inf skips "
            "the metric for that sync; it is never read as zero.",
            required=True,
            min_length=1,
        ),
        "target": FieldMeta(
            "target",
            "Per-replica value to aim for, as a quoted number on the query's scale ('0.8' for "
            "a 0-1 ratio, '80' for a percentage series). Must be finite and positive; a % "
            "suffix is rejected.",
            required=True,
            min_length=1,
            max_length=TARGET_MAX_LENGTH,
            rules=(TARGET_RULE,),
        ),
    },
    CustomProvider: {
        "service_id": FieldMeta(
            "serviceId",
            "Service whose decision this scaler follows. Sent as the serviceId query "
            "parameter and matched against decisions[].serviceId in the reply; exactly one "
            "decision must match.",
            required=True,
            min_length=1,
        ),
        "namespace": FieldMeta(
            "namespace",
            "When set, only decisions carrying this namespace match. Needed only when the "
            "server reports the same serviceId in several namespaces.",
        ),
        "path": FieldMeta(
            "path",
            "Request path on serverAddress.",
            default="/decisions",
            pattern="^/",
        ),
    },
    SecretKeySelector: {
        "name": FieldMeta(
            "name",
            "Name of the Secret, in the scaler's namespace.",
            required=True,
            min_length=1,
            max_length=_DNS_NAME_MAX,
        ),
        "key": FieldMeta(
            "key",
            "Key in the Secret's data whose value is the header's value.",
            required=True,
            min_length=1,
            max_length=_DNS_NAME_MAX,
            pattern=SECRET_KEY_PATTERN,
        ),
    },
    HeaderValueSource: {
        "secret_key_ref": FieldMeta(
            "secretKeyRef",
            "A key of a Secret in the scaler's namespace.",
            required=True,
        ),
    },
    HeaderSource: {
        "name": FieldMeta(
            "name",
            "Header name, for example Authorization.",
            required=True,
            min_length=1,
            max_length=256,
            pattern=HEADER_NAME_PATTERN,
        ),
        "value": FieldMeta(
            "value",
            "The header's value, used verbatim. Prefer valueFrom for credentials.",
        ),
        "value_from": FieldMeta(
            "valueFrom",
            "Read the header's value from a Secret key instead (kept out of the LLMScaler).",
        ),
    },
    ScaleDown: {
        "stabilization_window_seconds": FieldMeta(
            "stabilizationWindowSeconds",
            "Hold the replica count at the highest recommendation seen within this many "
            "seconds, so a short dip does not shrink the fleet. 0 turns the window off.",
            default=0,
            format=_INT32,
            minimum=0,
        ),
        "max_step_replicas": FieldMeta(
            "maxStepReplicas",
            "Most replicas removed by one scale-down write; 0 means no limit. Limits the size "
            "of a step; the next step waits until the target has settled. Does not apply to "
            "bringing a fleet above maxReplicas down to maxReplicas.",
            default=0,
            format=_INT32,
            minimum=0,
        ),
        "behavior": FieldMeta(
            "behavior",
            "CacheAware marks the pods to remove with a low "
            "controller.kubernetes.io/pod-deletion-cost before a Deployment scales down, so "
            "the coldest KV caches go first. None leaves the choice to the workload "
            "controller.",
            default="CacheAware",
        ),
        "deletion_cost_query": FieldMeta(
            "deletionCostQuery",
            "PromQL returning one series per pod, each with a pod label; a pod's value is its "
            "deletion cost and the lowest goes first. Without it the newest pods are assumed "
            "coldest. Used only with behavior CacheAware and metricProvider Prometheus.",
        ),
    },
    Preemption: {
        "enable": FieldMeta(
            "enable",
            "Accepted but not implemented: has no effect.",
            default=False,
        ),
        "priority_class": FieldMeta(
            "priorityClass",
            "Accepted but not implemented: has no effect.",
        ),
    },
    LLMScalerSpec: {
        "target_ref": FieldMeta(
            "targetRef",
            "The workload to scale, in the scaler's namespace.",
            required=True,
        ),
        "server_address": FieldMeta(
            "serverAddress",
            "Base URL of the metric source. With Prometheus, the server whose "
            "/api/v1/query API runs the queries (for example "
            "http://prometheus-operated.monitoring.svc:9090); with Custom, the decision "
            "server.",
            required=True,
            min_length=1,
        ),
        "min_replicas": FieldMeta(
            "minReplicas",
            "Lower bound of the replica count; 0 allows scale to zero.",
            required=True,
            format=_INT32,
            minimum=0,
        ),
        "max_replicas": FieldMeta(
            "maxReplicas",
            "Upper bound of the replica count; must not be below minReplicas. 0 keeps the "
            "fleet at zero. Lowering it below the current count scales down to it in one "
            "write, without stabilization or step cap (as the HPA does).",
            required=True,
            format=_INT32,
            minimum=0,
        ),
        "metric_provider": FieldMeta(
            "metricProvider",
            "Source of the scaling signal: Prometheus (metrics are PromQL queries against "
            "serverAddress) or Custom (a decision server answers with an absolute replica "
            "count). There is no fallback from one to the other.",
            default="Prometheus",
        ),
        "custom_provider": FieldMeta(
            "customProvider",
            "Decision-server settings; required when metricProvider is Custom, ignored otherwise.",
        ),
        "server_headers": FieldMeta(
            "serverHeaders",
            "HTTP headers sent verbatim with every request to serverAddress, for example "
            "Authorization. The values are stored in the LLMScaler in plain text: take "
            "credentials from a Secret with serverHeadersFrom instead.",
        ),
        "server_headers_from": FieldMeta(
            "serverHeadersFrom",
            "More headers sent with every request to serverAddress (metric queries, the "
            "deletionCostQuery and decision-server requests), each with a literal value or a "
            "value read from a Secret key in the scaler's namespace. A missing Secret or key "
            "holds the fleet and is reported in the conditions; names must not repeat "
            "serverHeaders.",
            max_items=16,
            extra=(("x-kubernetes-list-map-keys", ["name"]), ("x-kubernetes-list-type", "map")),
        ),
        "metrics": FieldMeta(
            "metrics",
            "Metrics that drive the replica count; the largest recommendation wins. Required "
            "(at least one) with Prometheus, unused with Custom.",
            max_items=16,
        ),
        "sync_period_seconds": FieldMeta(
            "syncPeriodSeconds",
            "Seconds between evaluations; also the pace of successive scale steps.",
            default=15,
            format=_INT32,
            minimum=1,
        ),
        "retry_period_seconds": FieldMeta(
            "retryPeriodSeconds",
            "Seconds before the next attempt when a sync fails (target missing, no usable "
            "metric, a failed write).",
            default=10,
            format=_INT32,
            minimum=1,
        ),
        "scale_down": FieldMeta(
            "scaleDown",
            "Scale-down damping and cache-aware victim selection.",
            default={},
        ),
        "preemption": FieldMeta(
            "preemption",
            "Accepted but not implemented by the controller: setting it has no effect.",
        ),
    },
    Condition: {
        "type": FieldMeta(
            "type",
            "Condition type in CamelCase, for example Ready.",
            required=True,
            max_length=316,
            pattern=(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
            ),
        ),
        "status": FieldMeta(
            "status",
            "True, False or Unknown.",
            required=True,
            enum=("True", "False", "Unknown"),
        ),
        "reason": FieldMeta(
            "reason",
            "Machine-readable CamelCase reason for the last transition.",
            required=True,
            min_length=1,
            max_length=1024,
            pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        ),
        "message": FieldMeta(
            "message",
            "Human-readable details, including what to change when something is wrong.",
            required=True,
            max_length=32768,
        ),
        "last_transition_time": FieldMeta(
            "lastTransitionTime",
            "When the status last changed (RFC 3339).",
            required=True,
            format="date-time",
        ),
        "observed_generation": FieldMeta(
            "observedGeneration",
            "metadata.generation the condition was computed from.",
            format="int64",
            minimum=0,
        ),
    },
    LLMScalerStatus: {
        "current_replicas": FieldMeta(
            "currentReplicas",
            "Ready replicas of the target at the last sync: the count the scaling ratio is "
            "computed from, not spec.replicas.",
            format=_INT32,
            minimum=0,
        ),
        "desired_replicas": FieldMeta(
            "desiredReplicas",
            "Last recommendation after clamping to the bounds and scale-down stabilization, "
            "before the maxStepReplicas cap: the destination of a stepped scale-down.",
            format=_INT32,
            minimum=0,
        ),
        "conditions": FieldMeta(
            "conditions",
            "Current state: AbleToScale, ScalingActive, ScalingLimited and Ready, each with a "
            "reason and a message.",
            extra=(("x-kubernetes-list-map-keys", ["type"]), ("x-kubernetes-list-type", "map")),
        ),
        "observed_generation": FieldMeta(
            "observedGeneration",
            "metadata.generation of the spec the controller last acted on.",
            format="int64",
            minimum=0,
        ),
        "last_scale_time": FieldMeta(
            "lastScaleTime",
            "When the controller last changed the target's replica count (RFC 3339).",
            format="date-time",
        ),
    },
}
