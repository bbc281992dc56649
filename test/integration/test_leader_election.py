"""Two real Managers (real client, informer cache, controllers) on one Lease against the
embedded API server: exactly one reconciles; stopping it releases the Lease and the other
takes over well within a lease duration; events are aggregated on the server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llmscaler_runtime.controller import Builder, Request, Result
from llmscaler_runtime.kube import Client, NotFound
from llmscaler_runtime.manager import LeaderElectionConfig, Manager, NotLeader

pytestmark = pytest.mark.integration

LEASE = 2.0


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


class Replica:
    """One operator replica: a Manager with a ConfigMap controller that stamps who handled it."""

    def __init__(self, envtest: Any, namespace: str, identity: str) -> None:
        self.identity = identity
        self.client: Client = envtest.client()
        self.handled: list[str] = []
        self.manager = Manager(
            self.client,
            namespace=namespace,
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            install_signal_handlers=False,
            graceful_shutdown_timeout=5.0,
            leader_election=LeaderElectionConfig(
                enabled=True,
                lease_name="llmscaler-leader",
                lease_namespace=namespace,
                identity=identity,
                lease_duration=LEASE,
                renew_deadline=1.5,
                retry_period=0.3,
            ),
        )
        recorder = self.manager.event_recorder("llmscaler")
        replica = self

        class Stamp:
            def reconcile(self, request: Request) -> Result:
                cm = replica.manager.cache.get("v1", "ConfigMap", request.name, request.namespace)
                if cm is None or not replica.manager.still_leader():
                    return Result()
                replica.handled.append(request.name)
                replica.manager.client.patch(  # the fenced client
                    "v1",
                    "ConfigMap",
                    request.name,
                    {"data": {"handled-by": replica.identity}},
                    request.namespace,
                )
                recorder.event(cm, "Normal", "Stamped", "stamped by the leader")
                return Result()

        Builder(self.manager).named("stamp").for_("v1", "ConfigMap").complete(Stamp())
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.code = self.manager.run()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> int | None:
        self.manager.stop()
        self.thread.join(15)
        assert not self.thread.is_alive()
        self.client.close()
        return self.code


@pytest.fixture
def replicas(envtest: Any, namespace: str) -> Iterator[list[Replica]]:
    rs = [Replica(envtest, namespace, name) for name in ("replica-a", "replica-b")]
    yield rs
    for r in rs:
        if r.thread.is_alive():
            r.stop()


def test_one_leader_then_hand_over_on_stop(
    kube: Client, namespace: str, replicas: list[Replica]
) -> None:
    kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {}},
        namespace=namespace,
    )
    for r in replicas:
        r.start()
    wait_for(lambda: any(r.manager.elected.is_set() for r in replicas), 10, "a leader")
    leader = next(r for r in replicas if r.manager.elected.is_set())
    follower = next(r for r in replicas if r is not leader)
    wait_for(lambda: bool(leader.handled), 10, "the leader to reconcile")

    def handled_by() -> str | None:
        data: dict[str, str] = kube.get("v1", "ConfigMap", "cm1", namespace).get("data") or {}
        return data.get("handled-by")

    wait_for(lambda: handled_by() == leader.identity, 10, "the leader's write")
    wait_for(follower.manager.synced.is_set, 10, "follower cache sync")
    assert [r.manager.is_leader() for r in replicas].count(True) == 1
    assert follower.handled == []
    lease = kube.get("coordination.k8s.io/v1", "Lease", "llmscaler-leader", namespace)
    assert lease["spec"]["holderIdentity"] == leader.identity
    assert lease["spec"]["leaseDurationSeconds"] == 2

    stopped_at = time.monotonic()
    assert leader.stop() == 0
    released = kube.get("coordination.k8s.io/v1", "Lease", "llmscaler-leader", namespace)
    assert released["spec"]["holderIdentity"] in ("", follower.identity)
    wait_for(follower.manager.elected.is_set, LEASE, "hand-over within one lease duration")
    took = time.monotonic() - stopped_at
    wait_for(lambda: handled_by() == follower.identity, 10, "the new leader's write")
    lease = kube.get("coordination.k8s.io/v1", "Lease", "llmscaler-leader", namespace)
    assert lease["spec"]["holderIdentity"] == follower.identity
    assert lease["spec"]["leaseTransitions"] >= 1
    assert took < LEASE

    # Both replicas recorded the same event about cm1 and the server holds them as aggregated
    # Events (one per recorder), not one per reconcile. (A real cluster also publishes the
    # kube-root-ca.crt ConfigMap into every namespace, which the controller stamps too.)
    follower.manager.event_recorder("llmscaler").flush(5)
    events = kube.list("v1", "Event", namespace)["items"]
    stamped = [e for e in events if e.get("reason") == "Stamped"]
    assert stamped, events
    others = {e["involvedObject"]["name"] for e in stamped} - {"cm1", "kube-root-ca.crt"}
    assert not others, stamped
    about_cm1 = [e for e in stamped if e["involvedObject"]["name"] == "cm1"]
    assert 1 <= len(about_cm1) <= len(replicas), about_cm1
    assert follower.stop() == 0


def test_events_repeat_into_one_object(kube: Client, namespace: str) -> None:
    cm = kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm2"}, "data": {}},
        namespace=namespace,
    )
    from llmscaler_runtime.events import EventRecorder

    rec = EventRecorder(kube, "llmscaler-test")
    for _ in range(3):
        rec.event(cm, "Warning", "MetricsUnavailable", "prometheus timed out")
    assert rec.flush(10)
    rec.stop()
    events = [
        e
        for e in kube.list("v1", "Event", namespace)["items"]
        if e.get("reason") == "MetricsUnavailable"
    ]
    assert len(events) == 1
    assert events[0]["count"] == 3
    assert events[0]["involvedObject"]["uid"] == cm["metadata"]["uid"]
    with pytest.raises(NotFound):
        kube.get("v1", "Event", "does-not-exist", namespace)


@pytest.mark.envtest_embedded("answers 503 for the Lease alone, with the fault injector")
def test_leader_cut_off_from_the_lease_stops_and_exits_1(
    envtest: Any, kube: Client, namespace: str
) -> None:
    a = Replica(envtest, namespace, "replica-a")
    try:
        a.start()
        wait_for(a.manager.elected.is_set, 10, "leadership")
        renewed = time.monotonic()
        envtest.server.faults.add_error(r"/leases/llmscaler-leader$", 503)
        try:
            wait_for(lambda: a.code is not None, 5, "the manager to give up")
            lost_after = time.monotonic() - renewed
        finally:
            envtest.server.faults.clear()
        assert a.code == 1
        assert a.manager.lost_leadership and not a.manager.still_leader()
        # It stopped within the renew deadline (+ one retry), before its lease could expire.
        assert lost_after < LEASE
        lease = kube.get("coordination.k8s.io/v1", "Lease", "llmscaler-leader", namespace)
        assert lease["spec"]["holderIdentity"] == "replica-a"  # not released: it was cut off
        # Any write a straggling reconcile attempts through the manager's client is refused.
        with pytest.raises(NotLeader):
            a.manager.client.patch("v1", "ConfigMap", "x", {"data": {}}, namespace)
    finally:
        if a.thread.is_alive():
            a.stop()
        a.client.close()

    b = Replica(envtest, namespace, "replica-b")
    try:
        started = time.monotonic()
        b.start()
        wait_for(b.manager.elected.is_set, 10, "the next replica to take over")
        # It had to wait for the stale lease to expire by its own clock.
        assert time.monotonic() - started >= LEASE - 0.5
    finally:
        b.stop()
