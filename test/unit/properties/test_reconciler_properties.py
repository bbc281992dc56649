"""The reconciler decides what the pure pipeline decides, and reports it as the spec says.

The same random runs as ``test_pipeline_properties`` go through the real
``LLMScalerReconciler`` over the fake cluster of the scaling unit tests, in lockstep with the
pure :class:`~.pipeline.Pipeline`. A manager restart is a new reconciler (a new process: empty
history, parse cache and UID table) over the same cluster. After every sync: spec.replicas is
the pipeline's, ``status.currentReplicas`` is the target's ready count, ``status.desiredReplicas``
is the plan's destination (spec: after clamp and stabilization, before the step cap) and is
left alone when nothing was measured or decided, and the requeue is the retry period exactly
when the sync failed (README step 15).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, LLMScaler
from llmscaler_runtime.controller.types import Request
from llmscaler_runtime.scaling import LLMScalerReconciler, Steps

from ..scaling.fakes import (
    FakeCache,
    FakeClient,
    FakeClock,
    FakeCluster,
    FakeRecorder,
    StaticFetcher,
    deployment,
    internal_error,
    scaler_obj,
)
from ._tally import count, examples
from .pipeline import GENERATION, T0, Step, World, measurement, steps

SYNC, RETRY = 15, 4


@st.composite
def scalers(draw: st.DrawFn) -> dict[str, Any]:
    lo = draw(st.integers(0, 5))
    return scaler_obj(
        min_replicas=lo,
        max_replicas=draw(st.integers(lo, 10)),
        provider=draw(st.sampled_from(["Prometheus", "Custom"])),
        window=draw(st.sampled_from([0, 15, 60, 100])),
        step=draw(st.sampled_from([0, 1, 2])),
        behavior=draw(st.sampled_from(["CacheAware", "None"])),
        sync=SYNC,
        retry=RETRY,
        scale_up=draw(
            st.none()
            | st.fixed_dictionaries(
                {
                    "stabilizationWindowSeconds": st.sampled_from([0, 15, 40]),
                    "maxStepReplicas": st.sampled_from([0, 1, 3]),
                }
            )
        ),
    )


class Cluster:
    """The fake cluster, one scaler and its Deployment, driven step by step."""

    def __init__(self, obj: dict[str, Any], replicas: int) -> None:
        self.cluster = FakeCluster()
        self.cluster.auto_settle = False  # each step says what the fleet looks like
        self.clock = FakeClock(T0, wall=T0)
        self.fetcher = StaticFetcher()
        self.cluster.put(obj)
        self.cluster.put(deployment(replicas=replicas, generation=GENERATION))
        self.reconciler = self.new_reconciler()

    def new_reconciler(self) -> LLMScalerReconciler:
        return LLMScalerReconciler(
            FakeClient(self.cluster),
            FakeCache(self.cluster),
            FakeRecorder(),
            steps=Steps(fetcher=self.fetcher),
            clock=self.clock,
            align_syncs=False,
        )

    @property
    def target(self) -> dict[str, Any]:
        return self.cluster.obj("apps/v1", "Deployment", "ns", "web")

    @property
    def status(self) -> dict[str, Any]:
        return self.cluster.obj(API_VERSION, KIND, "ns", "s").get("status") or {}

    def sync(self, step: Step, spec: Any) -> float | None:
        self.clock.step(step.dt)
        if step.restart:
            self.reconciler = self.new_reconciler()
        replicas = self.target["spec"]["replicas"]
        status = self.target["status"]
        status.update(
            readyReplicas=max(0, replicas - step.ready_lag),
            updatedReplicas=replicas,
            replicas=replicas,
            observedGeneration=GENERATION - 1 if step.rollout else GENERATION,
        )
        status.pop("terminatingReplicas", None)
        if step.terminating is not None:
            status["terminatingReplicas"] = step.terminating
        self.cluster.fail.pop("apply", None)
        if step.write_fails:
            self.cluster.fail["apply"] = internal_error()
        self.fetcher.measurement = measurement(spec, step)
        return self.reconciler.reconcile(Request("ns", "s")).requeue_after


@settings(max_examples=examples(150))
@given(scalers(), st.integers(0, 12), st.lists(steps(one_in=3), min_size=1, max_size=25))
def test_the_reconciler_decides_and_reports_what_the_pipeline_decides(
    obj: dict[str, Any], replicas: int, plan: list[Step]
) -> None:
    count("property:reconciler")
    check_reconciler_run(obj, replicas, plan)


def check_reconciler_run(obj: dict[str, Any], replicas: int, plan: list[Step]) -> None:
    """Run the reconciler and the pure pipeline in lockstep and compare (module docstring)."""
    spec = LLMScaler.from_dict(obj).spec
    cluster = Cluster(obj, replicas)
    world = World(spec, replicas)
    desired: int | None = None
    for i, step in enumerate(plan):
        requeue = cluster.sync(step, spec)
        out = world.sync(step)
        where = f"sync {i} ({step})"
        assert cluster.target["spec"]["replicas"] == world.replicas, where
        status = cluster.status
        assert status.get("currentReplicas") == out.target.ready_replicas, where
        failed = False
        if out.plan is not None:
            failed = (out.plan.changes and not out.written) or out.recommended is None
            if out.recommended is not None or out.plan.changes:
                desired = out.plan.desired
        assert status.get("desiredReplicas") == desired, where
        assert requeue == (RETRY if failed else SYNC), where
