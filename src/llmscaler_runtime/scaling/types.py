"""Frozen values that flow between the steps of one LLMScaler sync.

Each step of the pipeline takes and returns these plain values, never Kubernetes objects or
sockets, so a step can be tested alone and replaced by a library user without touching the rest
(see ``reconciler.py`` for the order they run in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

__all__ = [
    "DELETION_COST_ANNOTATION",
    "INT32_MAX",
    "INT32_MIN",
    "HeldBy",
    "History",
    "Limit",
    "Measurement",
    "MetricReading",
    "MetricRecommendation",
    "Plan",
    "PodCost",
    "PodInfo",
    "Recommendation",
    "TargetView",
]

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"

#: Which bound cut a recommendation (also the ScalingLimited condition's reason).
Limit = Literal["TooFewReplicas", "TooManyReplicas"]
#: Which pacing rule held this sync's write back from the recommendation. The unprefixed
#: ones pace a scale-down; the ``scale-up-`` ones (off unless ``spec.scaleUp`` sets them) a
#: scale-up.
HeldBy = Literal[
    "stabilization",
    "settle",
    "step-cap",
    "no-measurement",
    "scale-up-stabilization",
    "scale-up-step-cap",
]


@attrs.frozen
class TargetView:
    """What the pipeline needs to know about the scaled workload, whatever its kind.

    Fields a kind does not report are ``None`` (a StatefulSet has no ``terminatingReplicas``;
    a CRD may report nothing but ``readyReplicas``), so a rule can tell "zero" from "unknown".
    """

    api_version: str
    kind: str
    name: str
    namespace: str
    spec_replicas: int
    ready_replicas: int
    status_replicas: int | None = None
    updated_replicas: int | None = None
    observed_generation: int | None = None
    generation: int | None = None
    terminating_replicas: int | None = None
    selector: Mapping[str, Any] | None = None

    @property
    def group(self) -> str:
        """API group of the target ("" for the core group); the version does not identify it."""
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""


@attrs.frozen
class MetricReading:
    """One metric's outcome: a value, or the reason it was skipped (never both)."""

    name: str
    query: str
    target: float
    value: float | None = None
    error: str | None = None
    #: the metric's activationThreshold: at zero replicas, values up to it do not wake the fleet
    activation_threshold: float | None = None


@attrs.frozen
class Measurement:
    """The result of fetching the scaling signal for one sync.

    Under the Prometheus provider ``readings`` holds one entry per metric; under the Custom
    provider ``decision`` is the server's absolute replica count. ``error`` explains a failure
    of the whole fetch (decision server down, unparseable reply).
    """

    provider: str
    readings: tuple[MetricReading, ...] = ()
    decision: int | None = None
    error: str | None = None

    @property
    def usable(self) -> bool:
        """True when at least one figure can drive a recommendation."""
        return self.decision is not None or any(r.value is not None for r in self.readings)

    @property
    def errors(self) -> tuple[str, ...]:
        """Every failure, one line each, for events and conditions."""
        out = [f"{r.name or r.query}: {r.error}" for r in self.readings if r.error is not None]
        if self.error is not None:
            out.insert(0, self.error)
        return tuple(out)


@attrs.frozen
class MetricRecommendation:
    """How one metric voted, kept so logs can show every number a decision used."""

    name: str
    value: float
    target: float
    replicas: int
    #: the ratio was inside the tolerance band, so the vote is the current count
    tolerated: bool = False
    #: at zero replicas the value was not above the activationThreshold, so the vote is 0
    inactive: bool = False


@attrs.frozen
class Recommendation:
    """The replica count the signal asks for, before stabilization.

    ``replicas`` is ``None`` when nothing could be measured: the fleet is then held where it is.
    ``unclamped`` is the raw figure (saturated at maxReplicas + 1 when it overflows) so the
    ScalingLimited condition can say which bound was hit.
    """

    replicas: int | None
    unclamped: int | None
    baseline: int
    limited: Limit | None = None
    per_metric: tuple[MetricRecommendation, ...] = ()
    reason: str = ""


@attrs.frozen
class History:
    """Per-scaler memory kept between syncs: recent recommendations and step-walk state.

    ``samples`` are ``(time, replicas)`` pairs for the scale-down window (only those that can
    still be its maximum). ``stepping_down`` is set after this scaler wrote a scale-down and
    cleared once the fleet settled, which is when the settle guard holds. ``up_samples`` are
    the pairs that can still be the scale-up window's minimum; empty while that window is off.
    Times are monotonic seconds.
    """

    samples: tuple[tuple[float, int], ...] = ()
    stepping_down: bool = False
    up_samples: tuple[tuple[float, int], ...] = ()


@attrs.frozen
class Plan:
    """What pacing decided: the destination, the step to write now, and why it may be held.

    ``desired`` is after clamping and stabilization but before the step cap (it is what status
    reports); ``replicas`` is the value to write this sync. The reconciler stores
    ``history_if_written`` when the write succeeds (or nothing needed writing) and
    ``history_if_failed`` when the write fails, so a failed write never starts a hold.
    """

    current: int
    desired: int
    replicas: int
    held_by: HeldBy | None
    history_if_written: History
    history_if_failed: History

    @property
    def changes(self) -> bool:
        """True when this sync has to write spec.replicas."""
        return self.replicas != self.current

    @property
    def scale_down(self) -> bool:
        """True when this sync removes replicas."""
        return self.replicas < self.current


@attrs.frozen
class PodInfo:
    """A pod of the target as victim selection sees it."""

    name: str
    creation_timestamp: str
    deletion_cost: str | None = None  # current annotation value, verbatim


@attrs.frozen
class PodCost:
    """A change to one pod's deletion-cost annotation; ``cost=None`` removes it."""

    pod: str
    cost: int | None
