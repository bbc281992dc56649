"""The checks before measuring, each on fakes of the ports: ownership, target, address,
Secrets. Each returns the value the next step needs, or a typed Problem."""

from __future__ import annotations

from typing import Any

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_runtime.scaling.addresses import AddressPolicy
from llmscaler_runtime.scaling.conflicts import OldestScalerWins
from llmscaler_runtime.scaling.memory import ScalerMemory
from llmscaler_runtime.scaling.reasons import ConditionReason, EventReason
from llmscaler_runtime.scaling.resolve import Problem, owned_target, requestable, rivals
from llmscaler_runtime.scaling.secrets import SecretHeaderResolver
from llmscaler_runtime.scaling.target import target_view
from llmscaler_runtime.scaling.types import TargetView

from .fakes import FakeCache, FakeClient, FakeCluster, deployment, scaler_obj


class _Cluster:
    def __init__(self) -> None:
        self.cluster = FakeCluster()
        self.cache = FakeCache(self.cluster)
        self.client = FakeClient(self.cluster)

    def target(self, obj: dict[str, Any]) -> TargetView | Problem:
        return owned_target(
            obj,
            LLMScaler.from_dict(obj),
            cache=self.cache,
            client=self.client,
            conflicts=OldestScalerWins(),
        )


def test_the_one_writer_gets_its_target() -> None:
    c = _Cluster()
    obj = c.cluster.put(scaler_obj())
    c.cluster.put(deployment(replicas=3))
    got = c.target(obj)
    assert isinstance(got, TargetView) and (got.name, got.spec_replicas) == ("web", 3)


def test_a_younger_scaler_of_the_same_target_gets_a_problem_and_no_read() -> None:
    c = _Cluster()
    c.cluster.put(scaler_obj("old", created="2026-01-01T00:00:00Z"))
    young = c.cluster.put(scaler_obj("young", created="2026-02-01T00:00:00Z"))
    c.cluster.put(deployment())
    reads = c.cluster.reads
    got = c.target(young)
    assert isinstance(got, Problem)
    assert got.reason == EventReason.TARGET_OWNED_BY_ANOTHER_SCALER
    assert "'old' is older" in got.message
    assert [d.reason for d in got.drafts] == [ConditionReason.TARGET_OWNED_BY_ANOTHER_SCALER] * 2
    assert c.cluster.reads == reads


def test_a_missing_target_is_a_problem_on_able_to_scale() -> None:
    c = _Cluster()
    got = c.target(c.cluster.put(scaler_obj()))
    assert isinstance(got, Problem) and got.reason == EventReason.FAILED_GET_TARGET
    assert [(d.type, d.reason) for d in got.drafts] == [
        ("AbleToScale", ConditionReason.TARGET_NOT_FOUND),
        ("Ready", ConditionReason.TARGET_NOT_FOUND),
    ]
    assert "(it does not exist); scaling starts once it exists." in got.message


def test_an_unserved_kind_is_found_by_the_mapper_before_the_cache_is_asked() -> None:
    class NoLws:
        def resource_for(self, api_version: str, kind: str) -> object:
            raise LookupError(kind)

    class ExplodingCache(FakeCache):
        def get(self, *a: Any, **kw: Any) -> dict[str, Any] | None:
            raise AssertionError("the cache was asked for an unserved kind")

    c = _Cluster()
    c.client.mapper = NoLws()
    c.cache = ExplodingCache(c.cluster)
    obj = c.cluster.put(scaler_obj(target=("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "w")))
    got = c.target(obj)
    assert isinstance(got, Problem)
    assert "does not serve kind LeaderWorkerSet" in got.message


def test_rivals_come_from_the_index_when_the_cache_has_it() -> None:
    class Indexed(FakeCache):
        def by_index(
            self, api_version: str, kind: str, index_name: str, value: str
        ) -> list[dict[str, Any]]:
            self.asked = (index_name, value)
            return [{"from": "index"}]

    cluster = FakeCluster()
    obj = cluster.put(scaler_obj())
    cache = Indexed(cluster)
    assert rivals(cache, obj, LLMScaler.from_dict(obj)) == [{"from": "index"}]
    assert cache.asked[1].endswith("web")
    # without the index the namespace's scalers are listed instead
    assert rivals(FakeCache(cluster), obj, LLMScaler.from_dict(obj)) == [obj]


def test_a_refused_address_is_a_problem_that_holds_the_fleet_and_reads_no_secret() -> None:
    cluster = FakeCluster()
    scaler = LLMScaler.from_dict(scaler_obj())
    target = target_view(deployment(replicas=3))
    got = requestable(
        scaler,
        target,
        policy=AddressPolicy(["metrics.internal"]),
        secret_headers=SecretHeaderResolver(FakeClient(cluster)),
        memory=ScalerMemory(),
    )
    assert isinstance(got, Problem) and got.reason == EventReason.SERVER_ADDRESS_NOT_ALLOWED
    assert got.drafts[0].message == "Holding 3 replicas until the metric source can be asked."
    assert cluster.reads == 0


def test_a_scaler_without_secret_headers_is_asked_as_it_is() -> None:
    scaler = LLMScaler.from_dict(scaler_obj())
    got = requestable(
        scaler,
        target_view(deployment()),
        policy=AddressPolicy(),
        secret_headers=SecretHeaderResolver(FakeClient(FakeCluster())),
        memory=ScalerMemory(),
    )
    assert got is scaler
