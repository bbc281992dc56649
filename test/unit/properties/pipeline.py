"""A fake-clock harness for the pure scaling pipeline, and an independent model of its rules.

:class:`Pipeline` composes the pure steps exactly as ``LLMScalerReconciler._sync`` does
(rollout guard, recommender, pacer, then the history a successful or failed write leaves), with
no API server and no clock but the ``now`` it is handed. :class:`World` plays the target: its
spec.replicas follow the writes, and each :class:`Step` of a run says how far the clock moves,
what the metric source answers, how many pods are ready or terminating, whether a rollout is in
progress, whether the write fails and whether the manager restarts first.

:class:`Model` re-states the README's rules ("How a replica count is decided", steps 6 to 11,
and "Scale-up pacing") over the full log of what happened, not over the pacer's compacted
history: the recommendations and writes inside the stabilization window, the recommendations
inside the scale-up window, the restart seed, and the settle guard's state.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from hypothesis import strategies as st

from llmscaler_runtime.api.v1alpha1 import (
    CustomProvider,
    LLMScalerSpec,
    MetricProvider,
    MetricSpec,
    ScaleDown,
    ScaleUp,
    TargetRef,
)
from llmscaler_runtime.scaling.guards import DeploymentRolloutGuard
from llmscaler_runtime.scaling.pacing import ScaleDownPacer
from llmscaler_runtime.scaling.recommend import HpaRecommender, clamp
from llmscaler_runtime.scaling.types import History, Measurement, MetricReading, Plan, TargetView

T0 = 1_800_000_000.0
GENERATION = 2


@attrs.frozen
class Step:
    """One sync's circumstances."""

    dt: float  # seconds since the previous sync
    decision: int | None  # Custom: the server's count; None: the server failed
    values: tuple[float | None, ...]  # Prometheus: one value per metric; None: skipped
    ready_lag: int = 0  # pods of spec.replicas not ready
    terminating: int | None = None  # None: the kind does not report terminatingReplicas
    rollout: bool = False
    write_fails: bool = False
    restart: bool = False  # the manager restarts (or a new leader takes over) before it


@attrs.frozen
class Outcome:
    """What one sync did: ``plan`` is None when the rollout guard deferred it."""

    target: TargetView
    recommended: int | None
    plan: Plan | None
    written: bool  # spec.replicas was written (and the write succeeded)


# --- strategies ----------------------------------------------------------------------------


@st.composite
def specs(draw: st.DrawFn) -> LLMScalerSpec:
    lo = draw(st.integers(0, 6))
    hi = draw(st.integers(lo, 12))
    window = draw(st.sampled_from([0, 0, 15, 30, 60, 120]) | st.integers(0, 200))
    cap = draw(st.sampled_from([0, 0, 1, 2, 3]))
    sync = draw(st.sampled_from([5, 15, 30]))
    ref = TargetRef("apps/v1", "Deployment", "web")
    scale_down = ScaleDown(stabilization_window_seconds=window, max_step_replicas=cap)
    scale_up = ScaleUp(
        stabilization_window_seconds=draw(st.sampled_from([0, 0, 0, 15, 45]) | st.integers(0, 90)),
        max_step_replicas=draw(st.sampled_from([0, 0, 0, 1, 2, 4])),
    )
    if draw(st.booleans()):
        return LLMScalerSpec(
            ref,
            "http://decisions",
            lo,
            hi,
            metric_provider=MetricProvider.CUSTOM,
            custom_provider=CustomProvider("svc"),
            sync_period_seconds=sync,
            scale_down=scale_down,
            scale_up=scale_up,
        )
    targets = draw(st.lists(st.sampled_from(["1", "0.8", "2", "50"]), min_size=1, max_size=2))
    metrics = tuple(MetricSpec(f"m{i}", f"q{i}", t) for i, t in enumerate(targets))
    return LLMScalerSpec(
        ref, "http://prometheus", lo, hi, metrics=metrics, sync_period_seconds=sync,
        scale_down=scale_down, scale_up=scale_up,
    )  # fmt: skip


_VALUES = st.none() | st.sampled_from([0.0, 0.1, 0.5, 0.8, 1.0, 1.5, 3.0, 60.0, 1e300])


def steps(*, restarts: bool = True, one_in: int = 8) -> st.SearchStrategy[Step]:
    """Syncs; a rollout, a failed write and a restart each happen about once in ``one_in``."""
    rare = st.sampled_from([False] * (one_in - 1) + [True])
    return st.builds(
        Step,
        dt=st.sampled_from([1.0, 5.0, 10.0, 15.0, 15.0, 30.0, 60.0]) | st.floats(0.5, 300.0),
        decision=st.none() | st.integers(0, 20) | st.sampled_from([0, 3, 3, 25]),
        values=st.lists(_VALUES, min_size=2, max_size=2).map(tuple),
        ready_lag=st.sampled_from([0, 0, 0, 0, 1, 2]),
        terminating=st.sampled_from([None, None, 0, 0, 0, 1, 2]),
        rollout=rare,
        write_fails=rare,
        restart=rare if restarts else st.just(False),
    )


# --- the harness ---------------------------------------------------------------------------


def target_view(replicas: int, step: Step) -> TargetView:
    """The Deployment as the pipeline sees it this sync."""
    rolling = step.rollout
    return TargetView(
        "apps/v1",
        "Deployment",
        "web",
        "ns",
        spec_replicas=replicas,
        ready_replicas=max(0, replicas - step.ready_lag),
        status_replicas=replicas,
        updated_replicas=replicas,
        observed_generation=GENERATION - 1 if rolling else GENERATION,
        generation=GENERATION,
        terminating_replicas=step.terminating,
    )


def measurement(spec: LLMScalerSpec, step: Step) -> Measurement:
    if spec.metric_provider == MetricProvider.CUSTOM:
        if step.decision is None:
            return Measurement("Custom", error="decision server down")
        return Measurement("Custom", decision=step.decision)
    readings = []
    for metric, value in zip(spec.metrics, step.values, strict=False):
        target = metric.target_value
        if value is None:
            readings.append(MetricReading(metric.name, metric.query, target, error="no series"))
        else:
            readings.append(MetricReading(metric.name, metric.query, target, value=value))
    return Measurement("Prometheus", tuple(readings))


class Pipeline:
    """The pure steps composed as the reconciler composes them, with the history it keeps."""

    def __init__(self, spec: LLMScalerSpec) -> None:
        self.spec = spec
        self.history: History | None = None
        self.guard = DeploymentRolloutGuard()
        self.recommender = HpaRecommender()
        self.pacer = ScaleDownPacer()

    def restart(self) -> None:
        self.history = None  # a new manager process starts with an empty HistoryStore

    def sync(
        self, target: TargetView, measured: Measurement, now: float, write_ok: bool
    ) -> Outcome:
        if not self.guard.check(target).proceed:
            return Outcome(target, None, None, False)
        rec = self.recommender.recommend(self.spec, target, measured)
        plan = self.pacer.pace(self.history, self.spec, target, rec, now)
        if plan.changes and not write_ok:
            self.history = plan.history_if_failed
            return Outcome(target, rec.replicas, plan, False)
        self.history = plan.history_if_written
        return Outcome(target, rec.replicas, plan, plan.changes)


class World:
    """The target and the clock; ``replicas`` is the Deployment's spec.replicas."""

    def __init__(self, spec: LLMScalerSpec, replicas: int) -> None:
        self.spec = spec
        self.replicas = replicas
        self.now = T0
        self.pipeline = Pipeline(spec)

    def sync(self, step: Step) -> Outcome:
        self.now += step.dt
        if step.restart:
            self.pipeline.restart()
        out = self.pipeline.sync(
            target_view(self.replicas, step), measurement(self.spec, step), self.now,
            not step.write_fails,
        )  # fmt: skip
        if out.written:
            assert out.plan is not None
            self.replicas = out.plan.replicas
        return out


# --- the model -----------------------------------------------------------------------------


@attrs.define
class Model:
    """The README's rules over the full log (see module docstring).

    ``events`` are ``(time, replicas)``: every recommendation a sync made, every successful
    write, and the restart seed (the target's spec.replicas at the first sync after a restart).
    ``recommended`` is the same without the writes: the scale-up window (like the HPA's) looks
    at recommendations only. After a restart both logs start again from the seed, since a new
    process knows nothing else.
    """

    spec: LLMScalerSpec
    events: list[tuple[float, int]] = attrs.field(factory=list)
    recommended: list[tuple[float, int]] = attrs.field(factory=list)
    stepping: bool = False  # a scale-down step was written and the fleet has not settled
    seeded: bool = False

    def restart(self) -> None:
        self.events, self.recommended, self.seeded = [], [], False

    def in_window(self, now: float) -> list[int]:
        window = self.spec.scale_down.stabilization_window_seconds
        return [r for (t, r) in self.events if now - t < window]

    def in_up_window(self, now: float) -> list[int]:
        window = self.spec.scale_up.stabilization_window_seconds
        return [r for (t, r) in self.recommended if now - t < window]

    def before(self, target: TargetView, now: float) -> None:
        """What a paced sync knows before it decides (seed, settle guard)."""
        if not self.seeded:
            self.events = [(now, target.spec_replicas)]
            self.recommended = [(now, target.spec_replicas)]
            self.stepping = bool(target.terminating_replicas)
            self.seeded = True
        settled = target.ready_replicas == target.spec_replicas and not target.terminating_replicas
        self.stepping = self.stepping and not settled

    def expected(self, current: int, rec: int | None, now: float) -> tuple[int, int]:
        """(desired, replicas) by the README's steps 6-11, from the log."""
        spec = self.spec
        if rec is None:
            bounded, _ = clamp(current, spec)
            return bounded, bounded
        # step 7: up at once, or only to the lowest recommendation in the scale-up window;
        # step 8: down only to the highest count in the window
        highest = max([rec, *self.in_window(now)])
        lowest = min([rec, *self.in_up_window(now)])
        if rec > current:
            desired = max(current, lowest)
        else:
            desired = rec if rec == current else min(current, highest)
        desired, _ = clamp(desired, spec)
        replicas = desired
        if desired < current:
            cap = spec.scale_down.max_step_replicas
            if self.stepping:
                replicas = current
            elif cap and current - desired > cap:
                replicas = current - cap
        up_cap = spec.scale_up.max_step_replicas
        if desired > current and up_cap:
            # the scale-up step cap, except for what lies below minReplicas
            replicas = min(desired, max(current + up_cap, spec.min_replicas))
        return desired, min(replicas, spec.max_replicas)

    def after(self, out: Outcome, now: float) -> None:
        assert out.plan is not None
        if out.recommended is not None:
            self.events.append((now, out.recommended))
            self.recommended.append((now, out.recommended))
        else:  # a sync that measured nothing holds the current count, and that counts
            self.events.append((now, out.plan.current))
            self.recommended.append((now, out.plan.current))
        if out.written:
            self.events.append((now, out.plan.replicas))
            self.stepping = out.plan.replicas < out.plan.current


def run(spec: LLMScalerSpec, replicas: int, plan: Sequence[Step]) -> list[Outcome]:
    """A whole run without checks (for comparisons between runs)."""
    world = World(spec, replicas)
    return [world.sync(step) for step in plan]
