"""The LLMScaler API (``autoscaling.modelsphere.dev/v1alpha1``) as immutable attrs types.

Reconcilers work on these instead of raw dicts so that every default and every cross-field
rule is applied in one place. The parser deliberately re-checks what the CRD schema checks:
an object may have been stored before the CRD gained a rule, or on a cluster that never ran
CEL, and the controller must not act on a spec the API server would reject today.

Decoding and encoding live in :mod:`._codec` and the field metadata (JSON names, defaults,
bounds, descriptions) in :mod:`.fields`; the CRD is generated from that same table, so the
schema and the parser cannot drift apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any

import attrs

GROUP = "autoscaling.modelsphere.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "LLMScaler"
LIST_KIND = "LLMScalerList"
PLURAL = "llmscalers"
SINGULAR = "llmscaler"

#: A metric target: a plain decimal number, optionally with a short exponent. The exponent is
#: capped at two digits and the whole string at 64 characters (see ``fields``) so any string
#: that matches converts to a finite double both in Python and in the API server's CEL.
TARGET_PATTERN = r"^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]{1,2})?$"
TARGET_MAX_LENGTH = 64
_TARGET_RE = re.compile(TARGET_PATTERN)

INT32_MAX = 2**31 - 1

#: An HTTP header name (an RFC 9110 token).
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
#: A key of a Secret's data (what ``kubectl create secret`` accepts).
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"


class SpecError(ValueError):
    """An LLMScaler (or part of one) that breaks the API's rules.

    ``problems`` lists every violation found, each as ``"<json path>: <what is wrong>"``, so a
    status condition or an error message can tell the user everything to fix in one round.
    """

    def __init__(self, problems: list[str] | tuple[str, ...]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("; ".join(self.problems) if self.problems else "invalid LLMScaler")


class MetricProvider(StrEnum):
    """Where the scaling signal comes from; the two are alternatives, never a fallback chain."""

    PROMETHEUS = "Prometheus"
    CUSTOM = "Custom"


class ScaleDownBehavior(StrEnum):
    """Whether a scale-down first marks the coldest pods with a low pod-deletion-cost."""

    CACHE_AWARE = "CacheAware"
    NONE = "None"


def parse_target(text: str, *, path: str = "spec.metrics[].target") -> float:
    """Parse a metric target strictly: a finite number greater than zero, written plainly.

    Percent signs, ``inf``/``nan``, underscores, hex and whitespace are refused rather than
    guessed at: a misread target silently multiplies or divides the fleet.
    """
    if not isinstance(text, str):
        raise SpecError([f"{path}: must be a string holding a number, got {type(text).__name__}"])
    if "%" in text:
        raise SpecError(
            [f"{path}: {text!r} has a % sign; write the number on the query's own scale"]
        )
    if len(text) > TARGET_MAX_LENGTH or not _TARGET_RE.search(text):
        raise SpecError([f"{path}: {text!r} is not a plain decimal number such as '0.8' or '80'"])
    value = float(text)
    if not math.isfinite(value) or value <= 0.0:
        raise SpecError([f"{path}: {text!r} must be a finite number greater than zero"])
    return value


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


@attrs.frozen
class TargetRef:
    """The workload to scale, always in the scaler's own namespace."""

    api_version: str
    kind: str
    name: str


@attrs.frozen
class MetricSpec:
    """One PromQL query and the per-replica value the fleet should sit at."""

    name: str
    query: str
    target: str

    @property
    def target_value(self) -> float:
        """The target as a number; raises SpecError when it is not finite and positive."""
        where = f"spec.metrics[name={self.name}].target" if self.name else "spec.metrics[].target"
        return parse_target(self.target, path=where)


@attrs.frozen
class CustomProvider:
    """Which decision of an external decision server drives this scaler."""

    service_id: str
    namespace: str | None = None
    path: str = "/decisions"


@attrs.frozen
class SecretKeySelector:
    """One key of a Secret in the scaler's own namespace."""

    name: str
    key: str


@attrs.frozen
class HeaderValueSource:
    """Where a header's value is read from instead of the LLMScaler itself."""

    secret_key_ref: SecretKeySelector


@attrs.frozen
class HeaderSource:
    """One header sent to serverAddress: a literal ``value`` or a ``valueFrom`` reference.

    Exactly one of the two is set (a CEL rule and the parser both enforce it).
    """

    name: str
    value: str | None = None
    value_from: HeaderValueSource | None = None


@attrs.frozen
class ScaleDown:
    """Scale-down damping (stabilization window, step cap) and cache-aware victim choice."""

    stabilization_window_seconds: int = 0
    max_step_replicas: int = 0
    behavior: ScaleDownBehavior = ScaleDownBehavior.CACHE_AWARE
    deletion_cost_query: str | None = None


@attrs.frozen
class Preemption:
    """Accepted for compatibility with the original API; the controller does not act on it."""

    enable: bool = False
    priority_class: str | None = None


@attrs.frozen
class LLMScalerSpec:
    """What the user asked for; defaults are those the CRD applies."""

    target_ref: TargetRef
    server_address: str
    min_replicas: int
    max_replicas: int
    metric_provider: MetricProvider = MetricProvider.PROMETHEUS
    custom_provider: CustomProvider | None = None
    server_headers: Mapping[str, str] = attrs.field(factory=FrozenMap, converter=_freeze_map)
    server_headers_from: tuple[HeaderSource, ...] = attrs.field(default=(), converter=_freeze_tuple)
    metrics: tuple[MetricSpec, ...] = attrs.field(default=(), converter=_freeze_tuple)
    sync_period_seconds: int = 15
    retry_period_seconds: int = 10
    scale_down: ScaleDown = attrs.field(factory=ScaleDown)
    preemption: Preemption | None = None

    @property
    def secret_headers(self) -> tuple[HeaderSource, ...]:
        """The ``serverHeadersFrom`` entries whose value lives in a Secret."""
        return tuple(h for h in self.server_headers_from if h.value_from is not None)

    @classmethod
    def from_dict(cls, obj: Any, *, path: str = "spec") -> LLMScalerSpec:
        """Parse the camelCase ``spec`` object strictly; raises SpecError with every problem."""
        from ._codec import decode_spec

        return decode_spec(obj, path=path)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, without unset optional fields."""
        from ._codec import encode

        return encode(self)


@attrs.frozen
class Condition:
    """A ``metav1.Condition``: one aspect of the scaler's state, for people and tools."""

    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str
    observed_generation: int | None = None

    @classmethod
    def from_dict(cls, obj: Any, *, path: str = "status.conditions[]") -> Condition:
        """Parse one condition strictly; raises SpecError."""
        from ._codec import decode_condition

        return decode_condition(obj, path=path)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form."""
        from ._codec import encode

        return encode(self)


@attrs.frozen
class LLMScalerStatus:
    """What the controller last observed and decided."""

    current_replicas: int | None = None
    desired_replicas: int | None = None
    conditions: tuple[Condition, ...] = attrs.field(default=(), converter=_freeze_tuple)
    observed_generation: int | None = None
    last_scale_time: str | None = None

    @classmethod
    def from_dict(cls, obj: Any, *, strict: bool = True, path: str = "status") -> LLMScalerStatus:
        """Parse the ``status`` object.

        With ``strict=False`` malformed fields (and malformed conditions) are dropped instead
        of raising: the controller owns the status and rewrites it, so a damaged status must
        never stop the scaler from working.
        """
        from ._codec import decode_status

        return decode_status(obj, strict=strict, path=path)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, without unset fields; suitable for a status write."""
        from ._codec import encode

        return encode(self)

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
        from ._codec import decode_scaler

        return decode_scaler(obj)

    def to_dict(self) -> dict[str, Any]:
        """The whole object as JSON, with unset metadata left out."""
        from ._codec import encode_scaler

        return encode_scaler(self)
