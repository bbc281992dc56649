"""The composition root of the pipeline: which implementation serves each step.

:class:`Steps` bundles one object per step behind its one-method protocol, and
:func:`default_steps` builds the standard pipeline. A library user replaces a step with
``attrs.evolve(default_steps(), fetcher=...)`` and hands the result to ``scaling.setup`` (or to
the reconciler directly); nothing else changes. The what-if simulator does exactly that to run
the real recommendation, pacing, guard, victim and write code on a virtual cluster.
"""

from __future__ import annotations

import attrs

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.scaling.conflicts import ConflictResolver, OldestScalerWins
from llmscaler_runtime.scaling.guards import DeploymentRolloutGuard, RolloutGuard
from llmscaler_runtime.scaling.http import MetricHttpClient
from llmscaler_runtime.scaling.pacing import Pacer, ScaleDownPacer
from llmscaler_runtime.scaling.providers.base import CostSource, MetricFetcher, ProviderFetcher
from llmscaler_runtime.scaling.providers.decision import DecisionProvider
from llmscaler_runtime.scaling.providers.prometheus import PrometheusProvider
from llmscaler_runtime.scaling.recommend import HpaRecommender, Recommender
from llmscaler_runtime.scaling.victims import CacheAwareVictimSelector, VictimSelector
from llmscaler_runtime.scaling.write import ReplicaWriter, SsaReplicaWriter

__all__ = ["Steps", "default_steps"]


@attrs.frozen
class Steps:
    """The pipeline's steps; replace one with ``attrs.evolve(default_steps(), fetcher=...)``."""

    fetcher: MetricFetcher
    cost_source: CostSource | None = None
    guard: RolloutGuard = attrs.field(factory=DeploymentRolloutGuard)
    recommender: Recommender = attrs.field(factory=HpaRecommender)
    pacer: Pacer = attrs.field(factory=ScaleDownPacer)
    victims: VictimSelector = attrs.field(factory=CacheAwareVictimSelector)
    writer: ReplicaWriter = attrs.field(factory=SsaReplicaWriter)
    conflicts: ConflictResolver = attrs.field(factory=OldestScalerWins)


def default_steps(http: MetricHttpClient | None = None, *, clock: Clock = SYSTEM_CLOCK) -> Steps:
    """The standard pipeline, with both providers sharing one HTTP client.

    ``clock`` must be the reconciler's clock: its wall time picks the sync tick the
    providers' fetches are shared within, which is the grid the reconciler schedules syncs
    on. (A client built here gets the same clock for its budgets.)
    """
    http = http or MetricHttpClient(clock=clock)
    prometheus = PrometheusProvider(http, clock)
    return Steps(
        fetcher=ProviderFetcher(prometheus=prometheus, custom=DecisionProvider(http, clock)),
        cost_source=prometheus,
    )
