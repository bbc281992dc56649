"""The LLMScaler API (``autoscaling.modelsphere.dev/v1alpha1``) as immutable attrs types.

Reconcilers work on these instead of raw dicts so that every default and every cross-field
rule is applied in one place. The parser deliberately re-checks what the CRD schema checks:
an object may have been stored before the CRD gained a rule, or on a cluster that never ran
CEL, and the controller must not act on a spec the API server would reject today.

Each field carries its own JSON name, description, bounds and rules
(``attrs.field(metadata=schema(...))``) and each type its description and cross-field rules
(``@api_type``), so adding a field is one declaration here; :mod:`.codec` parses by that
metadata and :mod:`.crd` renders the CRD from it, so the schema and the parser cannot drift
apart. This module imports the codec, never the other way round.
"""

from __future__ import annotations

import math
import re
import zoneinfo
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from typing import Any

import attrs

from . import codec
from ._meta import Rule, api_type, schema
from .codec import SpecError, is_int, shown

GROUP = "autoscaling.modelsphere.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "LLMScaler"
LIST_KIND = "LLMScalerList"
PLURAL = "llmscalers"
SINGULAR = "llmscaler"

#: A metric target: a plain decimal number, optionally with a short exponent. The exponent is
#: capped at two digits and the whole string at 64 characters (``MetricSpec.target``) so any
#: string that matches converts to a finite double both in Python and in the API server's CEL.
TARGET_PATTERN = r"^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]{1,2})?$"
TARGET_MAX_LENGTH = 64
_TARGET_RE = re.compile(TARGET_PATTERN)

INT32_MAX = 2**31 - 1

#: An HTTP header name (an RFC 9110 token).
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
#: A key of a Secret's data (what ``kubectl create secret`` accepts).
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"

_INT32 = "int32"
_DNS_NAME_MAX = 253
#: The schema markers of a list whose entries are keyed by their name (a list map).
_LIST_MAP_BY_NAME = (("x-kubernetes-list-map-keys", ["name"]), ("x-kubernetes-list-type", "map"))

#: A schedule's start: a time of day as HH:MM (24-hour clock, zero-padded).
TIME_OF_DAY_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
#: A schedule's end: as the start, or 24:00 for the end of the day.
END_OF_WINDOW_PATTERN = r"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"
#: The shape of an IANA zone name (Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+5,
#: UTC): no numeric offsets such as +05:00, which cel-go accepts but are not zones.
TIME_ZONE_PATTERN = r"^[A-Za-z][-+_A-Za-z0-9]*(/[-+_A-Za-z0-9]+)*$"


class MetricProvider(StrEnum):
    """Where the scaling signal comes from; the two are alternatives, never a fallback chain."""

    PROMETHEUS = "Prometheus"
    CUSTOM = "Custom"


class ScaleDownBehavior(StrEnum):
    """Whether a scale-down first marks the coldest pods with a low pod-deletion-cost."""

    CACHE_AWARE = "CacheAware"
    NONE = "None"


class Weekday(StrEnum):
    """A day of a schedule's week, in the schedule's own time zone."""

    MON = "Mon"
    TUE = "Tue"
    WED = "Wed"
    THU = "Thu"
    FRI = "Fri"
    SAT = "Sat"
    SUN = "Sun"


class FallbackBehavior(StrEnum):
    """How the fallback count relates to the current one (KEDA's ``fallback.behavior``)."""

    STATIC = "Static"
    CURRENT_REPLICAS_IF_HIGHER = "CurrentReplicasIfHigher"


def parse_target(text: str, *, path: str = "spec.metrics[].target") -> float:
    """Parse a metric target strictly: a finite number greater than zero, written plainly.

    Percent signs, ``inf``/``nan``, underscores, hex and whitespace are refused rather than
    guessed at: a misread target silently multiplies or divides the fleet.
    """
    if isinstance(text, str) and "%" in text:
        raise SpecError(
            [f"{path}: {text!r} has a % sign; write the number on the query's own scale"]
        )
    value = _plain_decimal(text, path, "'0.8' or '80'")
    if not math.isfinite(value) or value <= 0.0:
        raise SpecError([f"{path}: {text!r} must be a finite number greater than zero"])
    return value


def parse_tolerance(text: str, *, path: str = "spec.scaleUp.tolerance") -> float:
    """Parse a tolerance strictly: a plain decimal from 0 up to, but not including, 1.

    A tolerance of 1 or more would make the dead band swallow every scale-down (a ratio
    cannot fall below 0), so it is refused rather than silently turning scale-down off.
    """
    value = _plain_decimal(text, path, "'0.1'")
    if not 0.0 <= value < 1.0:
        raise SpecError([f"{path}: {text!r} must be at least 0 and less than 1"])
    return value


def _plain_decimal(text: Any, path: str, example: str) -> float:
    """What every quoted number of the API must be: a string matching :data:`TARGET_PATTERN`
    (unsigned, no %, inf or hex, a two-digit exponent, so always finite), as a float."""
    if not isinstance(text, str):
        raise SpecError([f"{path}: must be a string holding a number, got {type(text).__name__}"])
    if len(text) > TARGET_MAX_LENGTH or not _TARGET_RE.search(text):
        raise SpecError([f"{path}: {text!r} is not a plain decimal number such as {example}"])
    return float(text)


class FrozenMap(Mapping[str, str]):
    """A read-only, hashable string map, so specs holding headers stay hashable and immutable."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, str] | None = None) -> None:
        self._data: dict[str, str] = dict(data or {})
        self._hash: int | None = None

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data) == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def _freeze_map(value: Mapping[str, str] | None) -> FrozenMap:
    return value if isinstance(value, FrozenMap) else FrozenMap(value)


def _freeze_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


# --- cross-field rules: the CEL the API server runs and its Python twin, side by side -------
# Each check takes the JSON value the rule's ``self`` refers to (after defaulting) and returns
# a problem detail, or None when the rule holds.


def _twin(parse: Callable[[Any], float]) -> Callable[[Any], str | None]:
    """The Python check of a quoted-number rule: its strict parser's problem, without the path
    (the decoder adds the path of the field it checks)."""

    def check(value: Any) -> str | None:
        try:
            parse(value)
        except SpecError as err:
            return err.problems[0].split(": ", 1)[1]
        return None

    return check


TARGET_RULE = Rule(
    rule=f"self.matches('{TARGET_PATTERN}') && double(self) > 0.0",
    message=(
        "target must be a finite number greater than zero written as a plain decimal, "
        "such as '0.8' or '80'; a % suffix is not accepted"
    ),
    check=_twin(parse_target),
)


def _check_min_max(obj: Mapping[str, Any]) -> str | None:
    lo, hi = obj.get("minReplicas"), obj.get("maxReplicas")
    if is_int(lo) and is_int(hi) and lo > hi:
        return f"{MIN_MAX_RULE.message} (minReplicas {shown(lo)} > maxReplicas {shown(hi)})"
    return None


MIN_MAX_RULE = Rule(
    rule="self.minReplicas <= self.maxReplicas",
    message="minReplicas must be less than or equal to maxReplicas",
    check=_check_min_max,
    field_path=".minReplicas",
)


def _check_custom_provider(obj: Mapping[str, Any]) -> str | None:
    if obj.get("metricProvider") == "Custom" and obj.get("customProvider") is None:
        return CUSTOM_PROVIDER_RULE.message
    return None


CUSTOM_PROVIDER_RULE = Rule(
    rule="!has(self.metricProvider) || self.metricProvider != 'Custom' || has(self.customProvider)",
    message="customProvider is required when metricProvider is Custom",
    check=_check_custom_provider,
    field_path=".customProvider",
    reason="FieldValueRequired",
)


def _check_metrics(obj: Mapping[str, Any]) -> str | None:
    if obj.get("metricProvider") == "Custom":
        return None
    metrics = obj.get("metrics")
    if metrics is None or (isinstance(metrics, list) and not metrics):
        return METRICS_RULE.message
    return None


METRICS_RULE = Rule(
    rule=(
        "(has(self.metricProvider) && self.metricProvider == 'Custom') || "
        "(has(self.metrics) && size(self.metrics) > 0)"
    ),
    message="metrics must list at least one metric when metricProvider is Prometheus",
    check=_check_metrics,
    field_path=".metrics",
    reason="FieldValueRequired",
)


def _check_header_value(obj: Mapping[str, Any]) -> str | None:
    if (obj.get("value") is None) == (obj.get("valueFrom") is None):
        return HEADER_VALUE_RULE.message
    return None


HEADER_VALUE_RULE = Rule(
    rule="has(self.value) != has(self.valueFrom)",
    message="exactly one of value and valueFrom must be set on a serverHeadersFrom entry",
    check=_check_header_value,
)


def _check_headers_from(obj: Mapping[str, Any]) -> str | None:
    plain, sourced = obj.get("serverHeaders"), obj.get("serverHeadersFrom")
    if not isinstance(plain, Mapping) or not isinstance(sourced, list):
        return None
    both = sorted(
        {
            h["name"]
            for h in sourced
            if isinstance(h, Mapping) and isinstance(h.get("name"), str) and h["name"] in plain
        }
    )
    if both:
        return f"{HEADERS_FROM_RULE.message} ({', '.join(map(str, both))})"
    return None


HEADERS_FROM_RULE = Rule(
    rule=(
        "!has(self.serverHeadersFrom) || !has(self.serverHeaders) || "
        "self.serverHeadersFrom.all(h, !(h.name in self.serverHeaders))"
    ),
    message="a header must not be named in both serverHeaders and serverHeadersFrom",
    check=_check_headers_from,
    # FieldValueInvalid (the default), not FieldValueDuplicate: kube-apiserver reports a
    # duplicate as "Duplicate value" and drops the message that says what to fix
    field_path=".serverHeadersFrom",
)


def _check_fallback_range(obj: Mapping[str, Any]) -> str | None:
    fallback, lo, hi = obj.get("fallback"), obj.get("minReplicas"), obj.get("maxReplicas")
    replicas = fallback.get("replicas") if isinstance(fallback, Mapping) else None
    if is_int(replicas) and is_int(lo) and is_int(hi) and not lo <= replicas <= hi:
        return (
            f"{FALLBACK_RANGE_RULE.message} (fallback.replicas {shown(replicas)} is outside "
            f"[{shown(lo)}, {shown(hi)}])"
        )
    return None


FALLBACK_RANGE_RULE = Rule(
    rule=(
        "!has(self.fallback) || "
        "(self.fallback.replicas >= self.minReplicas && self.fallback.replicas <= self.maxReplicas)"
    ),
    message="fallback.replicas must lie within [minReplicas, maxReplicas]",
    check=_check_fallback_range,
    field_path=".fallback.replicas",
)


def _check_time_zone(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if value == "Local":  # cel-go's name for the server's own zone; never an IANA zone here
        return TIME_ZONE_RULE.message
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a directory
        return f"{TIME_ZONE_RULE.message} (unknown time zone {shown(value)})"
    return None


TIME_ZONE_RULE = Rule(
    # getHours(zone) errors on a zone the API server cannot load; kube-apiserver then reports
    # "unknown time zone X evaluating rule: <message>"
    rule="self != 'Local' && timestamp('2000-01-01T00:00:00Z').getHours(self) >= 0",
    message="timeZone must be an IANA time zone name such as Europe/Paris or America/New_York",
    check=_check_time_zone,
)


def _check_window(obj: Mapping[str, Any]) -> str | None:
    start, end = obj.get("start"), obj.get("end")
    if isinstance(start, str) and isinstance(end, str) and not start < end:
        return f"{WINDOW_RULE.message} (start {shown(start)}, end {shown(end)})"
    return None


WINDOW_RULE = Rule(
    # zero-padded HH:MM strings order as the times they name
    rule="self.start < self.end",
    message=(
        "end must be later than start; a window cannot cross midnight, so split one that "
        "does into two schedules (22:00-24:00 and 00:00-06:00)"
    ),
    check=_check_window,
    field_path=".end",
)


def _check_schedule_sets_bounds(obj: Mapping[str, Any]) -> str | None:
    if obj.get("minReplicas") is None and obj.get("maxReplicas") is None:
        return SCHEDULE_BOUNDS_RULE.message
    return None


SCHEDULE_BOUNDS_RULE = Rule(
    rule="has(self.minReplicas) || has(self.maxReplicas)",
    message="a schedule must set minReplicas, maxReplicas or both",
    check=_check_schedule_sets_bounds,
    reason="FieldValueRequired",
)


def _check_schedule_ranges(obj: Mapping[str, Any]) -> str | None:
    schedules, lo, hi = obj.get("schedules"), obj.get("minReplicas"), obj.get("maxReplicas")
    if not isinstance(schedules, list) or not is_int(lo) or not is_int(hi):
        return None
    bad = []
    for item in schedules:
        if not isinstance(item, Mapping):
            continue
        s_lo, s_hi = item.get("minReplicas", lo), item.get("maxReplicas", hi)
        if is_int(s_lo) and is_int(s_hi) and s_lo > s_hi:
            bad.append(f"{shown(item.get('name'))}: [{s_lo}, {s_hi}]")
    if bad:
        return f"{SCHEDULE_RANGE_RULE.message} ({'; '.join(bad)})"
    return None


SCHEDULE_RANGE_RULE = Rule(
    rule=(
        "!has(self.schedules) || self.schedules.all(s, "
        "(has(s.minReplicas) ? s.minReplicas : self.minReplicas) <= "
        "(has(s.maxReplicas) ? s.maxReplicas : self.maxReplicas))"
    ),
    message=(
        "each schedule must keep minReplicas <= maxReplicas, with the spec's value standing "
        "in for a bound the schedule does not set"
    ),
    check=_check_schedule_ranges,
    field_path=".schedules",
)


def parse_activation_threshold(
    text: str, *, path: str = "spec.metrics[].activationThreshold"
) -> float:
    """Parse an activation threshold strictly: a plain decimal of at least 0 (finite by the
    pattern's two-digit exponent). A negative one would mean the same as 0, since a value of 0
    or less never wakes the fleet, so the sign is refused rather than kept as a surprise."""
    return _plain_decimal(text, path, "'0.5'")


ACTIVATION_THRESHOLD_RULE = Rule(
    rule=f"self.matches('{TARGET_PATTERN}')",
    message=(
        "activationThreshold must be a plain decimal number of at least 0, such as '0.5'; "
        "a sign, a % suffix or inf is not accepted"
    ),
    check=_twin(parse_activation_threshold),
)


TOLERANCE_RULE = Rule(
    rule=f"self.matches('{TARGET_PATTERN}') && double(self) < 1.0",
    message=(
        "tolerance must be a plain decimal number from 0 up to, but not including, 1, "
        "such as '0.1' (a 10 % dead band)"
    ),
    check=_twin(parse_tolerance),
)


def _tolerance_schema(direction: str, band: str, hpa: str) -> dict[str, Any]:
    """The metadata of scaleUp.tolerance and scaleDown.tolerance, which mirror each other."""
    return schema(
        f"Dead band for {direction}: a metric whose value/target ratio is within {band} "
        "votes for the current replica count instead of its ratio (the HPA's "
        f"behavior.{hpa}.tolerance, KEP-4951). A quoted number from 0 up to, but not "
        "including, 1: '0.1' ignores a change of less than 10 %. '0' (the default) is no "
        "band. Applies to Prometheus metrics, not to a Custom decision, and not at zero "
        "replicas.",
        min_length=1,
        max_length=TARGET_MAX_LENGTH,
        rules=(TOLERANCE_RULE,),
    )


# --- the types -------------------------------------------------------------------------------


@api_type(
    "The workload whose spec.replicas this scaler owns. It is looked up in the scaler's "
    "own namespace; any kind with spec.replicas and status.readyReplicas works."
)
@attrs.frozen
class TargetRef:
    """The workload to scale, always in the scaler's own namespace."""

    api_version: str = attrs.field(
        metadata=schema(
            "API group/version of the target, for example apps/v1 or leaderworkerset.x-k8s.io/v1.",
            min_length=1,
        )
    )
    kind: str = attrs.field(
        metadata=schema(
            "Kind of the target: Deployment, StatefulSet, LeaderWorkerSet or any kind with "
            "spec.replicas and status.readyReplicas. The rollout guard and cache-aware "
            "victim selection only apply to Deployments.",
            min_length=1,
        )
    )
    name: str = attrs.field(
        metadata=schema(
            "Name of the target in the scaler's namespace.",
            min_length=1,
            max_length=_DNS_NAME_MAX,
        )
    )


@api_type(
    "A PromQL query returning exactly one per-replica value, and the value each replica "
    "should run at. desired = ceil(readyReplicas * value / target)."
)
@attrs.frozen
class MetricSpec:
    """One PromQL query and the per-replica value the fleet should sit at."""

    name: str = attrs.field(
        metadata=schema("Label for this metric in logs, events and conditions.", absent="")
    )
    query: str = attrs.field(
        metadata=schema(
            "PromQL evaluated at {serverAddress}/api/v1/query. It must return exactly one "
            "series (aggregate with avg(...)) scoped to this workload's pods, for example by "
            "namespace and app labels. An error, no series, several series, NaN or Inf skips "
            "the metric for that sync; it is never read as zero.",
            min_length=1,
        )
    )
    target: str = attrs.field(
        metadata=schema(
            "Per-replica value to aim for, as a quoted number on the query's scale ('0.8' for "
            "a 0-1 ratio, '80' for a percentage series). Must be finite and positive; a % "
            "suffix is rejected.",
            min_length=1,
            max_length=TARGET_MAX_LENGTH,
            rules=(TARGET_RULE,),
        )
    )

    activation_threshold: str | None = attrs.field(
        default=None,
        metadata=schema(
            "At zero replicas, the fleet wakes only when this metric's value is above this "
            "threshold (KEDA's activationThreshold), so noise does not start a GPU. A quoted "
            "number of at least 0 on the query's scale. Unset, any value above 0 wakes the "
            "fleet. It has no effect while replicas run: the fleet still shrinks to zero "
            "only when the ratio asks for it.",
            min_length=1,
            max_length=TARGET_MAX_LENGTH,
            rules=(ACTIVATION_THRESHOLD_RULE,),
        ),
    )

    @property
    def target_value(self) -> float:
        """The target as a number; raises SpecError when it is not finite and positive."""
        where = f"spec.metrics[name={self.name}].target" if self.name else "spec.metrics[].target"
        return parse_target(self.target, path=where)

    @property
    def activation_threshold_value(self) -> float | None:
        """The activation threshold as a number, None when unset; raises SpecError."""
        if self.activation_threshold is None:
            return None
        where = f"spec.metrics[name={self.name}]" if self.name else "spec.metrics[]"
        return parse_activation_threshold(
            self.activation_threshold, path=f"{where}.activationThreshold"
        )


@api_type("Settings for metricProvider Custom: which decision of the decision server to follow.")
@attrs.frozen
class CustomProvider:
    """Which decision of an external decision server drives this scaler."""

    service_id: str = attrs.field(
        metadata=schema(
            "Service whose decision this scaler follows. Sent as the serviceId query "
            "parameter and matched against decisions[].serviceId in the reply; exactly one "
            "decision must match.",
            min_length=1,
        )
    )
    namespace: str | None = attrs.field(
        default=None,
        metadata=schema(
            "When set, only decisions carrying this namespace match. Needed only when the "
            "server reports the same serviceId in several namespaces."
        ),
    )
    path: str = attrs.field(
        default="/decisions", metadata=schema("Request path on serverAddress.", pattern="^/")
    )


@api_type(
    "A key of a Secret in the LLMScaler's own namespace. The manager reads it with a "
    "get on that one Secret (never list or watch), keeps it in memory for at most 30 "
    "seconds, and never writes the value to logs, Events, status or metrics."
)
@attrs.frozen
class SecretKeySelector:
    """One key of a Secret in the scaler's own namespace."""

    name: str = attrs.field(
        metadata=schema(
            "Name of the Secret, in the scaler's namespace.",
            min_length=1,
            max_length=_DNS_NAME_MAX,
        )
    )
    key: str = attrs.field(
        metadata=schema(
            "Key in the Secret's data whose value is the header's value.",
            min_length=1,
            max_length=_DNS_NAME_MAX,
            pattern=SECRET_KEY_PATTERN,
        )
    )


@api_type("Where the header's value is read from.")
@attrs.frozen
class HeaderValueSource:
    """Where a header's value is read from instead of the LLMScaler itself."""

    secret_key_ref: SecretKeySelector = attrs.field(
        metadata=schema("A key of a Secret in the scaler's namespace.")
    )


@api_type(
    "One HTTP header sent with every request to serverAddress: its value is either "
    "written here (value) or read from a Secret in the scaler's namespace (valueFrom). "
    "Exactly one of the two is set.",
    rules=(HEADER_VALUE_RULE,),
)
@attrs.frozen
class HeaderSource:
    """One header sent to serverAddress: a literal ``value`` or a ``valueFrom`` reference.

    Exactly one of the two is set (a CEL rule and the parser both enforce it).
    """

    name: str = attrs.field(
        metadata=schema(
            "Header name, for example Authorization.",
            min_length=1,
            max_length=256,
            pattern=HEADER_NAME_PATTERN,
        )
    )
    value: str | None = attrs.field(
        default=None,
        metadata=schema("The header's value, used verbatim. Prefer valueFrom for credentials."),
    )
    value_from: HeaderValueSource | None = attrs.field(
        default=None,
        metadata=schema(
            "Read the header's value from a Secret key instead (kept out of the LLMScaler)."
        ),
    )


@api_type(
    "How fast the fleet may grow. By default scale-up is immediate: every field here is off "
    "until set."
)
@attrs.frozen
class ScaleUp:
    """Scale-up damping: stabilization window, step cap and the tolerance band."""

    stabilization_window_seconds: int = attrs.field(
        default=0,
        metadata=schema(
            "Scale up only to the lowest recommendation seen within this many seconds, so a "
            "burst must last the whole window before replicas are added (the HPA's "
            "behavior.scaleUp.stabilizationWindowSeconds). A sync that could not measure "
            "counts as a recommendation of the current count. 0 turns the window off.",
            format=_INT32,
            minimum=0,
        ),
    )
    max_step_replicas: int = attrs.field(
        default=0,
        metadata=schema(
            "Most replicas added by one scale-up write; 0 means no limit. The next step is "
            "taken at the next sync (every syncPeriodSeconds), so the fleet grows by at most "
            "this many replicas per sync period. Does not apply to bringing a fleet below "
            "minReplicas up to minReplicas.",
            format=_INT32,
            minimum=0,
        ),
    )
    tolerance: str = attrs.field(
        default="0", metadata=_tolerance_schema("scale-up", "[1, 1 + tolerance]", "scaleUp")
    )

    @property
    def tolerance_value(self) -> float:
        """The tolerance as a number in [0, 1); raises SpecError on a bad one."""
        return parse_tolerance(self.tolerance, path="spec.scaleUp.tolerance")


@api_type("How fast the fleet may shrink and which pods go first.")
@attrs.frozen
class ScaleDown:
    """Scale-down damping (stabilization window, step cap) and cache-aware victim choice."""

    stabilization_window_seconds: int = attrs.field(
        default=0,
        metadata=schema(
            "Hold the replica count at the highest recommendation seen within this many "
            "seconds, so a short dip does not shrink the fleet. 0 turns the window off.",
            format=_INT32,
            minimum=0,
        ),
    )
    max_step_replicas: int = attrs.field(
        default=0,
        metadata=schema(
            "Most replicas removed by one scale-down write; 0 means no limit. Limits the size "
            "of a step; the next step waits until the target has settled. Does not apply to "
            "bringing a fleet above maxReplicas down to maxReplicas.",
            format=_INT32,
            minimum=0,
        ),
    )
    behavior: ScaleDownBehavior = attrs.field(
        default=ScaleDownBehavior.CACHE_AWARE,
        metadata=schema(
            "CacheAware marks the pods to remove with a low "
            "controller.kubernetes.io/pod-deletion-cost before a Deployment scales down, so "
            "the coldest KV caches go first. None leaves the choice to the workload "
            "controller."
        ),
    )
    deletion_cost_query: str | None = attrs.field(
        default=None,
        metadata=schema(
            "PromQL returning one series per pod, each with a pod label; a pod's value is its "
            "deletion cost and the lowest goes first. Without it the newest pods are assumed "
            "coldest. Used only with behavior CacheAware and metricProvider Prometheus."
        ),
    )
    tolerance: str = attrs.field(
        default="0", metadata=_tolerance_schema("scale-down", "[1 - tolerance, 1]", "scaleDown")
    )

    @property
    def tolerance_value(self) -> float:
        """The tolerance as a number in [0, 1); raises SpecError on a bad one."""
        return parse_tolerance(self.tolerance, path="spec.scaleDown.tolerance")


@api_type(
    "A weekly window in which other replica bounds apply, such as a higher minReplicas "
    "before the working day starts (AIBrix's spec.schedules, KEDA's cron scaler). While a "
    "window is open its minReplicas and maxReplicas replace the spec's; where windows "
    "overlap the highest of each wins, and a minimum above another window's maximum raises "
    "that maximum.",
    rules=(WINDOW_RULE, SCHEDULE_BOUNDS_RULE),
)
@attrs.frozen
class Schedule:
    """Replica bounds that replace the spec's while a weekly time window is open."""

    name: str = attrs.field(
        metadata=schema(
            "Name of the window, unique within the scaler; shown in the conditions while the "
            "window is open.",
            min_length=1,
            max_length=63,
        )
    )
    time_zone: str = attrs.field(
        metadata=schema(
            "IANA time zone the days, start and end are read in, for example Europe/Paris; "
            "daylight saving time is followed, so 08:00 stays 08:00 on the wall clock. "
            "Numeric offsets such as +05:00 are not accepted.",
            min_length=1,
            max_length=64,
            pattern=TIME_ZONE_PATTERN,
            rules=(TIME_ZONE_RULE,),
        )
    )
    start: str = attrs.field(
        metadata=schema(
            "Time of day the window opens, HH:MM on a 24-hour clock (inclusive).",
            pattern=TIME_OF_DAY_PATTERN,
            max_length=5,
        )
    )
    end: str = attrs.field(
        metadata=schema(
            "Time of day the window closes, HH:MM (exclusive); 24:00 is the end of the day. "
            "Must be later than start: a window does not cross midnight.",
            pattern=END_OF_WINDOW_PATTERN,
            max_length=5,
        )
    )
    days: tuple[Weekday, ...] = attrs.field(
        default=(),
        converter=_freeze_tuple,
        metadata=schema(
            "Days the window opens on (Mon, Tue, Wed, Thu, Fri, Sat, Sun), in its time zone; "
            "empty or absent means every day.",
            max_items=7,
        ),
    )
    min_replicas: int | None = attrs.field(
        default=None,
        metadata=schema(
            "Lower bound while the window is open, instead of spec.minReplicas. Raising it "
            "ahead of a daily peak has the capacity warm when the traffic arrives.",
            format=_INT32,
            minimum=0,
        ),
    )
    max_replicas: int | None = attrs.field(
        default=None,
        metadata=schema(
            "Upper bound while the window is open, instead of spec.maxReplicas.",
            format=_INT32,
            minimum=0,
        ),
    )


@api_type(
    "What to do when the scaling signal cannot be read for several evaluations in a row "
    "(KEDA's ScaledObject fallback). Without it a scaler holds its replica count for as "
    "long as the signal is missing."
)
@attrs.frozen
class Fallback:
    """A replica count to go to once the signal has failed ``failure_threshold`` times in a row."""

    failure_threshold: int = attrs.field(
        metadata=schema(
            "Consecutive evaluations that measured nothing (every metric skipped, or no usable "
            "decision) before the fallback applies: with 3, the fourth failure in a row scales "
            "to the fallback count, as KEDA counts. The first evaluation that measures "
            "something ends the fallback. The count lives in the manager's memory, so a "
            "restart or a new leader starts it again from zero.",
            format=_INT32,
            minimum=1,
        )
    )
    replicas: int = attrs.field(
        metadata=schema(
            "Replica count while the fallback applies; must lie within [minReplicas, "
            "maxReplicas]. It goes through the same pacing as any recommendation: scale-up at "
            "once, scale-down after the stabilization window and in steps of maxStepReplicas.",
            format=_INT32,
            minimum=0,
        )
    )
    behavior: FallbackBehavior = attrs.field(
        default=FallbackBehavior.STATIC,
        metadata=schema(
            "Static goes to replicas, even when that is fewer than the fleet has now (you "
            "chose the count a blind fleet should run at). CurrentReplicasIfHigher never "
            "goes below the current spec.replicas: the higher of the two wins."
        ),
    )


@api_type(
    "Accepted for compatibility with the original API. The controller does not implement "
    "preemption; setting it has no effect."
)
@attrs.frozen
class Preemption:
    """Accepted for compatibility with the original API; the controller does not act on it."""

    enable: bool = attrs.field(
        default=False, metadata=schema("Accepted but not implemented: has no effect.")
    )
    priority_class: str | None = attrs.field(
        default=None, metadata=schema("Accepted but not implemented: has no effect.")
    )


@api_type(
    "Desired behaviour of the scaler: the workload to size, where its scaling signal "
    "comes from, the replica bounds and the scale-down damping.",
    rules=(
        MIN_MAX_RULE,
        CUSTOM_PROVIDER_RULE,
        METRICS_RULE,
        HEADERS_FROM_RULE,
        FALLBACK_RANGE_RULE,
        SCHEDULE_RANGE_RULE,
    ),
)
@attrs.frozen
class LLMScalerSpec:
    """What the user asked for; defaults are those the CRD applies."""

    target_ref: TargetRef = attrs.field(
        metadata=schema("The workload to scale, in the scaler's namespace.")
    )
    server_address: str = attrs.field(
        metadata=schema(
            "Base URL of the metric source. With Prometheus, the server whose "
            "/api/v1/query API runs the queries (for example "
            "http://prometheus-operated.monitoring.svc:9090); with Custom, the decision "
            "server.",
            min_length=1,
        )
    )
    min_replicas: int = attrs.field(
        metadata=schema(
            "Lower bound of the replica count; 0 allows scale to zero.",
            format=_INT32,
            minimum=0,
        )
    )
    max_replicas: int = attrs.field(
        metadata=schema(
            "Upper bound of the replica count; must not be below minReplicas. 0 keeps the "
            "fleet at zero. Lowering it below the current count scales down to it in one "
            "write, without stabilization or step cap (as the HPA does).",
            format=_INT32,
            minimum=0,
        )
    )
    metric_provider: MetricProvider = attrs.field(
        default=MetricProvider.PROMETHEUS,
        metadata=schema(
            "Source of the scaling signal: Prometheus (metrics are PromQL queries against "
            "serverAddress) or Custom (a decision server answers with an absolute replica "
            "count). There is no fallback from one to the other."
        ),
    )
    custom_provider: CustomProvider | None = attrs.field(
        default=None,
        metadata=schema(
            "Decision-server settings; required when metricProvider is Custom, ignored otherwise."
        ),
    )
    server_headers: Mapping[str, str] = attrs.field(
        factory=FrozenMap,
        converter=_freeze_map,
        metadata=schema(
            "HTTP headers sent verbatim with every request to serverAddress, for example "
            "Authorization. The values are stored in the LLMScaler in plain text: take "
            "credentials from a Secret with serverHeadersFrom instead."
        ),
    )
    server_headers_from: tuple[HeaderSource, ...] = attrs.field(
        default=(),
        converter=_freeze_tuple,
        metadata=schema(
            "More headers sent with every request to serverAddress (metric queries, the "
            "deletionCostQuery and decision-server requests), each with a literal value or a "
            "value read from a Secret key in the scaler's namespace. A missing Secret or key "
            "holds the fleet and is reported in the conditions; names must not repeat "
            "serverHeaders.",
            max_items=16,
            extra=_LIST_MAP_BY_NAME,
        ),
    )
    metrics: tuple[MetricSpec, ...] = attrs.field(
        default=(),
        converter=_freeze_tuple,
        metadata=schema(
            "Metrics that drive the replica count; the largest recommendation wins. Required "
            "(at least one) with Prometheus, unused with Custom.",
            max_items=16,
        ),
    )
    sync_period_seconds: int = attrs.field(
        default=15,
        metadata=schema(
            "Seconds between evaluations; also the pace of successive scale steps.",
            format=_INT32,
            minimum=1,
        ),
    )
    retry_period_seconds: int = attrs.field(
        default=10,
        metadata=schema(
            "Seconds before the next attempt when a sync fails (target missing, no usable "
            "metric, a failed write).",
            format=_INT32,
            minimum=1,
        ),
    )
    advisory: bool = attrs.field(
        default=False,
        metadata=schema(
            "Advisory mode: the whole pipeline runs (metrics, recommendation, pacing, victim "
            "choice) and status.desiredReplicas, the Advisory condition and a WouldRescale "
            "Event say what the scaler would write, but nothing is written to the target or "
            "its pods. An advisory scaler is left out of the one-writer rule, so it can run "
            "beside an HPA, a KEDA ScaledObject or another LLMScaler on the same workload to "
            "trial a policy. The manager's --advisory flag makes every scaler advisory."
        ),
    )
    scale_down: ScaleDown = attrs.field(
        factory=ScaleDown,
        metadata=schema(
            "Scale-down damping and cache-aware victim selection.",
            crd_default={},
        ),
    )
    scale_up: ScaleUp = attrs.field(
        factory=ScaleUp,
        metadata=schema(
            "Scale-up damping; the default adds replicas as soon as the metrics ask for them.",
            crd_default={},
        ),
    )
    preemption: Preemption | None = attrs.field(
        default=None,
        metadata=schema(
            "Accepted but not implemented by the controller: setting it has no effect."
        ),
    )
    fallback: Fallback | None = attrs.field(
        default=None,
        metadata=schema(
            "Replica count to scale to after the signal has failed failureThreshold "
            "evaluations in a row (KEDA's fallback). Without it a failing signal holds the "
            "fleet where it is, and never scales it down."
        ),
    )
    schedules: tuple[Schedule, ...] = attrs.field(
        default=(),
        converter=_freeze_tuple,
        metadata=schema(
            "Weekly windows whose minReplicas/maxReplicas replace the spec's while they are "
            "open, evaluated at every sync on the manager's wall clock: a window's edge "
            "takes effect within one syncPeriodSeconds. Overlapping windows: the highest "
            "minimum and the highest maximum win.",
            max_items=16,
            extra=_LIST_MAP_BY_NAME,
        ),
    )

    @property
    def secret_headers(self) -> tuple[HeaderSource, ...]:
        """The ``serverHeadersFrom`` entries whose value lives in a Secret."""
        return tuple(h for h in self.server_headers_from if h.value_from is not None)

    @classmethod
    def from_dict(cls, obj: Any, *, path: str = "spec") -> LLMScalerSpec:
        """Parse the camelCase ``spec`` object strictly; raises SpecError with every problem."""
        return codec.decode(cls, obj, path=path)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, without unset optional fields."""
        return codec.encode(self)


@api_type(
    "One aspect of the scaler's state (metav1.Condition): AbleToScale, ScalingActive, "
    "ScalingLimited or Ready."
)
@attrs.frozen
class Condition:
    """A ``metav1.Condition``: one aspect of the scaler's state, for people and tools."""

    type: str = attrs.field(
        metadata=schema(
            "Condition type in CamelCase, for example Ready.",
            max_length=316,
            pattern=(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
            ),
        )
    )
    status: str = attrs.field(
        metadata=schema("True, False or Unknown.", enum=("True", "False", "Unknown"))
    )
    reason: str = attrs.field(
        metadata=schema(
            "Machine-readable CamelCase reason for the last transition.",
            min_length=1,
            max_length=1024,
            pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        )
    )
    message: str = attrs.field(
        metadata=schema(
            "Human-readable details, including what to change when something is wrong.",
            max_length=32768,
        )
    )
    last_transition_time: str = attrs.field(
        metadata=schema("When the status last changed (RFC 3339).", format="date-time")
    )
    observed_generation: int | None = attrs.field(
        default=None,
        metadata=schema(
            "metadata.generation the condition was computed from.", format="int64", minimum=0
        ),
    )

    @classmethod
    def from_dict(cls, obj: Any, *, path: str = "status.conditions[]") -> Condition:
        """Parse one condition strictly; raises SpecError."""
        return codec.decode(cls, obj, path=path)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form."""
        return codec.encode(self)


#: How many scale decisions ``status.recentDecisions`` keeps (newest first).
RECENT_DECISIONS_MAX = 5
#: Longest ``metric`` and ``reason`` of a ScaleDecision (longer text is cut, never rejected).
DECISION_TEXT_MAX = 1024


@api_type(
    "One replica change the controller wrote, with what drove it and what held it back. "
    "Recorded only when the replica count changed, in the same status write."
)
@attrs.frozen
class ScaleDecision:
    """One scale the controller made: ``kubectl get -o yaml`` answers "why did it scale?".

    The strings are free text on purpose, not enums: the status is the controller's to write,
    and an enum in the CRD would make a newer controller's status writes fail on a cluster
    whose CRD has not been upgraded yet.
    """

    time: str = attrs.field(
        metadata=schema("When the replica count was written (RFC 3339).", format="date-time")
    )
    from_replicas: int = attrs.field(
        metadata=schema(
            "The target's spec.replicas before the write.",
            json="from",
            format=_INT32,
            minimum=0,
        )
    )
    to_replicas: int = attrs.field(
        metadata=schema(
            "The spec.replicas written.",
            json="to",
            format=_INT32,
            minimum=0,
        )
    )
    desired: int | None = attrs.field(
        default=None,
        metadata=schema(
            "Where the fleet is heading (status.desiredReplicas at the time); differs from to "
            "when a step cap wrote only part of the change.",
            format=_INT32,
            minimum=0,
        ),
    )
    driver: str = attrs.field(
        default="",
        metadata=schema(
            "What asked for the change: Metric (the metric named in metric won the vote), "
            "DecisionServer (the Custom provider's answer) or Bounds (the fleet was outside "
            "minReplicas..maxReplicas).",
            max_length=64,
        ),
    )
    metric: str | None = attrs.field(
        default=None,
        metadata=schema(
            "With driver Metric: the name of the metric whose recommendation won.",
            max_length=DECISION_TEXT_MAX,
        ),
    )
    value: str | None = attrs.field(
        default=None,
        metadata=schema(
            "The driving figure: the metric's value, or the decision server's replica count "
            "(a decimal string, six significant digits).",
            max_length=64,
        ),
    )
    target: str | None = attrs.field(
        default=None,
        metadata=schema("With driver Metric: the metric's target.", max_length=64),
    )
    held_by: str | None = attrs.field(
        default=None,
        metadata=schema(
            "The pacing rule that held this write back from the recommendation, if any: "
            "stabilization, settle, step-cap or no-measurement (as in the SuccessfulRescale "
            "Event).",
            max_length=64,
        ),
    )
    reason: str = attrs.field(
        default="",
        metadata=schema(
            "The decision in words, as in the SuccessfulRescale Event, for example "
            "metric 'kv-cache': ceil(2 * 0.92 / 0.6) = 4.",
            max_length=DECISION_TEXT_MAX,
        ),
    )


@api_type("What the controller last observed and decided.")
@attrs.frozen
class LLMScalerStatus:
    """What the controller last observed and decided."""

    current_replicas: int | None = attrs.field(
        default=None,
        metadata=schema(
            "Ready replicas of the target at the last sync: the count the scaling ratio is "
            "computed from, not spec.replicas.",
            format=_INT32,
            minimum=0,
        ),
    )
    desired_replicas: int | None = attrs.field(
        default=None,
        metadata=schema(
            "Last recommendation after clamping to the bounds and stabilization (scale-down "
            "and scale-up windows), before the maxStepReplicas caps: the destination of a "
            "stepped scale-down or scale-up. In advisory mode, where the scaler would send "
            "the fleet from its actual size.",
            format=_INT32,
            minimum=0,
        ),
    )
    conditions: tuple[Condition, ...] = attrs.field(
        default=(),
        converter=_freeze_tuple,
        metadata=schema(
            "Current state: AbleToScale, ScalingActive, ScalingLimited and Ready, each with a "
            "reason and a message (plus Advisory in advisory mode, and Preemption while "
            "spec.preemption is set).",
            extra=(("x-kubernetes-list-map-keys", ["type"]), ("x-kubernetes-list-type", "map")),
        ),
    )
    observed_generation: int | None = attrs.field(
        default=None,
        metadata=schema(
            "metadata.generation of the spec the controller last acted on.",
            format="int64",
            minimum=0,
        ),
    )
    last_scale_time: str | None = attrs.field(
        default=None,
        metadata=schema(
            "When the controller last changed the target's replica count (RFC 3339).",
            format="date-time",
        ),
    )
    recent_decisions: tuple[ScaleDecision, ...] = attrs.field(
        default=(),
        converter=_freeze_tuple,
        metadata=schema(
            f"The last {RECENT_DECISIONS_MAX} replica changes, newest first: when, from and "
            "to, what drove each and what held it back. Written only together with a scale, "
            "so a steady scaler writes nothing.",
            max_items=RECENT_DECISIONS_MAX,
        ),
    )

    @classmethod
    def from_dict(cls, obj: Any, *, strict: bool = True, path: str = "status") -> LLMScalerStatus:
        """Parse the ``status`` object; a missing one is empty.

        With ``strict=False`` malformed fields (and malformed conditions) are dropped instead
        of raising: the controller owns the status and rewrites it, so a damaged status must
        never stop the scaler from working.
        """
        if obj is None:
            return cls()
        return codec.decode(cls, obj, path=path, strict=strict)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, without unset fields; suitable for a status write."""
        return codec.encode(self)

    def condition(self, type_: str) -> Condition | None:
        """The condition of the given type, if present."""
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None


@attrs.frozen
class LLMScaler:
    """A parsed LLMScaler object: identity from metadata, plus spec and status."""

    namespace: str
    name: str
    uid: str
    generation: int
    creation_timestamp: str
    spec: LLMScalerSpec
    status: LLMScalerStatus = attrs.field(factory=LLMScalerStatus)

    @property
    def key(self) -> str:
        """``namespace/name``, the workqueue key of this scaler."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_dict(cls, obj: Any) -> LLMScaler:
        """Parse a whole object as the API server returns it; raises SpecError.

        Metadata other than ``name`` is optional so manifests on disk parse too; objects read
        from the API server always carry namespace, uid, generation and creationTimestamp.
        The status is parsed leniently (see :meth:`LLMScalerStatus.from_dict`).
        """
        return codec.decode_resource(cls, obj, api_version=API_VERSION, kind=KIND)

    def to_dict(self) -> dict[str, Any]:
        """The whole object as JSON, with unset metadata left out."""
        return codec.encode_resource(self, api_version=API_VERSION, kind=KIND)
