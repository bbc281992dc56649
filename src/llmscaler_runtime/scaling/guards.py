"""Rollout guard: do not scale a Deployment while it is rolling out a new template.

Pods of a new template start with cold KV caches; they drag the metric average and would be
picked first as scale-down victims. Waiting until the rollout settles avoids both. Only
Deployments report the counters needed to tell; other kinds always proceed.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from llmscaler_runtime.scaling.types import TargetView

__all__ = ["DeploymentRolloutGuard", "GuardDecision", "RolloutGuard"]


@attrs.frozen
class GuardDecision:
    """``proceed`` False defers this sync; ``reason`` says what the rollout is waiting for."""

    proceed: bool
    reason: str = ""


class RolloutGuard(Protocol):
    """Decides whether the target is stable enough to scale this sync."""

    def check(self, target: TargetView) -> GuardDecision: ...


@attrs.frozen
class DeploymentRolloutGuard:
    """Defers while a Deployment is mid-rollout (see module docstring)."""

    def check(self, target: TargetView) -> GuardDecision:
        if target.kind != "Deployment" or target.group != "apps":
            return GuardDecision(True)
        if target.generation is not None and (target.observed_generation or 0) < target.generation:
            return GuardDecision(
                False,
                f"the Deployment controller has not observed generation {target.generation} "
                f"yet (observedGeneration {target.observed_generation or 0})",
            )
        updated = target.updated_replicas or 0
        if updated < target.spec_replicas:
            return GuardDecision(
                False,
                f"rollout in progress: {updated} of {target.spec_replicas} replicas run the "
                "new template",
            )
        if target.status_replicas is not None and target.status_replicas > updated:
            return GuardDecision(
                False,
                f"rollout in progress: {target.status_replicas - updated} old replicas are "
                "still running",
            )
        return GuardDecision(True)
