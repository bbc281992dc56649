"""Reuse the LLMScaler pipeline and replace a single step: keep spare replicas warm.

vLLM pods can take minutes to start. A fleet sized exactly to its signal has nothing in reserve
when a burst arrives, so this recommender asks for ``spare`` replicas more than the default
(HPA-ratio) recommender does. Everything else stays as it is: the metric fetch, clamping,
stabilization, the guards, cache-aware victims and the SSA write.
``test/integration/test_example_scaler.py`` runs it in a real Manager.
"""

from __future__ import annotations

from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec
from llmscaler_runtime.scaling import (
    Measurement,
    Recommendation,
    Steps,
    TargetView,
    default_steps,
    setup,
)
from llmscaler_runtime.scaling.recommend import HpaRecommender, Recommender, clamp


@attrs.frozen
class HeadroomRecommender:
    """The inner recommendation plus ``spare`` replicas, clamped to the scaler's bounds."""

    spare: int = 1
    inner: Recommender = attrs.field(factory=HpaRecommender)

    def recommend(
        self, spec: LLMScalerSpec, target: TargetView, measurement: Measurement
    ) -> Recommendation:
        rec = self.inner.recommend(spec, target, measurement)
        if rec.replicas is None:
            return rec  # nothing measurable: hold; never invent capacity from a failed read
        replicas, limited = clamp(rec.replicas + self.spare, spec)
        return attrs.evolve(
            rec, replicas=replicas, limited=limited, reason=f"{rec.reason} + {self.spare} spare"
        )


def headroom_steps(spare: int = 1) -> Steps:
    """The default pipeline with the recommender swapped."""
    return attrs.evolve(default_steps(), recommender=HeadroomRecommender(spare))


def setup_headroom(manager: Any, spare: int = 1) -> Any:
    """Register the LLMScaler controller, with headroom, on ``manager``."""
    return setup(manager, steps=headroom_steps(spare))
