"""Advisory mode: the whole pipeline runs, nothing is written to the target or its pods.

This is how a team trials a policy on real traffic before it touches real GPUs: beside the
HPA or KEDA ScaledObject that scales the workload today (or beside another LLMScaler), an
advisory scaler measures, recommends, paces and picks its scale-down victims exactly as a real
one, and says what it would have written: ``status.desiredReplicas``, the ``Advisory``
condition, a ``WouldRescale`` Event, and a log line with the pod-deletion-costs it would have
set. HPA and KEDA have no such mode (NVIDIA Dynamo's planner calls it advisory; llm-d a
"non-actuating" phase).

Two switches, either enough: ``spec.advisory`` per scaler and the manager's ``--advisory``.

**Why a condition type of its own.** AbleToScale=False with reason ``Advisory`` says the scaler
is not writing, by design; the advice itself lives in an ``Advisory`` condition present exactly
while the scaler is advisory (like Preemption), so ``kubectl wait --for=condition=Advisory``
and alerts select advisory scalers without parsing messages, and its reason tells advice to
change the fleet (``WouldRescale``) from advice to keep it (``WouldHold``). Its message holds
only replica counts, no metric values, so a steady advisory scaler writes nothing, as a steady
real one does; the Event, with the metric values that drove the advice, is recorded when the
advice changes (the recorder aggregates repeats when it flips back and forth).

**What desiredReplicas means here.** The target's replicas do not follow the advice, so every
recommendation is computed from the real fleet. The pacing history therefore records each
recommendation but never a write (``Plan.history_if_failed``, the history of a sync whose
write did not happen): stabilization holds as it would for a real scaler whose write never
landed, and the advice is stable while the traffic is, instead of walking down a fleet that
never shrank. desiredReplicas is where the scaler would send the fleet from where it actually
is; it is not a simulation of the fleet the scaler would have produced over time. That is what
the what-if simulator (``llmscaler-sim``) answers.

**The one-writer rule.** An advisory scaler writes nothing, so it never blocks a real scaler
(rivals that are advisory are left out of the check) and is never blocked itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmscaler_runtime.api.v1alpha1 import LLMScalerStatus
from llmscaler_runtime.scaling.status import ADVISORY, ConditionDraft
from llmscaler_runtime.scaling.types import History, Plan

__all__ = ["advice_changed", "history_after", "is_advisory", "writers"]


def is_advisory(obj: Mapping[str, Any]) -> bool:
    """``spec.advisory`` of a raw scaler (the manager's ``--advisory`` is the reconciler's)."""
    spec = obj.get("spec")
    return isinstance(spec, Mapping) and spec.get("advisory") is True


def writers(scalers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scalers that can write their target: the rivals the one-writer rule weighs."""
    return [s for s in scalers if not is_advisory(s)]


def advice_changed(status: LLMScalerStatus, advice: ConditionDraft) -> bool:
    """True when ``advice`` says something the status does not say yet: the time to record the
    Event (the advice of every sync in between is the same)."""
    old = status.condition(ADVISORY)
    return old is None or old.reason != advice.reason or old.message != advice.message


def history_after(plan: Plan) -> History:
    """The pacing history an advisory sync keeps: its recommendation, never a write."""
    return plan.history_if_failed
