"""The reconciler end to end over fakes of the cache, client and event recorder."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND
from llmscaler_runtime.controller.types import Request, Result
from llmscaler_runtime.scaling import LLMScalerReconciler, Steps
from llmscaler_runtime.scaling.types import DELETION_COST_ANNOTATION
from llmscaler_runtime.scaling.victims import VICTIM_COST

from .fakes import (
    FakeCache,
    FakeClient,
    FakeClock,
    FakeCluster,
    FakeRecorder,
    StaticCostSource,
    StaticFetcher,
    deployment,
    internal_error,
    pod,
    scaler_obj,
    writes_of,
)

SYNC = Result(requeue_after=15.0)
RETRY = Result(requeue_after=10.0)


class World:
    def __init__(self) -> None:
        self.cluster = FakeCluster()
        self.clock = FakeClock()
        self.recorder = FakeRecorder()
        self.fetcher = StaticFetcher()
        self.costs = StaticCostSource()
        self.reconciler = self.new_reconciler()

    def new_reconciler(self, **kw: Any) -> LLMScalerReconciler:
        # Scheduling on the tick grid has tests of its own; the others expect a plain period.
        kw.setdefault("align_syncs", False)
        return LLMScalerReconciler(
            FakeClient(self.cluster),
            FakeCache(self.cluster),
            self.recorder,
            steps=Steps(fetcher=self.fetcher, cost_source=self.costs),
            clock=self.clock,
            **kw,
        )

    def sync(self, name: str = "s") -> Result:
        return self.reconciler.reconcile(Request("ns", name))

    def scaler(self, name: str = "s") -> dict[str, Any]:
        return self.cluster.obj(API_VERSION, KIND, "ns", name)

    def status(self, name: str = "s") -> dict[str, Any]:
        return self.scaler(name).get("status") or {}

    def condition(self, type_: str, name: str = "s") -> dict[str, Any]:
        for c in self.status(name).get("conditions", []):
            if c["type"] == type_:
                return dict(c)
        raise AssertionError(f"no {type_} condition in {self.status(name)}")

    def replicas(self, name: str = "web") -> int:
        return int(self.cluster.obj("apps/v1", "Deployment", "ns", name)["spec"]["replicas"])

    def applies(self) -> list[Any]:
        return list(writes_of(self.cluster, "apply"))

    def pod_patches(self) -> dict[str, Any]:
        return {
            c.name: c.body["metadata"]["annotations"][DELETION_COST_ANNOTATION]
            for c in writes_of(self.cluster, "patch", "Pod")
        }


@pytest.fixture
def w() -> World:
    return World()


def test_scale_up_applies_spec_replicas_alone_with_stable_field_manager_and_force(
    w: World,
) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    assert w.sync() == SYNC
    (call,) = w.applies()
    assert call.body == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"replicas": 6},
    }
    assert (call.field_manager, call.force) == ("llmscaler-operator", True)
    assert ("Normal", "SuccessfulRescale") in [(t, r) for t, r, _ in w.recorder.events]
    assert w.status()["desiredReplicas"] == 6 and w.status()["currentReplicas"] == 3
    assert w.status()["lastScaleTime"] and w.status()["observedGeneration"] == 1


def test_no_write_when_value_unchanged(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    assert w.sync() == SYNC
    assert w.applies() == []
    assert "lastScaleTime" not in w.status()


def test_steady_state_sync_makes_zero_api_writes(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()
    w.cluster.calls.clear()
    w.clock.step(15)
    assert w.sync() == SYNC
    assert w.cluster.calls == []
    assert w.recorder.events == []


def test_last_transition_time_moves_only_when_condition_status_flips(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()
    first = w.condition("ScalingLimited")
    w.clock.step(30)
    w.fetcher.set_value(1.1)  # new message, still within range: same status
    w.sync()
    assert w.condition("ScalingLimited")["lastTransitionTime"] == first["lastTransitionTime"]
    w.clock.step(30)
    w.fetcher.set_value(100.0)  # now limited by maxReplicas: status flips
    w.sync()
    limited = w.condition("ScalingLimited")
    assert limited["status"] == "True" and limited["reason"] == "TooManyReplicas"
    assert limited["lastTransitionTime"] != first["lastTransitionTime"]


def test_target_missing_requeues_after_retry_period_and_scales_once_it_appears(w: World) -> None:
    w.cluster.put(scaler_obj(retry=7))
    w.fetcher.set_value(2.0)
    assert w.sync() == Result(requeue_after=7.0)
    assert w.condition("AbleToScale")["reason"] == "TargetNotFound"
    assert "FailedGetTarget" in w.recorder.reasons()
    assert w.fetcher.calls == 0
    w.cluster.put(deployment(replicas=2))
    assert w.sync() == SYNC
    assert w.replicas() == 4
    assert w.condition("Ready")["status"] == "True"


def test_target_without_spec_replicas_is_reported(w: World) -> None:
    w.cluster.put(scaler_obj(target=("example.com/v1", "Thing", "t")))
    w.cluster.put(
        {
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {},
        }
    )
    assert w.sync() == RETRY
    assert w.condition("AbleToScale")["reason"] == "InvalidTarget"


def test_any_kind_with_replicas_is_scaled(w: World) -> None:
    w.cluster.put(scaler_obj(target=("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws")))
    w.cluster.put(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": "ns"},
            "spec": {"replicas": 2},
            "status": {"readyReplicas": 2},
        }
    )
    w.fetcher.set_value(3.0)
    assert w.sync() == SYNC
    assert w.applies()[0].body["spec"] == {"replicas": 6}


def test_invalid_spec_gets_condition_event_and_retry(w: World) -> None:
    obj = scaler_obj(retry=4)
    obj["spec"]["metrics"][0]["target"] = "80%"
    w.cluster.put(obj)
    w.cluster.put(deployment())
    assert w.sync() == Result(requeue_after=4.0)
    assert w.condition("ScalingActive")["reason"] == "InvalidSpec"
    assert "%" in w.condition("Ready")["message"]
    assert ("Warning", "InvalidSpec") in [(t, r) for t, r, _ in w.recorder.events]
    assert w.applies() == []


def test_all_metrics_failed_holds_and_requeues_after_retry_period(w: World) -> None:
    w.cluster.put(scaler_obj(min_replicas=1))
    w.cluster.put(deployment(replicas=5))
    w.fetcher.set_value(None, error="empty vector")
    assert w.sync() == RETRY
    assert w.applies() == []
    assert w.condition("ScalingActive")["reason"] == "FailedGetMetrics"
    assert "empty vector" in w.condition("ScalingActive")["message"]
    assert "FailedGetMetrics" in w.recorder.reasons()


def test_decision_failure_holds_with_its_own_reason(w: World) -> None:
    w.cluster.put(scaler_obj(provider="Custom"))
    w.cluster.put(deployment(replicas=5))
    w.fetcher.set_decision(None, error="HTTP 500")
    assert w.sync() == RETRY
    assert w.applies() == []
    assert w.condition("ScalingActive")["reason"] == "FailedGetDecision"
    assert "FailedGetDecision" in w.recorder.reasons()


def test_custom_decision_is_applied_as_an_absolute_count(w: World) -> None:
    w.cluster.put(scaler_obj(provider="Custom", max_replicas=20))
    w.cluster.put(deployment(replicas=5, ready=2))
    w.fetcher.set_decision(15)
    assert w.sync() == SYNC
    assert w.replicas() == 15
    assert w.condition("ScalingActive")["reason"] == "ValidDecisionFound"


def test_write_error_requeues_after_retry_period_not_backoff(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.cluster.fail["apply"] = internal_error()
    assert w.sync() == RETRY
    assert w.condition("AbleToScale")["reason"] == "FailedUpdateScale"
    assert "FailedRescale" in w.recorder.reasons()


def test_status_write_error_requeues_after_retry_period(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.cluster.fail["patch:LLMScaler:status"] = internal_error()
    assert w.sync() == RETRY


def test_unexpected_error_requeues_after_retry_period(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))

    def explode(*_a: Any) -> Any:
        raise RuntimeError("bug in a step")

    w.fetcher.fetch = explode  # type: ignore[method-assign,assignment]
    assert w.sync() == RETRY
    assert "SyncFailed" in w.recorder.reasons()
    assert w.condition("Ready")["status"] == "False"


def test_rollout_guard_defers_without_fetching_or_writing(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3, updated=1))
    w.fetcher.set_value(5.0)
    assert w.sync() == SYNC
    assert w.fetcher.calls == 0 and w.applies() == []
    assert w.condition("AbleToScale")["reason"] == "RolloutInProgress"


def test_current_replicas_reports_true_ready_count_during_first_rollout(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3, ready=0))
    w.fetcher.set_value(2.0)
    w.sync()
    assert w.status()["currentReplicas"] == 0
    assert w.replicas() == 6  # baseline was spec.replicas (3), not 0


def test_desired_replicas_is_reported_before_the_step_cap(w: World) -> None:
    w.cluster.put(scaler_obj(step=2))
    w.cluster.put(deployment(replicas=10))
    w.fetcher.set_value(0.1)
    w.sync()
    assert w.replicas() == 8
    assert w.status()["desiredReplicas"] == 1


def test_restart_does_not_skip_the_stabilization_window(w: World) -> None:
    w.cluster.put(scaler_obj(window=60))
    w.cluster.put(deployment(replicas=10))
    w.fetcher.set_value(10.0)
    w.sync()
    w.fetcher.set_value(0.1)
    w.clock.step(100)
    # a new manager (or leader) starts with no history
    w.reconciler = w.new_reconciler()
    w.sync()
    assert w.replicas() == 10
    w.clock.step(59)
    w.sync()
    assert w.replicas() == 10
    w.clock.step(1)
    w.sync()
    assert w.replicas() == 1


def test_a_wall_clock_step_forward_does_not_expire_the_stabilization_window(w: World) -> None:
    """NTP or a resumed VM moves the wall clock an hour ahead inside a 60 s window: the
    window is measured on the monotonic clock, so the fleet is not shrunk early."""
    w.cluster.put(scaler_obj(window=60))
    w.cluster.put(deployment(replicas=10))
    w.fetcher.set_value(10.0)
    w.sync()
    w.fetcher.set_value(0.1)
    w.clock.step(10)
    w.clock.step_wall(3600)
    w.sync()
    assert w.replicas() == 10
    w.clock.step(50)
    w.sync()
    assert w.replicas() == 1


def test_a_wall_clock_step_back_does_not_freeze_the_stabilization_window(w: World) -> None:
    w.cluster.put(scaler_obj(window=60))
    w.cluster.put(deployment(replicas=10))
    w.fetcher.set_value(10.0)
    w.sync()
    w.fetcher.set_value(0.1)
    w.clock.step_wall(-3600)
    w.clock.step(60)
    w.sync()
    assert w.replicas() == 1, "a step back of the wall clock held the fleet for an hour"


def test_deleted_scaler_history_is_forgotten(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()
    assert len(w.reconciler.history) == 1
    w.cluster.remove(API_VERSION, KIND, "ns", "s")
    assert w.sync() == Result()
    assert len(w.reconciler.history) == 0


def test_recreated_scaler_starts_with_fresh_history(w: World) -> None:
    w.cluster.put(scaler_obj(uid="one", window=600))
    w.cluster.put(deployment(replicas=10))
    w.fetcher.set_value(1.0)
    w.sync()
    w.cluster.put(scaler_obj(uid="two", window=600))
    w.sync()
    assert w.reconciler.history.get("one") is None
    assert w.reconciler.history.get("two") is not None


def test_older_scaler_keeps_control_of_a_shared_target(w: World) -> None:
    w.cluster.put(scaler_obj("young", created="2026-02-01T00:00:00Z"))
    w.cluster.put(scaler_obj("old", created="2026-01-01T00:00:00Z"))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    assert w.sync("young") == RETRY
    assert w.applies() == []
    active = w.condition("ScalingActive", "young")
    assert active["status"] == "False" and active["reason"] == "TargetOwnedByAnotherScaler"
    assert "'old'" in active["message"]
    assert w.sync("old") == SYNC
    assert w.replicas() == 6


def test_conflict_tie_is_broken_by_name(w: World) -> None:
    w.cluster.put(scaler_obj("b"))
    w.cluster.put(scaler_obj("a"))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.sync("b")
    assert w.applies() == []
    w.sync("a")
    assert w.replicas() == 6


def test_scalers_of_different_targets_do_not_conflict(w: World) -> None:
    w.cluster.put(scaler_obj("a", target=("apps/v1", "Deployment", "one")))
    w.cluster.put(scaler_obj("b", target=("apps/v1", "Deployment", "two")))
    w.cluster.put(deployment("one", replicas=1))
    w.cluster.put(deployment("two", replicas=1))
    w.fetcher.set_value(2.0)
    w.sync("a")
    w.sync("b")
    assert (w.replicas("one"), w.replicas("two")) == (2, 2)


def _fleet(w: World, **scaler_kw: Any) -> None:
    w.cluster.put(scaler_obj(**scaler_kw))
    w.cluster.put(deployment(replicas=4))
    for i, name in enumerate(["p1", "p2", "p3", "p4"]):
        w.cluster.put(pod(name, f"2026-01-01T00:00:0{i}Z"))
    w.cluster.put(pod("gone", "2026-01-01T00:00:09Z", terminating=True))
    w.cluster.put(pod("other", "2026-01-01T00:00:09Z", labels={"app": "other"}))


def test_scale_down_marks_newest_pods_before_writing_replicas(w: World) -> None:
    _fleet(w)
    w.fetcher.set_value(0.5)  # 4 -> 2
    w.sync()
    assert w.pod_patches() == {"p3": str(VICTIM_COST), "p4": str(VICTIM_COST)}
    verbs = [c.verb for c in w.cluster.calls if c.kind in ("Pod", "Deployment")]
    assert verbs == ["patch", "patch", "apply"]
    assert w.replicas() == 2


def test_no_cost_patches_on_scale_up_or_steady_state(w: World) -> None:
    _fleet(w)
    w.fetcher.set_value(1.0)
    w.sync()
    w.fetcher.set_value(2.0)
    w.sync()
    assert w.replicas() == 8 and w.pod_patches() == {}


def test_no_cost_patches_with_behavior_none(w: World) -> None:
    _fleet(w, behavior="None")
    w.fetcher.set_value(0.5)
    w.sync()
    assert w.replicas() == 2 and w.pod_patches() == {}


def test_no_cost_patches_for_non_deployment_targets(w: World) -> None:
    w.cluster.put(scaler_obj(target=("apps/v1", "StatefulSet", "web")))
    w.cluster.put(deployment(replicas=4, kind="StatefulSet"))
    w.cluster.put(pod("p1", "2026-01-01T00:00:00Z"))
    w.fetcher.set_value(0.5)
    w.sync()
    assert w.pod_patches() == {}
    assert w.cluster.obj("apps/v1", "StatefulSet", "ns", "web")["spec"]["replicas"] == 2


def test_deletion_cost_query_costs_are_written(w: World) -> None:
    _fleet(w, deletion_cost_query="kv * 100")
    w.costs.costs = {"p1": 90, "p2": 10, "p3": 55}
    w.fetcher.set_value(0.75)  # 4 -> 3
    w.sync()
    assert w.pod_patches() == {"p1": "90", "p2": "10", "p3": "55"}
    assert w.costs.calls == 1


def test_failed_deletion_cost_query_falls_back_to_newest_first(w: World) -> None:
    _fleet(w, deletion_cost_query="kv * 100")
    w.costs.error = "timed out"
    w.fetcher.set_value(0.75)
    w.sync()
    assert w.pod_patches() == {"p4": str(VICTIM_COST)}
    assert "FailedGetDeletionCost" in w.recorder.reasons()


def test_deletion_cost_query_gets_what_the_metric_fetch_left_of_the_period(w: World) -> None:
    _fleet(w, deletion_cost_query="kv * 100")
    w.costs.costs = {"p1": 90, "p2": 10, "p3": 55}
    w.fetcher.takes = lambda: w.clock.step(11)  # retries spent 11 s of the 15 s period
    w.fetcher.set_value(0.75)
    w.sync()
    assert w.costs.budgets == [pytest.approx(4.0)]
    assert w.pod_patches() == {"p1": "90", "p2": "10", "p3": "55"}


def test_no_deletion_cost_query_once_the_period_is_spent(w: World) -> None:
    _fleet(w, deletion_cost_query="kv * 100")
    w.costs.costs = {"p1": 90, "p2": 10, "p3": 55}
    w.fetcher.takes = lambda: w.clock.step(15)
    w.fetcher.set_value(0.75)  # 4 -> 3
    w.sync()
    assert w.costs.calls == 0
    assert w.pod_patches() == {"p4": str(VICTIM_COST)}  # newest first, as on a failed query
    assert "FailedGetDeletionCost" in w.recorder.reasons()
    assert w.replicas() == 3


def test_custom_provider_ignores_deletion_cost_query(w: World) -> None:
    _fleet(w, provider="Custom", deletion_cost_query="kv")
    w.fetcher.set_decision(3)
    w.sync()
    assert w.costs.calls == 0
    assert w.pod_patches() == {"p4": str(VICTIM_COST)}


def test_costs_from_an_earlier_decision_are_reset(w: World) -> None:
    _fleet(w, step=1)
    w.fetcher.set_value(0.5)
    w.sync()  # 4 -> 3: p4 marked
    assert w.pod_patches() == {"p4": str(VICTIM_COST)}
    # the ReplicaSet removed a different pod than hinted (hints are hints): p2 is gone
    w.cluster.remove("v1", "Pod", "ns", "p2")
    w.cluster.calls.clear()
    w.clock.step(15)
    w.sync()  # 3 -> 2: remove one pod; p4 is still the newest and keeps its cost
    assert w.pod_patches() == {}
    # p3 now carries a foreign cost; being the newest it is the victim and gets ours
    w.cluster.obj("v1", "Pod", "ns", "p3")["metadata"]["annotations"] = {
        DELETION_COST_ANNOTATION: "-7"
    }
    w.cluster.remove("v1", "Pod", "ns", "p4")
    w.cluster.obj("apps/v1", "Deployment", "ns", "web")["status"]["readyReplicas"] = 2
    w.cluster.calls.clear()
    w.clock.step(15)
    w.sync()  # 2 -> 1: p3 newest -> victim cost; p1 untouched
    assert w.pod_patches() == {"p3": str(VICTIM_COST)}


def test_preemption_is_reported_as_not_implemented(w: World) -> None:
    w.cluster.put(scaler_obj(preemption=True))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()
    cond = w.condition("Preemption")
    assert cond["status"] == "False" and cond["reason"] == "NotImplemented"
    assert "not implemented" in cond["message"]


def test_leader_check_false_writes_nothing(w: World) -> None:
    w.reconciler = w.new_reconciler(leader_check=lambda: False)
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    w.sync()
    assert w.cluster.calls == [] and w.fetcher.calls == 0


def test_decision_log_carries_every_number(w: World) -> None:
    w.cluster.put(scaler_obj(step=1))
    w.cluster.put(deployment(replicas=4, ready=3))
    w.fetcher.set_value(0.5)
    with structlog.testing.capture_logs() as logs:
        w.sync()
    (line,) = [entry for entry in logs if entry["event"] == "scaling decision"]
    assert line["ready_replicas"] == 3 and line["spec_replicas"] == 4
    assert line["baseline"] == 3 and line["votes"] == {"m": 2}
    assert line["metrics"][0]["value"] == 0.5 and line["metrics"][0]["target"] == 1.0
    assert (line["desired"], line["write"], line["held_by"]) == (2, 3, "step-cap")
    assert (line["min_replicas"], line["max_replicas"], line["max_step_replicas"]) == (1, 10, 1)


def test_missing_scaler_is_a_no_op(w: World) -> None:
    assert w.sync("nope") == Result()


def test_settle_guard_waits_between_scale_down_steps(w: World) -> None:
    w.cluster.auto_settle = False
    w.cluster.put(scaler_obj(step=2))
    w.cluster.put(deployment(replicas=10, terminating=0))
    w.fetcher.set_value(0.1)
    w.sync()
    assert w.replicas() == 8
    status = w.cluster.obj("apps/v1", "Deployment", "ns", "web")["status"]
    # terminating pods leave status.replicas at once and are counted apart
    status.update(readyReplicas=8, updatedReplicas=8, replicas=8, terminatingReplicas=2)
    w.clock.step(15)
    w.sync()
    assert w.replicas() == 8
    assert w.condition("AbleToScale")["reason"] == "WaitingForFleetToSettle"
    status.update(readyReplicas=7, terminatingReplicas=0)
    w.clock.step(15)
    w.sync()
    assert w.replicas() == 8
    status.update(readyReplicas=8)
    w.clock.step(15)
    w.sync()
    assert w.replicas() == 6


class _NoLws:
    def resource_for(self, api_version: str, kind: str) -> object:
        if kind == "LeaderWorkerSet":
            raise LookupError(f"no {kind}")
        return object()


def test_unserved_target_kind_is_reported_without_touching_the_cache(w: World) -> None:
    w.cluster.put(scaler_obj(target=("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "l")))
    client = FakeClient(w.cluster)
    client.mapper = _NoLws()  # type: ignore[attr-defined]
    asked: list[str] = []

    class SpyCache(FakeCache):
        def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):  # type: ignore[no-untyped-def]
            asked.append(kind)
            return super().get(api_version, kind, name, namespace)

    w.reconciler = LLMScalerReconciler(
        client,
        SpyCache(w.cluster),
        w.recorder,
        steps=Steps(fetcher=w.fetcher, cost_source=w.costs),
        clock=w.clock,
        align_syncs=False,
    )
    assert w.sync() == RETRY
    assert "LeaderWorkerSet" not in asked
    assert "does not serve kind LeaderWorkerSet" in w.condition("AbleToScale")["message"]


def test_target_is_read_directly_while_the_cache_cannot_serve_it(w: World) -> None:
    class WarmingCache(FakeCache):
        def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):  # type: ignore[no-untyped-def]
            if kind == "Deployment":
                raise TimeoutError("informer did not sync in time")
            return super().get(api_version, kind, name, namespace)

    w.reconciler = LLMScalerReconciler(
        FakeClient(w.cluster),
        WarmingCache(w.cluster),
        w.recorder,
        steps=Steps(fetcher=w.fetcher, cost_source=w.costs),
        clock=w.clock,
        align_syncs=False,
    )
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=2))
    w.fetcher.set_value(2.0)
    assert w.sync() == SYNC
    assert w.replicas() == 4


def test_scale_to_zero_marks_no_pods(w: World) -> None:
    _fleet(w, min_replicas=0)
    w.fetcher.set_value(0.0)
    w.sync()
    assert w.replicas() == 0 and w.pod_patches() == {}


def _over_real_http(server: Any, clock: FakeClock, **options: Any) -> tuple[Any, Any]:
    """A cluster and a reconciler whose providers query ``server`` over the real transport,
    all on the one ``clock``; Prometheus answers 2."""
    from llmscaler_runtime.scaling import default_steps
    from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient

    from .httpserver import prom_vector

    server.respond = lambda _r: prom_vector(({}, "2"))
    cluster = FakeCluster()
    reconciler = LLMScalerReconciler(
        FakeClient(cluster),
        FakeCache(cluster),
        FakeRecorder(),
        steps=default_steps(MetricHttpClient(HttpOptions(**options), clock=clock), clock=clock),
        clock=clock,
        align_syncs=False,
    )
    return cluster, reconciler


def _put_scaler_on(server: Any, cluster: Any, name: str, web: str, replicas: int) -> Any:
    """A scaler querying ``server`` and its own Deployment ``web``; returns the scaler."""
    obj = scaler_obj(name, target=("apps/v1", "Deployment", web))
    obj["spec"]["serverAddress"] = server.url
    cluster.put(obj)
    cluster.put(deployment(web, replicas=replicas))
    return obj


def test_many_scalers_with_one_query_hit_prometheus_once_per_tick(server: Any) -> None:
    clock = FakeClock(wall=1_800_000_000.0)  # wall clock on a tick of the 15 s grid
    cluster, reconciler = _over_real_http(server, clock, timeout=1, coalesce_ttl=1.0)
    for i in range(20):
        obj = _put_scaler_on(server, cluster, f"s{i}", f"web{i}", replicas=1)
    clock.step(_phase(obj))
    for i in range(20):
        assert reconciler.reconcile(Request("ns", f"s{i}")) == SYNC
    assert server.hits() == 1
    assert all(
        cluster.obj("apps/v1", "Deployment", "ns", f"web{i}")["spec"]["replicas"] == 2
        for i in range(20)
    )
    clock.step(15.0)  # next tick: one more query, shared again
    for i in range(20):
        reconciler.reconcile(Request("ns", f"s{i}"))
    assert server.hits() == 2


@pytest.mark.parametrize("provider", ["Prometheus", "Custom"])
def test_retries_within_a_tick_ask_a_failing_source_again(server: Any, provider: str) -> None:
    """Issue 12: syncPeriodSeconds 6, retryPeriodSeconds 1 and a source answering HTTP 500.
    Each retry must reach the server; re-reading the failure shared for the whole tick made
    retryPeriodSeconds meaningless for metric failures."""
    from .httpserver import Reply, prom_vector

    clock = FakeClock(wall=1_800_000_000.0)
    cluster, reconciler = _over_real_http(server, clock, timeout=1, max_attempts=1)
    obj = scaler_obj(provider=provider, sync=6, retry=1)
    obj["spec"]["serverAddress"] = server.url
    cluster.put(obj)
    cluster.put(deployment(replicas=2))
    server.respond = lambda _r: Reply(500, b'{"status": "error", "error": "boom"}')
    clock.step(_phase(obj))  # on this scaler's tick: the next five seconds are the same tick
    for retry in range(5):
        assert reconciler.reconcile(Request("ns", "s")) == Result(requeue_after=1.0)
        assert server.hits() == retry + 1
        clock.step(1.0)
    if provider == "Prometheus":  # the source recovers: the next retry scales at once
        server.respond = lambda _r: prom_vector(({}, "2"))
        assert reconciler.reconcile(Request("ns", "s")) == Result(requeue_after=6.0)
        assert cluster.obj("apps/v1", "Deployment", "ns", "web")["spec"]["replicas"] == 4


def test_lowered_max_is_applied_while_every_metric_fails(w: World) -> None:
    w.cluster.put(scaler_obj(max_replicas=4, step=1, window=300))
    w.cluster.put(deployment(replicas=9))
    w.fetcher.set_value(None, error="prometheus down")
    assert w.sync() == RETRY
    assert w.replicas() == 4
    assert "above maxReplicas (4)" in w.recorder.events[-1][2]
    able = w.condition("AbleToScale")
    assert able["reason"] == "HoldingReplicas" and "to 4 replicas" in able["message"]
    assert w.condition("ScalingActive")["reason"] == "FailedGetMetrics"
    assert w.status()["desiredReplicas"] == 4


def test_zero_max_pins_the_fleet_at_zero_even_without_a_signal(w: World) -> None:
    w.cluster.put(scaler_obj(min_replicas=0, max_replicas=0))
    w.cluster.put(deployment(replicas=2))
    w.fetcher.set_value(None, error="empty vector")
    w.sync()
    assert w.replicas() == 0
    w.cluster.calls.clear()
    w.fetcher.set_value(50.0)
    w.clock.step(15)
    w.sync()
    assert w.replicas() == 0 and w.applies() == []


def test_custom_provider_logs_that_it_skips_the_deletion_cost_query(w: World) -> None:
    _fleet(w, provider="Custom", deletion_cost_query="kv")
    w.fetcher.set_decision(3)
    with structlog.testing.capture_logs() as logs:
        w.sync()
    skipped = [e for e in logs if "deletionCostQuery ignored" in e["event"]]
    assert len(skipped) == 1 and skipped[0]["scaler"] == "ns/s"


def test_stale_cost_on_a_surviving_pod_is_removed_at_the_next_scale_down(w: World) -> None:
    _fleet(w)
    # p1 kept a low cost from an earlier decision (the ReplicaSet removed another pod then)
    w.cluster.obj("v1", "Pod", "ns", "p1")["metadata"]["annotations"] = {
        DELETION_COST_ANNOTATION: str(VICTIM_COST)
    }
    w.fetcher.set_value(0.75)  # 4 -> 3
    w.sync()
    assert w.pod_patches() == {"p1": None, "p4": str(VICTIM_COST)}
    assert w.replicas() == 3


def test_costs_from_the_query_replace_earlier_costs_and_unreported_pods_are_cleared(
    w: World,
) -> None:
    _fleet(w, deletion_cost_query="kv * 100")
    w.cluster.obj("v1", "Pod", "ns", "p4")["metadata"]["annotations"] = {
        DELETION_COST_ANNOTATION: str(VICTIM_COST)
    }
    w.costs.costs = {"p1": 90, "p2": 10, "p3": 55}  # p4 not reported this time
    w.fetcher.set_value(0.75)
    w.sync()
    assert w.pod_patches() == {"p1": "90", "p2": "10", "p3": "55", "p4": None}


@pytest.mark.parametrize("spec", ["oops", [1, 2], {"retryPeriodSeconds": True}])
def test_malformed_spec_is_reported_and_retried_at_the_default_period(w: World, spec: Any) -> None:
    # objects stored before the CRD had a schema may hold anything; never raise into backoff
    obj = scaler_obj()
    obj["spec"] = spec
    w.cluster.put(obj)
    assert w.sync() == RETRY
    assert w.condition("Ready")["reason"] == "InvalidSpec"


def test_conditions_say_what_happened_and_what_holds_the_fleet(w: World) -> None:
    w.cluster.put(scaler_obj(window=60, step=2, min_replicas=2, max_replicas=10))
    w.cluster.put(deployment(replicas=4))

    def reasons() -> tuple[str, ...]:
        return tuple(
            w.condition(t)["reason"]
            for t in ("AbleToScale", "ScalingActive", "ScalingLimited", "Ready")
        )

    w.fetcher.set_value(1.0)
    w.sync()
    assert reasons() == ("ReadyForNewScale", "ValidMetricFound", "DesiredWithinRange", "Scaling")
    w.fetcher.set_value(2.0)  # 4 -> 8 at once
    w.clock.step(15)
    w.sync()
    assert (
        reasons()[0] == "SucceededRescale"
        and "to 8 replicas" in w.condition("AbleToScale")["message"]
    )
    w.fetcher.set_value(0.1)  # wants 1 -> clamped to min 2, held by the window at 8
    w.clock.step(15)
    w.sync()
    assert reasons()[0] == "ScaleDownStabilized" and reasons()[2] == "TooFewReplicas"
    assert "lower minReplicas" in w.condition("ScalingLimited")["message"]
    assert w.replicas() == 8
    w.clock.step(60)
    w.sync()  # window passed: step-capped 8 -> 6, heading to 2
    assert w.replicas() == 6
    assert "heading to 2" in w.condition("AbleToScale")["message"]
    assert w.status()["desiredReplicas"] == 2


def test_a_repeated_failure_repeats_the_same_event_so_the_recorder_can_fold_it(
    server: Any,
) -> None:
    from llmscaler_runtime.scaling import default_steps
    from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient

    from .httpserver import prom_vector

    server.respond = lambda _r: prom_vector(({"pod": "a"}, "1"), ({"pod": "b"}, "2"))
    cluster = FakeCluster()
    recorder = FakeRecorder()
    clock = FakeClock()
    http = MetricHttpClient(HttpOptions(timeout=1, max_attempts=1, coalesce_ttl=0), clock=clock)
    reconciler = LLMScalerReconciler(
        FakeClient(cluster),
        FakeCache(cluster),
        recorder,
        steps=default_steps(http, clock=clock),
        clock=clock,
    )
    obj = scaler_obj()
    obj["spec"]["serverAddress"] = server.url
    cluster.put(obj)
    cluster.put(deployment(replicas=3))
    for _ in range(3):
        assert reconciler.reconcile(Request("ns", "s")) == RETRY
        clock.step(10)
    assert len(recorder.events) == 3 and len(set(recorder.events)) == 1
    (type_, reason, message) = recorder.events[0]
    assert (type_, reason) == ("Warning", "FailedGetMetrics")
    assert '{pod="a"}' in message and '{pod="b"}' in message


def test_successful_sync_requeues_to_the_next_tick_of_the_period_grid(w: World) -> None:
    """Aligned ticks are what let identical queries from many scalers coalesce."""
    from llmscaler_runtime.api.v1alpha1 import LLMScaler
    from llmscaler_runtime.scaling.schedule import phase_of

    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=2))
    w.fetcher.set_value(1.0)
    phase = phase_of(LLMScaler.from_dict(w.scaler()).spec)
    w.clock.step(1_800_000_000.0 + phase + 4.0 - w.clock.now())  # 4 s past one of its ticks
    aligned = w.new_reconciler(align_syncs=True)
    delay = aligned.reconcile(Request("ns", "s")).requeue_after
    assert delay == pytest.approx(11.0)
    assert w.sync() == Result(requeue_after=15.0)  # alignment off: a plain period


def test_failed_sync_still_uses_the_plain_retry_period(w: World) -> None:
    w.cluster.put(scaler_obj())
    w.clock.step(4.0)
    assert w.sync() == RETRY  # target missing


def test_scalers_sharing_a_query_coalesce_across_a_tick_burst(server: Any) -> None:
    """20 scalers evaluated over several seconds of one tick send Prometheus one query; the
    next tick fetches afresh."""
    clock = FakeClock(wall=1_800_000_000.0)  # on a tick of the 15 s grid
    cluster, reconciler = _over_real_http(server, clock, timeout=1)
    for i in range(20):
        obj = _put_scaler_on(server, cluster, f"s{i}", f"web{i}", replicas=2)
    tick = clock.now() + _phase(obj)  # scalers asking the same query share this phase
    for i in range(20):
        clock.step(tick + i * 0.6 - clock.now())  # a 12 s burst, far beyond the default 1 s TTL
        reconciler.reconcile(Request("ns", f"s{i}"))
    assert server.hits() == 1
    clock.step(tick + 15.0 - clock.now())  # the next tick fetches afresh
    for i in range(20):
        reconciler.reconcile(Request("ns", f"s{i}"))
    assert server.hits() == 2


class _IndexedCache(FakeCache):
    """A cache with the target index (as ``setup`` registers it), refusing namespace scans."""

    def by_index(self, api_version: str, kind: str, index: str, value: str) -> list[Any]:
        from llmscaler_runtime.scaling.conflicts import TARGET_INDEX, target_index

        assert index == TARGET_INDEX
        return [o for o in FakeCache.list(self, api_version, kind) if target_index(o) == [value]]

    def list(self, api_version: str, kind: str, *args: Any, **kwargs: Any) -> list[Any]:
        assert kind != KIND, "the one-writer check scanned the namespace instead of the index"
        return FakeCache.list(self, api_version, kind, *args, **kwargs)


def test_one_writer_check_reads_the_target_index_not_the_namespace(w: World) -> None:
    w.reconciler = LLMScalerReconciler(
        FakeClient(w.cluster),
        _IndexedCache(w.cluster),
        w.recorder,
        steps=Steps(fetcher=w.fetcher, cost_source=w.costs),
        clock=w.clock,
        align_syncs=False,
    )
    w.cluster.put(scaler_obj("young", created="2026-02-01T00:00:00Z"))
    w.cluster.put(scaler_obj("old", created="2026-01-01T00:00:00Z"))
    w.cluster.put(scaler_obj("other", target=("apps/v1", "Deployment", "api")))
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(2.0)
    assert w.sync("young") == RETRY
    assert "'old'" in w.condition("ScalingActive", "young")["message"]
    assert w.sync("old") == SYNC


def test_target_index_key_names_namespace_group_kind_and_name() -> None:
    from llmscaler_runtime.scaling.conflicts import target_index

    obj = scaler_obj("s", target=("apps/v1", "Deployment", "web"))
    assert target_index(obj) == ["ns/apps/Deployment/web"]
    assert target_index({"metadata": {"namespace": "ns"}, "spec": {}}) == []


def test_scaler_is_parsed_once_per_resource_version(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmscaler_runtime.scaling import reconciler as module

    parsed: list[str] = []
    real = module.LLMScaler.from_dict

    def counting(obj: dict[str, Any]) -> Any:
        parsed.append(obj["metadata"]["resourceVersion"])
        return real(obj)

    monkeypatch.setattr(module.LLMScaler, "from_dict", staticmethod(counting))
    w.cluster.put(scaler_obj())
    created = w.scaler()["metadata"]["resourceVersion"]
    w.cluster.put(deployment(replicas=2))
    w.fetcher.set_value(1.0)
    w.sync()  # the first sync writes the status: a new resourceVersion
    written = w.scaler()["metadata"]["resourceVersion"]
    w.sync()
    w.sync()
    assert parsed == [created, written]
    w.cluster.bump(w.scaler())  # the object changed
    w.sync()
    assert parsed == [created, written, w.scaler()["metadata"]["resourceVersion"]]


def test_steady_state_skips_re_encoding_the_status(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmscaler_runtime.scaling import reconciler as module

    diffs: list[Any] = []
    real = module.status_patch

    def counting(old: Any, new: Any) -> Any:
        diffs.append(old)
        return real(old, new)

    monkeypatch.setattr(module, "status_patch", counting)
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=2))
    w.fetcher.set_value(1.0)
    w.sync()
    assert len(diffs) == 1  # the first status is written
    w.clock.step(15)
    w.sync()
    w.clock.step(15)
    w.sync()
    assert len(diffs) == 1 and w.cluster.calls[-1].subresource == "status"


def test_a_status_field_the_operator_does_not_own_is_still_cleared(w: World) -> None:
    # The fast path compares typed statuses; a raw status holding more than the typed form
    # (here a stray key) must still get the diff that removes it.
    w.cluster.put(scaler_obj())
    w.cluster.put(deployment(replicas=2))
    w.fetcher.set_value(1.0)
    w.sync()
    w.scaler()["status"]["stray"] = "x"
    w.cluster.bump(w.scaler())
    w.cluster.calls.clear()
    w.clock.step(15)
    w.sync()
    (call,) = writes_of(w.cluster, "patch", KIND)
    assert call.subresource == "status" and call.body["status"]["stray"] is None
    assert "stray" not in w.status()


def test_an_off_grid_fetch_is_not_reused_by_the_next_tick(server: Any) -> None:
    """A sync outside the grid (a new or edited scaler) must not hand its answer to the tick
    that follows a few seconds later: that tick measures afresh."""
    clock = FakeClock(
        wall=1_800_000_007.6
    )  # half a period into a tick (shifted by the phase below)
    cluster, reconciler = _over_real_http(server, clock, timeout=1)
    obj = _put_scaler_on(server, cluster, "s", "web", replicas=2)
    clock.step(_phase(obj))
    reconciler.reconcile(Request("ns", "s"))
    clock.step(7.4)  # the scaler's next tick
    reconciler.reconcile(Request("ns", "s"))
    assert server.hits() == 2


def _phase(obj: dict[str, Any]) -> float:
    from llmscaler_runtime.api.v1alpha1 import LLMScaler
    from llmscaler_runtime.scaling.schedule import phase_of

    return phase_of(LLMScaler.from_dict(obj).spec)


# -- sync outcomes as a metric -----------------------------------------------------------------


class RecordingSyncMetrics:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def observe_sync(self, result: str, reason: str) -> None:
        self.seen.append((result, str(reason)))


def test_every_sync_outcome_is_counted_with_the_reason_its_status_gives() -> None:
    """reconcile catches every failure (backoff would stall the scaler), so the controller's
    error counter never sees one; the sync metric must."""
    w = World()
    metrics = RecordingSyncMetrics()
    w.reconciler = w.new_reconciler(metrics=metrics)
    w.cluster.put(scaler_obj())
    w.sync()  # no target yet
    w.cluster.put(deployment(replicas=3))
    w.fetcher.set_value(1.0)
    w.sync()  # measured and steady
    w.fetcher.set_value(None, error="connection refused")
    w.sync()  # nothing measured: held
    bad = scaler_obj("bad")
    bad["spec"]["minReplicas"] = -1
    w.cluster.put(bad)
    w.sync("bad")
    assert metrics.seen == [
        ("retry", "TargetNotFound"),
        ("success", "Scaling"),
        ("retry", "FailedGetMetrics"),
        ("retry", "InvalidSpec"),
    ]


def test_the_prometheus_sync_counter_starts_every_reason_at_zero() -> None:
    from prometheus_client import CollectorRegistry

    from llmscaler_runtime.scaling.metrics import PrometheusSyncMetrics
    from llmscaler_runtime.scaling.reasons import ConditionReason

    registry = CollectorRegistry()
    m = PrometheusSyncMetrics(registry)
    m.observe_sync("retry", ConditionReason.FAILED_GET_METRICS)
    value = registry.get_sample_value
    labels = {"result": "retry", "reason": "FailedGetMetrics"}
    assert value("llmscaler_scaler_syncs_total", labels) == 1.0
    assert value("llmscaler_scaler_syncs_total", {"result": "retry", "reason": "SyncFailed"}) == 0
    assert (
        value("llmscaler_scaler_syncs_total", {"result": "retry", "reason": "FailedUpdateStatus"})
        == 0
    )
