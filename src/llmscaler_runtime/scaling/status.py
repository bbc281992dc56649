"""Status: what the scaler reports, written only when it changed.

The status carries the figures a person checks first (ready replicas, the destination the
scaler is heading to) and HPA-style conditions, each with a reason and a message that says what
to do. A steady-state sync must cost zero API writes, so the new status is compared with the
current one and a condition's ``lastTransitionTime`` moves only when its status flips (a new
message alone does not count as a transition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import (
    RECENT_DECISIONS_MAX,
    Condition,
    LLMScalerStatus,
    ScaleDecision,
)
from llmscaler_runtime.kube.times import rfc3339
from llmscaler_runtime.scaling.reasons import ConditionReason

__all__ = [
    "ABLE_TO_SCALE",
    "ADVISORY",
    "PREEMPTION",
    "READY",
    "SCALING_ACTIVE",
    "SCALING_LIMITED",
    "ConditionDraft",
    "build_status",
    "prepend",
    "rfc3339",
    "status_patch",
]

ABLE_TO_SCALE = "AbleToScale"
SCALING_ACTIVE = "ScalingActive"
SCALING_LIMITED = "ScalingLimited"
READY = "Ready"
PREEMPTION = "Preemption"
ADVISORY = "Advisory"  # present exactly while the scaler is advisory (scaling.advisory)
CONDITION_ORDER = (ABLE_TO_SCALE, SCALING_ACTIVE, SCALING_LIMITED, READY, ADVISORY, PREEMPTION)


@attrs.frozen
class ConditionDraft:
    """A condition as a sync decides it, before transition times are merged in."""

    type: str
    status: bool | None  # None is "Unknown"
    reason: ConditionReason
    message: str

    @property
    def status_text(self) -> str:
        """``metav1.ConditionStatus`` spelling."""
        return "Unknown" if self.status is None else ("True" if self.status else "False")


def prepend(
    entry: ScaleDecision,
    previous: tuple[ScaleDecision, ...],
    *,
    keep: int = RECENT_DECISIONS_MAX,
) -> tuple[ScaleDecision, ...]:
    """``entry`` before the ``previous`` ones, cut to ``keep``: ``recentDecisions`` is newest
    first, so ``[0]`` is the last scale (the one a reader asks about, and a stable jsonpath
    for scripts)."""
    return (entry, *previous)[:keep]


def build_status(
    old: LLMScalerStatus,
    drafts: Sequence[ConditionDraft],
    *,
    now: float,
    generation: int,
    current_replicas: int | None,
    desired_replicas: int | None,
    scaled: bool,
    drop: Sequence[str] = (),
    decision: ScaleDecision | None = None,
) -> LLMScalerStatus:
    """The new status: ``drafts`` replace conditions of their type, others are kept.

    ``None`` figures keep the old value (a sync that could not measure something does not
    erase what was last known). ``drop`` removes conditions of those types (e.g. Preemption
    once the field is unset). ``decision`` is the record of the scale this sync made: it goes
    first in ``recentDecisions`` and its time becomes ``lastScaleTime``.
    """
    stamp = rfc3339(now)
    by_type: dict[str, Condition] = {c.type: c for c in old.conditions if c.type not in drop}
    for draft in drafts:
        previous = by_type.get(draft.type)
        transition = (
            previous.last_transition_time
            if previous is not None and previous.status == draft.status_text
            else stamp
        )
        by_type[draft.type] = Condition(
            type=draft.type,
            status=draft.status_text,
            reason=draft.reason,
            message=draft.message,
            last_transition_time=transition,
            observed_generation=generation,
        )
    ordered = sorted(
        by_type.values(),
        key=lambda c: (
            CONDITION_ORDER.index(c.type) if c.type in CONDITION_ORDER else len(CONDITION_ORDER),
            c.type,
        ),
    )
    return LLMScalerStatus(
        current_replicas=old.current_replicas if current_replicas is None else current_replicas,
        desired_replicas=old.desired_replicas if desired_replicas is None else desired_replicas,
        conditions=tuple(ordered),
        observed_generation=generation,
        last_scale_time=(
            decision.time if decision is not None else stamp if scaled else old.last_scale_time
        ),
        recent_decisions=(
            old.recent_decisions if decision is None else prepend(decision, old.recent_decisions)
        ),
    )


def status_patch(old: Mapping[str, Any] | None, new: LLMScalerStatus) -> dict[str, Any] | None:
    """A merge patch turning ``old`` (raw status) into ``new``; None when nothing changed.

    Keys present before but absent now are sent as null, because a merge patch otherwise
    leaves them in place.
    """
    new_dict = new.to_dict()
    old_dict = dict(old or {})
    if old_dict == new_dict:
        return None
    patch: dict[str, Any] = dict(new_dict)
    for key in old_dict:
        if key not in new_dict:
            patch[key] = None
    return {"status": patch}
