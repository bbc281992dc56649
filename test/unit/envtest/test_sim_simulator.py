"""Unit tests of the workload simulator's rules, on a fake clock (no sleeping, no threads)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.envtest.simulator import WorkloadSimulator, victim_sort_key

try:  # test/unit/envtest as a package (if it gets an __init__.py) ...
    from .test_sim_fake_storage import FakeStorage
except ImportError:  # ... or as a plain directory of test modules (pytest's rootdir-less import)
    from test_sim_fake_storage import FakeStorage  # type: ignore[no-redef]

Obj = dict[str, Any]
NS = "demo"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t

    def step(self, seconds: float) -> None:
        self.t += seconds


def _real_storage() -> Any:
    from llmscaler_runtime.envtest.storage import Storage

    storage = Storage()
    storage.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return storage


STORAGES = {"fake": FakeStorage, "real": _real_storage}


class Rig:
    def __init__(
        self, *, startup: float = 0.5, termination: float = 1.0, storage: str = "fake"
    ) -> None:
        self.storage = STORAGES[storage]()
        self.clock = Clock()
        self.sim = WorkloadSimulator(
            self.storage,
            pod_startup_seconds=startup,
            clock=self.clock,
            termination_seconds=termination,
            seed=7,
            wall_clock=lambda: 1_800_000_000.0,
        )
        self.sim.start(background=False)

    def close(self) -> None:
        close = getattr(self.storage, "close", None)
        if close is not None:
            close()

    def step(self, seconds: float = 0.0) -> None:
        self.clock.t += seconds
        self.sim.run_pending()

    def pods(self, *, terminating: bool | None = None) -> list[Obj]:
        items, _ = self.storage.list("v1", "Pod", NS)
        if terminating is None:
            return items
        return [p for p in items if bool(p["metadata"].get("deletionTimestamp")) == terminating]

    def get(self, kind: str, name: str) -> Obj:
        api = "v1" if kind == "Pod" else "apps/v1"
        return self.storage.get(api, kind, NS, name)

    def replicasets(self) -> list[Obj]:
        items, _ = self.storage.list("apps/v1", "ReplicaSet", NS)
        return items


def deployment(name: str = "llm", replicas: int = 3, image: str = "vllm:1", **spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "server", "image": image}]},
            },
            **spec,
        },
    }


def ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions", [])
    )


@pytest.fixture(params=["fake", "real"])
def storage_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every rule runs against the contract fake and against the embedded server's storage."""
    if request.param == "real":
        pytest.importorskip("llmscaler_runtime.envtest.storage")
    yield request.param


@pytest.fixture
def rig(storage_kind: str) -> Iterator[Rig]:
    r = Rig(storage=storage_kind)
    yield r
    r.close()


def test_deployment_creates_one_replicaset_and_its_pods(rig: Rig) -> None:
    d = rig.storage.create(deployment(replicas=3))
    rig.step()
    (rs,) = rig.replicasets()
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"llm-{h}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "llm", "pod-template-hash": h}
    ref = rs["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], ref["controller"]) == (
        "Deployment",
        d["metadata"]["uid"],
        True,
    )
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    pods = rig.pods()
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"llm-{h}-")
        assert len(pod["metadata"]["name"]) == len(f"llm-{h}-") + 5
        assert pod["spec"]["nodeName"] == "envtest-node"
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert pod["status"]["phase"] == "Pending"
    d = rig.get("Deployment", "llm")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    st = d["status"]
    assert (st["replicas"], st.get("updatedReplicas", 0), st.get("readyReplicas", 0)) == (3, 3, 0)
    assert (st.get("availableReplicas", 0), st.get("unavailableReplicas", 0)) == (0, 3)
    assert st["observedGeneration"] == 1


def test_pods_turn_ready_only_after_startup_delay(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2))
    rig.step()
    rig.step(0.49)
    assert not any(ready(p) for p in rig.pods())
    assert rig.sim.next_timer() == pytest.approx(100.5)
    rig.step(0.01)
    pods = rig.pods()
    assert all(ready(p) and p["status"]["phase"] == "Running" for p in pods)
    assert all(p["status"]["podIP"].startswith("10.") for p in pods)
    assert len({p["status"]["podIP"] for p in pods}) == 2
    types = {c["type"] for c in pods[0]["status"]["conditions"] if c["status"] == "True"}
    assert types == {"PodScheduled", "Initialized", "ContainersReady", "Ready"}
    assert pods[0]["status"]["containerStatuses"][0]["ready"] is True
    st = rig.get("Deployment", "llm")["status"]
    assert (
        st.get("readyReplicas", 0),
        st.get("availableReplicas", 0),
        st.get("unavailableReplicas", 0),
    ) == (2, 2, 0)
    conds = {c["type"]: (c["status"], c["reason"]) for c in st["conditions"]}
    assert conds == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }


def test_startup_annotation_overrides_default_per_pod(rig: Rig) -> None:
    d = deployment(replicas=1)
    d["spec"]["template"]["metadata"]["annotations"] = {
        "envtest.llmscaler.dev/startup-seconds": "5"
    }
    rig.storage.create(d)
    rig.step()
    rig.step(4.9)
    assert not ready(rig.pods()[0])
    rig.step(0.1)
    assert ready(rig.pods()[0])


def test_kwok_ready_delay_annotation_is_honoured_like_on_the_real_control_plane(rig: Rig) -> None:
    d = deployment(replicas=1)
    d["spec"]["template"]["metadata"]["annotations"] = {
        "pod-ready.stage.kwok.x-k8s.io/delay": "1m30s"
    }
    rig.storage.create(d)
    rig.step()
    rig.step(89.9)
    assert not ready(rig.pods()[0])
    rig.step(0.1)
    assert ready(rig.pods()[0])


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("8s", 8.0), ("1500ms", 1.5), ("1m30s", 90.0), ("0", 0.0), ("1.5h", 5400.0)],
)
def test_go_durations_parse_like_time_parse_duration(text: str, seconds: float) -> None:
    from llmscaler_runtime.envtest.simulator.pods import go_duration_seconds

    assert go_duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "8", "s", "-1s", "8 s", "8x", "1s2"])
def test_malformed_go_durations_are_rejected(text: str) -> None:
    from llmscaler_runtime.envtest.simulator.pods import go_duration_seconds

    assert go_duration_seconds(text) is None


def test_scale_up_and_down_counts(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2))
    rig.step()
    rig.step(0.5)
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 5}})
    rig.step()
    assert len(rig.pods()) == 5
    (rs,) = rig.replicasets()
    assert rs["spec"]["replicas"] == 5
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 1}})
    rig.step()
    assert len(rig.pods(terminating=False)) == 1
    assert len(rig.pods(terminating=True)) == 4
    st = rig.get("Deployment", "llm")["status"]
    assert st["observedGeneration"] == 3
    assert (st["replicas"], st["terminatingReplicas"]) == (1, 4)


def test_scale_down_deletes_not_ready_pods_before_ready_ones(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2))
    rig.step()
    rig.step(0.5)
    old = {p["metadata"]["name"] for p in rig.pods()}
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 4}})
    rig.step()
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 2}})
    rig.step()
    survivors = {p["metadata"]["name"] for p in rig.pods(terminating=False)}
    assert survivors == old


def test_scale_down_honours_pod_deletion_cost_then_newest_first(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=4))
    rig.step()
    # Make readiness times differ: bring pods up one at a time is not possible via one RS, so
    # set distinct costs on two pods and rely on newest-first for the rest.
    rig.step(0.5)
    pods = sorted(rig.pods(), key=lambda p: rig.sim.created[p["metadata"]["uid"]][1])
    names = [p["metadata"]["name"] for p in pods]  # creation order
    cost = "controller.kubernetes.io/pod-deletion-cost"
    rig.storage.patch_merge("v1", "Pod", NS, names[0], {"metadata": {"annotations": {cost: "-5"}}})
    rig.storage.patch_merge("v1", "Pod", NS, names[3], {"metadata": {"annotations": {cost: "100"}}})
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 2}})
    rig.step()
    doomed = {p["metadata"]["name"] for p in rig.pods(terminating=True)}
    # cost -5 goes first; among the cost-0 pods the newer (names[2]) goes next.
    assert doomed == {names[0], names[2]}


def _pod(name: str, **kw: Any) -> Obj:
    pod: Obj = {
        "metadata": {"name": name, "uid": name, "annotations": kw.get("annotations", {})},
        "spec": {"nodeName": "" if kw.get("unassigned") else "envtest-node"},
        "status": {"phase": kw.get("phase", "Running")},
    }
    if kw.get("ready", True):
        pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return pod


def test_victim_order_matches_active_pods_with_ranks(rig: Rig) -> None:
    sim = rig.sim
    sim.created.update({f"p{i}": (1000.0 + i, i) for i in range(9)})
    sim.ready_at.update({"p5": 2000.0, "p6": 2005.0})
    pods = [
        _pod("p0"),
        _pod("p1", unassigned=True, phase="Pending", ready=False),
        _pod("p2", phase="Pending", ready=False),
        _pod("p3", phase="Unknown", ready=False),
        _pod("p4", ready=False),
        _pod("p5"),
        _pod("p6"),
        _pod("p7", annotations={"controller.kubernetes.io/pod-deletion-cost": "-1"}),
        _pod("p8", annotations={"controller.kubernetes.io/pod-deletion-cost": "7"}),
    ]
    order = [p["metadata"]["name"] for p in sorted(pods, key=lambda p: victim_sort_key(p, sim))]
    # unassigned, Pending, Unknown, Running-not-ready, lowest cost, then among cost 0 ready
    # pods the most recently ready (p6 before p5); p0 has no ready time (ready "long ago").
    assert order == ["p1", "p2", "p3", "p4", "p7", "p6", "p5", "p0", "p8"]


def test_newer_pods_go_first_when_everything_else_ties(rig: Rig) -> None:
    sim = rig.sim
    sim.created.update({"a": (1000.0, 1), "b": (1000.0, 2), "c": (999.0, 3)})
    pods = [_pod("a", ready=False), _pod("b", ready=False), _pod("c", ready=False)]
    order = [p["metadata"]["name"] for p in sorted(pods, key=lambda p: victim_sort_key(p, sim))]
    assert order == ["b", "a", "c"]


def test_terminating_pods_linger_for_min_of_grace_and_termination_seconds(
    storage_kind: str,
) -> None:
    rig = Rig(termination=3.0, storage=storage_kind)
    d = deployment(replicas=2)
    d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 2
    rig.storage.create(d)
    rig.step()
    rig.step(0.5)
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 0}})
    rig.step()
    assert len(rig.pods(terminating=True)) == 2
    (rs,) = rig.replicasets()
    assert rs["status"]["replicas"] == 0
    assert rs["status"]["terminatingReplicas"] == 2
    assert rig.get("Deployment", "llm")["status"]["terminatingReplicas"] == 2
    rig.step(1.9)
    assert len(rig.pods()) == 2
    rig.step(0.1)  # grace (2 s) < termination_seconds (3 s)
    assert rig.pods() == []
    assert rig.get("Deployment", "llm")["status"]["terminatingReplicas"] == 0
    rig.close()


def test_replicaset_status_fields_and_adoption(rig: Rig) -> None:
    rig.storage.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "stray", "namespace": NS, "labels": {"app": "x"}},
            "spec": {"nodeName": "envtest-node", "containers": [{"name": "c", "image": "i"}]},
        }
    )
    rig.storage.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": NS},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x", "tier": "t"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        }
    )
    rig.step()
    pods = rig.pods()
    assert len(pods) == 2
    stray = rig.get("Pod", "stray")
    assert stray["metadata"]["ownerReferences"][0]["name"] == "rs"
    st = rig.get("ReplicaSet", "rs")["status"]
    # The adopted pod lacks the template's "tier" label: not fully labelled.
    assert (st["replicas"], st.get("fullyLabeledReplicas", 0), st.get("readyReplicas", 0)) == (
        2,
        1,
        0,
    )
    assert st["observedGeneration"] == 1
    rig.step(0.5)
    st = rig.get("ReplicaSet", "rs")["status"]
    assert (st.get("readyReplicas", 0), st.get("availableReplicas", 0)) == (2, 2)


def test_min_ready_seconds_delays_availability(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=1, minReadySeconds=10))
    rig.step()
    rig.step(0.5)
    st = rig.get("Deployment", "llm")["status"]
    assert (st.get("readyReplicas", 0), st.get("availableReplicas", 0)) == (1, 0)
    rig.step(9.9)
    assert rig.get("Deployment", "llm")["status"].get("availableReplicas", 0) == 0
    rig.step(0.1)
    assert rig.get("Deployment", "llm")["status"].get("availableReplicas", 0) == 1


def _change_image(rig: Rig, image: str) -> None:
    d = rig.get("Deployment", "llm")
    d["spec"]["template"]["spec"]["containers"][0]["image"] = image
    rig.storage.update(d)


def test_rolling_update_respects_surge_and_unavailability(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=4))
    rig.step()
    rig.step(0.5)
    _change_image(rig, "vllm:2")
    rig.step()
    d = rig.get("Deployment", "llm")
    assert d["metadata"]["generation"] == 2
    assert d["status"]["observedGeneration"] == 2  # observed, although the rollout is not done
    rss = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rig.replicasets()}
    new, old = rss["vllm:2"], rss["vllm:1"]
    # 25 % of 4: maxSurge 1 (5 pods total), maxUnavailable 1 (3 available at least): the new
    # RS surges to 1, one old pod goes (4 available > 3), the freed slot goes to the new RS,
    # then nothing else moves until new pods become available.
    assert new["spec"]["replicas"] == 2 and old["spec"]["replicas"] == 3
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    st = d["status"]
    assert st.get("updatedReplicas", 0) == 2 and st["replicas"] == 5
    prog = {c["type"]: c for c in st["conditions"]}["Progressing"]
    assert prog["status"] == "True" and prog["reason"] != "NewReplicaSetAvailable"
    for _ in range(20):
        rig.step(0.5)
        rss = {
            r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rig.replicasets()
        }
        total = sum(r["spec"]["replicas"] for r in rss.values())
        assert total <= 5
        available = sum(r.get("status", {}).get("availableReplicas", 0) for r in rss.values())
        assert available >= 3
        if rss["vllm:1"]["spec"]["replicas"] == 0 and len(rig.pods()) == 4:
            break
    else:
        pytest.fail("rollout did not finish")
    d = rig.get("Deployment", "llm")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    st = d["status"]
    assert (st.get("updatedReplicas", 0), st["replicas"], st.get("availableReplicas", 0)) == (
        4,
        4,
        4,
    )
    prog = {c["type"]: c for c in st["conditions"]}["Progressing"]
    assert prog["reason"] == "NewReplicaSetAvailable"
    assert all(p["spec"]["containers"][0]["image"] == "vllm:2" for p in rig.pods(terminating=False))


def test_rollback_reuses_old_replicaset_with_new_revision(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=1))
    rig.step()
    rig.step(0.5)
    _change_image(rig, "vllm:2")
    for _ in range(8):
        rig.step(0.5)
    _change_image(rig, "vllm:1")
    for _ in range(8):
        rig.step(0.5)
    rss = rig.replicasets()
    assert len(rss) == 2
    by_image = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rss}
    assert by_image["vllm:1"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert by_image["vllm:1"]["spec"]["replicas"] == 1
    assert by_image["vllm:2"]["spec"]["replicas"] == 0


def test_recreate_kills_old_pods_before_creating_new_ones(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2, strategy={"type": "Recreate"}))
    rig.step()
    rig.step(0.5)
    _change_image(rig, "vllm:2")
    rig.step()
    assert len(rig.replicasets()) == 1  # new RS only once the old pods are gone
    assert len(rig.pods(terminating=True)) == 2
    rig.step(1.0)
    rss = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rig.replicasets()}
    assert rss["vllm:2"]["spec"]["replicas"] == 2
    assert rss["vllm:1"]["spec"]["replicas"] == 0
    assert len(rig.pods()) == 2


def test_scaling_mid_rollout_is_proportional(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=10))
    rig.step()
    rig.step(0.5)
    _change_image(rig, "vllm:2")
    rig.step()
    rss = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rig.replicasets()}
    before = (rss["vllm:1"]["spec"]["replicas"], rss["vllm:2"]["spec"]["replicas"])
    assert before == (8, 5)  # surge 3 (13 pods), unavailable 2: old 10->8, new 3->5
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 20}})
    rig.step()
    rss = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rig.replicasets()}
    old_n, new_n = rss["vllm:1"]["spec"]["replicas"], rss["vllm:2"]["spec"]["replicas"]
    assert old_n + new_n == 25  # 20 + maxSurge 5
    # Each RS grows by its share of the 12 extra pods: 8*25/13 -> 15 and 5*25/13 -> 10.
    assert (old_n, new_n) == (15, 10)


def sts(replicas: int = 3, **spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "db:1"}]},
            },
            **spec,
        },
    }


def names(rig: Rig, *, terminating: bool | None = None) -> list[str]:
    return sorted(p["metadata"]["name"] for p in rig.pods(terminating=terminating))


def test_statefulset_ordered_ready_creation_and_scale_down(rig: Rig) -> None:
    rig.storage.create(sts(3))
    rig.step()
    assert names(rig) == ["db-0"]
    rig.step(0.5)
    assert names(rig) == ["db-0", "db-1"]
    rig.step(0.5)
    rig.step(0.5)
    assert names(rig) == ["db-0", "db-1", "db-2"]
    st = rig.get("StatefulSet", "db")["status"]
    assert (st["replicas"], st.get("readyReplicas", 0), st.get("availableReplicas", 0)) == (3, 3, 3)
    assert st["currentReplicas"] == st.get("updatedReplicas", 0) == 3
    assert st["currentRevision"] == st["updateRevision"]
    pod = rig.get("Pod", "db-1")
    assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert pod["spec"]["hostname"] == "db-1" and pod["spec"]["subdomain"] == "db"
    rig.storage.patch_merge("apps/v1", "StatefulSet", NS, "db", {"spec": {"replicas": 1}})
    rig.step()
    assert names(rig, terminating=True) == ["db-2"]  # highest ordinal first, one at a time
    rig.step(1.0)
    assert names(rig, terminating=True) == ["db-1"]
    rig.step(1.0)
    assert names(rig) == ["db-0"]
    assert rig.get("StatefulSet", "db")["status"]["observedGeneration"] == 2


def test_statefulset_parallel_creates_all_at_once(rig: Rig) -> None:
    rig.storage.create(sts(3, podManagementPolicy="Parallel"))
    rig.step()
    assert names(rig) == ["db-0", "db-1", "db-2"]


def test_statefulset_rolling_update_goes_from_highest_ordinal(rig: Rig) -> None:
    rig.storage.create(sts(2))
    for _ in range(3):
        rig.step(0.5)
    s = rig.get("StatefulSet", "db")
    s["spec"]["template"]["spec"]["containers"][0]["image"] = "db:2"
    rig.storage.update(s)
    rig.step()
    assert names(rig, terminating=True) == ["db-1"]
    st = rig.get("StatefulSet", "db")["status"]
    assert st["currentRevision"] != st["updateRevision"]
    for _ in range(10):
        rig.step(0.5)
    st = rig.get("StatefulSet", "db")["status"]
    assert st.get("updatedReplicas", 0) == 2 and st["currentRevision"] == st["updateRevision"]
    assert all(p["spec"]["containers"][0]["image"] == "db:2" for p in rig.pods())


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="pod_startup_seconds"):
        WorkloadSimulator(FakeStorage(), pod_startup_seconds=-1)


def test_pending_pod_reports_scheduled_but_not_ready(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=1))
    rig.step()
    (pod,) = rig.pods()
    conds = {c["type"]: (c["status"], c.get("reason")) for c in pod["status"]["conditions"]}
    assert conds == {
        "PodScheduled": ("True", None),
        "Initialized": ("True", None),
        "ContainersReady": ("False", "ContainersNotReady"),
        "Ready": ("False", "ContainersNotReady"),
    }
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ContainerCreating"


def test_bare_pods_are_bound_to_the_node_unless_another_scheduler_is_named(rig: Rig) -> None:
    for name, extra in (("bare", {}), ("custom", {"schedulerName": "my-scheduler"})):
        rig.storage.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"containers": [{"name": "c", "image": "i"}], **extra},
            }
        )
    rig.step()
    rig.step(0.5)
    bare, custom = rig.get("Pod", "bare"), rig.get("Pod", "custom")
    assert bare["spec"]["nodeName"] == "envtest-node" and ready(bare)
    assert not custom["spec"].get("nodeName") and not ready(custom)


def test_statefulset_min_ready_seconds_delays_available(rig: Rig) -> None:
    rig.storage.create(sts(1, minReadySeconds=3))
    rig.step()
    rig.step(0.5)
    st = rig.get("StatefulSet", "db")["status"]
    assert (st.get("readyReplicas", 0), st.get("availableReplicas", 0)) == (1, 0)
    rig.step(3.0)
    assert rig.get("StatefulSet", "db")["status"].get("availableReplicas", 0) == 1


def test_paused_deployment_scales_but_does_not_roll(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2))
    rig.step()
    rig.step(0.5)
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"paused": True}})
    _change_image(rig, "vllm:2")
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 3}})
    rig.step()
    (rs,) = rig.replicasets()
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm:1"
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"paused": False}})
    rig.step()
    assert len(rig.replicasets()) == 2


def test_progress_deadline_exceeded_when_pods_never_become_ready(rig: Rig) -> None:
    d = deployment(replicas=1, progressDeadlineSeconds=30)
    d["spec"]["template"]["metadata"]["annotations"] = {
        "envtest.llmscaler.dev/startup-seconds": "1000"
    }
    rig.storage.create(d)
    rig.step()
    rig.step(20)
    prog = {c["type"]: c for c in rig.get("Deployment", "llm")["status"]["conditions"]}
    assert prog["Progressing"]["status"] == "True"
    assert prog["Available"]["status"] == "False"
    rig.step(12)
    prog = {c["type"]: c for c in rig.get("Deployment", "llm")["status"]["conditions"]}
    assert (prog["Progressing"]["status"], prog["Progressing"]["reason"]) == (
        "False",
        "ProgressDeadlineExceeded",
    )


def test_deployment_scaled_to_zero_keeps_its_replicaset(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2))
    rig.step()
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 0}})
    rig.step()
    rig.step(1.0)
    (rs,) = rig.replicasets()
    assert rs["spec"]["replicas"] == 0 and rig.pods() == []
    st = rig.get("Deployment", "llm")["status"]
    assert (
        st.get("replicas", 0),
        st.get("availableReplicas", 0),
        st.get("unavailableReplicas", 0),
    ) == (0, 0, 0)


def test_controllers_record_events_like_kube_controller_manager(rig: Rig) -> None:
    rig.storage.create(deployment(replicas=2))
    rig.step()
    rig.storage.patch_merge("apps/v1", "Deployment", NS, "llm", {"spec": {"replicas": 1}})
    rig.step()
    events, _ = rig.storage.list("v1", "Event", NS)
    by_reason: dict[str, list[str]] = {}
    for ev in events:
        by_reason.setdefault(ev["reason"], []).append(ev["message"])
    (rs,) = rig.replicasets()
    rs_name = rs["metadata"]["name"]
    assert sorted(by_reason["ScalingReplicaSet"]) == [
        f"Scaled down replica set {rs_name} from 2 to 1",
        f"Scaled up replica set {rs_name} from 0 to 2",
    ]
    assert len(by_reason["SuccessfulCreate"]) == 2
    assert len(by_reason["SuccessfulDelete"]) == 1
    assert all(m.startswith("Created pod: " + rs_name) for m in by_reason["SuccessfulCreate"])


def test_events_can_be_switched_off() -> None:
    rig = Rig()
    rig.sim.emit_events = False
    rig.storage.create(deployment(replicas=1))
    rig.step()
    assert rig.storage.list("v1", "Event", NS)[0] == []


def test_step_drives_a_fake_clock_and_rejects_real_ones() -> None:
    rig = Rig()
    rig.storage.create(deployment(replicas=1))
    assert rig.sim.step(0.0) > 0
    rig.sim.step(0.5)
    assert ready(rig.pods()[0])
    with pytest.raises(ValueError, match="backwards"):
        rig.sim.step(-1)
    with pytest.raises(TypeError, match="fake clock"):
        WorkloadSimulator(FakeStorage()).step(1.0)
