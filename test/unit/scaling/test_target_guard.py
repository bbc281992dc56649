"""Target reading (any kind) and the Deployment rollout guard."""

from __future__ import annotations

import pytest

from llmscaler_runtime.scaling.guards import DeploymentRolloutGuard
from llmscaler_runtime.scaling.target import TargetError, target_view

from .fakes import deployment


def test_any_kind_with_replicas_and_ready_replicas_is_a_target() -> None:
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws", "namespace": "ns"},
        "spec": {"replicas": 2},
        "status": {"readyReplicas": 1},
    }
    v = target_view(lws)
    assert (v.kind, v.spec_replicas, v.ready_replicas, v.group) == (
        "LeaderWorkerSet",
        2,
        1,
        "leaderworkerset.x-k8s.io",
    )
    assert v.terminating_replicas is None and v.updated_replicas is None


def test_omitted_ready_replicas_reads_as_zero() -> None:
    v = target_view(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "a"},
            "spec": {"replicas": 3},
            "status": {},
        }
    )
    assert v.ready_replicas == 0


@pytest.mark.parametrize(
    "spec",
    [None, {}, {"replicas": "3"}, {"replicas": True}, {"replicas": -1}, {"replicas": 2.0}],
)
def test_target_without_usable_spec_replicas_is_an_error(spec: object) -> None:
    obj = {"apiVersion": "x/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": spec}
    with pytest.raises(TargetError):
        target_view(obj)


guard = DeploymentRolloutGuard()


def test_rollout_guard_proceeds_on_a_settled_deployment() -> None:
    assert guard.check(target_view(deployment(replicas=3))).proceed


def test_rollout_guard_defers_until_generation_observed() -> None:
    d = target_view(deployment(replicas=3, generation=5, observed=4))
    decision = guard.check(d)
    assert not decision.proceed and "generation 5" in decision.reason


def test_rollout_guard_defers_while_updated_below_spec() -> None:
    assert not guard.check(target_view(deployment(replicas=3, updated=2))).proceed


def test_rollout_guard_defers_while_old_replicas_remain() -> None:
    d = target_view(deployment(replicas=3, updated=3, status_replicas=4))
    assert not guard.check(d).proceed


def test_rollout_guard_is_deployment_only() -> None:
    sts = deployment(replicas=3, updated=1, observed=0, kind="StatefulSet")
    assert guard.check(target_view(sts)).proceed
    lookalike = deployment(replicas=3, updated=1, api_version="example.com/v1")
    assert guard.check(target_view(lookalike)).proceed
