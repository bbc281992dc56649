"""The log line of a scaling decision: every number the decision used, in one place.

A decision that changes or holds something is worth a line at info; a steady sync says the same
thing every period, so it only shows at debug — and at scale (thousands of scalers) the line is
not even assembled unless debug is on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from llmscaler_runtime.api.v1alpha1 import LLMScaler, LLMScalerSpec
from llmscaler_runtime.log import get_logger
from llmscaler_runtime.scaling.types import Measurement, Plan, Recommendation, TargetView

__all__ = ["log_decision"]

_log = get_logger("llmscaler.scaling")
_stdlib_log = logging.getLogger("llmscaler.scaling")  # the same logger, for cheap level checks


def log_decision(
    scaler: LLMScaler,
    target: TargetView,
    measurement: Measurement,
    rec: Recommendation,
    plan: Plan,
    *,
    spec: LLMScalerSpec,
    schedules: Sequence[str] = (),
) -> None:
    """Log one sync's decision (see the module docstring for the level). ``spec`` carries the
    bounds in force when a schedule set them (``schedules``, the open windows)."""
    eventful = plan.changes or plan.held_by is not None or rec.replicas is None
    if not eventful and not _stdlib_log.isEnabledFor(logging.DEBUG):
        return  # the common case at scale; skip assembling a line nobody will see
    emit = _log.info if eventful else _log.debug
    emit(
        "scaling decision",
        scaler=scaler.key,
        target=f"{target.kind}/{target.name}",
        provider=measurement.provider,
        metrics=[
            {"name": r.name, "value": r.value, "target": r.target, "error": r.error}
            for r in measurement.readings
        ],
        decision=measurement.decision,
        spec_replicas=target.spec_replicas,
        ready_replicas=target.ready_replicas,
        terminating_replicas=target.terminating_replicas,
        baseline=rec.baseline,
        votes={v.name: v.replicas for v in rec.per_metric},
        tolerated=[v.name for v in rec.per_metric if v.tolerated],
        inactive=[v.name for v in rec.per_metric if v.inactive],
        tolerance_up=spec.scale_up.tolerance,
        tolerance_down=spec.scale_down.tolerance,
        unclamped=rec.unclamped,
        recommended=rec.replicas,
        min_replicas=spec.min_replicas,
        max_replicas=spec.max_replicas,
        stabilization_window_seconds=spec.scale_down.stabilization_window_seconds,
        max_step_replicas=spec.scale_down.max_step_replicas,
        scale_up_stabilization_window_seconds=spec.scale_up.stabilization_window_seconds,
        scale_up_max_step_replicas=spec.scale_up.max_step_replicas,
        desired=plan.desired,
        write=plan.replicas if plan.changes else None,
        held_by=plan.held_by,
        **({"schedules": list(schedules)} if schedules else {}),
    )
