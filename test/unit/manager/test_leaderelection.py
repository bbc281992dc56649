"""Leader election on a fake Lease API with a fake clock: safety (never two leaders), liveness
(hand-over within the lease duration), client-go record semantics and config validation."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from llmscaler_runtime.manager.leaderelection import (
    LeaderElectionConfig,
    LeaderElector,
    format_micro_time,
)
from llmscaler_runtime.testkit import FakeClock

from .fakes import FakeApiStore, FakeClient

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LEASE = 15.0
RENEW = 10.0
RETRY = 2.0


def cfg(identity: str, **kw: Any) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        enabled=True, lease_name="lease", lease_namespace="ns", identity=identity, **kw
    )


class Sim:
    """Drives several electors on one fake clock, each at the delay its tick asks for,
    checking after every step that at most one of them believes it leads."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.next: dict[str, float] = {}
        self.electors: dict[str, LeaderElector] = {}
        self.clients: dict[str, FakeClient] = {}
        self.paused: set[str] = set()
        self.lost_at: dict[str, float] = {}
        self.started_at: dict[str, float] = {}

    def add(self, name: str, store: FakeApiStore, *, jitter: float = 0.0) -> LeaderElector:
        client = FakeClient(store)
        el = LeaderElector(
            client,
            cfg(name),
            clock=self.clock,
            jitter=lambda: jitter,
            on_started_leading=lambda: self.started_at.__setitem__(name, self.clock.monotonic()),
            on_stopped_leading=lambda: self.lost_at.__setitem__(name, self.clock.monotonic()),
        )
        self.electors[name] = el
        self.clients[name] = client
        self.next[name] = self.clock.monotonic()
        return el

    def leaders(self) -> list[str]:
        return [n for n, e in self.electors.items() if e.is_leader()]

    def run_until(self, t_end: float, until: Callable[[], bool] | None = None) -> None:
        while True:
            active = {n: t for n, t in self.next.items() if n not in self.paused}
            if not active:
                return
            name = min(active, key=lambda n: active[n])
            when = active[name]
            if when > t_end:
                return
            if when > self.clock.monotonic():
                self.clock.step(when - self.clock.monotonic())
            assert len(self.leaders()) <= 1, (
                f"two leaders at {self.clock.monotonic()}: {self.leaders()}"
            )
            delay = self.electors[name].tick()
            assert len(self.leaders()) <= 1, (
                f"two leaders at {self.clock.monotonic()}: {self.leaders()}"
            )
            if delay is None:
                del self.next[name]
            else:
                self.next[name] = self.clock.monotonic() + delay
            if until is not None and until():
                return


def test_two_candidates_exactly_one_leads() -> None:
    clock = FakeClock(1000.0)
    store = FakeApiStore()
    sim = Sim(clock)
    a = sim.add("a", store)
    b = sim.add("b", store, jitter=0.5)
    sim.run_until(clock.monotonic() + 120)
    assert sim.leaders() == ["a"]
    assert a.is_leader() and not b.is_leader()
    lease = sim.clients["a"].lease()
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "a"
    assert b.leader == "a"  # the follower observed who leads


def test_lease_record_has_client_go_fields_and_renews_keep_acquire_time() -> None:
    clock = FakeClock(1000.0)
    store = FakeApiStore()
    sim = Sim(clock)
    sim.add("a", store)
    sim.run_until(clock.monotonic())
    first = sim.clients["a"].lease()
    assert first is not None
    spec = first["spec"]
    assert first["apiVersion"] == "coordination.k8s.io/v1" and first["kind"] == "Lease"
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    sim.run_until(clock.monotonic() + 3 * RETRY)
    later = sim.clients["a"].lease()
    assert later is not None
    assert later["spec"]["acquireTime"] == spec["acquireTime"]
    assert later["spec"]["renewTime"] > spec["renewTime"]
    assert later["spec"]["leaseTransitions"] == 0
    assert int(later["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_release_hands_over_at_once_and_counts_a_transition() -> None:
    clock = FakeClock(1000.0)
    store = FakeApiStore()
    sim = Sim(clock)
    a = sim.add("a", store)
    b = sim.add("b", store)
    sim.run_until(clock.monotonic() + 10)
    assert sim.leaders() == ["a"]
    released_at = clock.monotonic()
    assert a.release() is True
    del sim.next["a"]
    lease = sim.clients["a"].lease()
    assert lease is not None and lease["spec"]["holderIdentity"] == ""
    assert not a.is_leader()
    sim.run_until(clock.monotonic() + LEASE, until=b.is_leader)
    assert b.is_leader()
    # b needed at most one acquire retry period (with maximum jitter), far less than a lease.
    assert sim.started_at["b"] - released_at <= RETRY * 2.2
    lease = sim.clients["b"].lease()
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert "a" not in sim.lost_at  # a clean release is not a loss


def test_crashed_leader_is_replaced_after_lease_expiry_not_before() -> None:
    clock = FakeClock(1000.0)
    store = FakeApiStore()
    sim = Sim(clock)
    a = sim.add("a", store)
    b = sim.add("b", store)
    sim.run_until(clock.monotonic() + 10)
    assert sim.leaders() == ["a"]
    last_renew_time = clock.monotonic()  # a ticked last at or before now
    sim.paused.add("a")  # crash: a never ticks again (and never releases)
    sim.run_until(clock.monotonic() + 60, until=b.is_leader)
    assert b.is_leader()
    took = sim.started_at["b"] - last_renew_time
    # b must wait for a full lease duration since it last saw the record change ...
    assert took >= LEASE - RETRY
    # ... and takes over within a lease duration plus one jittered retry period.
    assert took <= LEASE + RETRY * 2.2
    assert not a.is_leader()  # the crashed leader's own fence expired too


def test_partitioned_leader_stops_before_its_lease_can_expire() -> None:
    clock = FakeClock(1000.0)
    store = FakeApiStore()
    sim = Sim(clock)
    a = sim.add("a", store)
    b = sim.add("b", store)
    renew_starts: list[float] = []
    client_a = sim.clients["a"]
    orig_update = client_a.update

    def recording_update(obj: dict[str, Any]) -> dict[str, Any]:
        out = orig_update(obj)
        renew_starts.append(clock.monotonic())
        return out

    client_a.update = recording_update  # type: ignore[method-assign]
    sim.run_until(clock.monotonic() + 20)
    assert sim.leaders() == ["a"]
    client_a.down = True  # a can no longer reach the API server
    sim.run_until(clock.monotonic() + 60, until=b.is_leader)
    assert "a" in sim.lost_at and a.lost
    last_ok = renew_starts[-1]
    # The fake clock does not move during a call, so the record's renewTime is last_ok.
    assert sim.lost_at["a"] < last_ok + LEASE
    assert sim.lost_at["a"] <= last_ok + RENEW
    assert b.is_leader()
    assert sim.started_at["b"] > sim.lost_at["a"]
    # A lost elector is finished: it never tries again even when the API comes back.
    client_a.down = False
    assert a.tick() is None and not a.is_leader()


def test_fence_closes_at_renew_deadline_even_if_elector_is_stuck() -> None:
    clock = FakeClock(1000.0)
    client = FakeClient()
    lost: list[float] = []
    el = LeaderElector(
        client, cfg("a"), clock=clock, on_stopped_leading=lambda: lost.append(clock.monotonic())
    )
    start = clock.monotonic()
    assert el.tick() == RETRY
    assert el.is_leader()
    clock.step(RENEW - 0.001)
    assert el.is_leader()
    clock.step(0.001)
    # No tick ran (the elector thread could be hung in a request): the fence is closed anyway.
    assert not el.is_leader()
    assert el.check_deadline() is True
    assert lost == [start + RENEW]
    assert el.check_deadline() is False  # only reported once


def test_conflicting_update_loses_the_race() -> None:
    clock = FakeClock(1000.0)
    store = FakeApiStore()
    a = LeaderElector(FakeClient(store), cfg("a"), clock=clock, jitter=lambda: 0.0)
    b_client = FakeClient(store)
    b = LeaderElector(b_client, cfg("b"), clock=clock, jitter=lambda: 0.0)
    # Make an expired lease held by a dead "old" holder.
    FakeClient(store).create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "lease", "namespace": "ns"},
            "spec": {"holderIdentity": "old", "leaseDurationSeconds": 15, "leaseTransitions": 4},
        }
    )
    assert a.tick() is not None and b.tick() is not None  # both observe the record now
    clock.step(LEASE + 0.1)
    orig_update = b_client.update

    def racing_update(obj: dict[str, Any]) -> dict[str, Any]:
        a.tick()  # a writes between b's read and b's write
        return orig_update(obj)

    b_client.update = racing_update  # type: ignore[method-assign]
    b.tick()
    assert a.is_leader() and not b.is_leader()
    assert "modified" in (b.last_error or "")
    lease = b_client.lease()
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseTransitions"] == 5


def test_api_errors_while_acquiring_are_retried_with_jitter() -> None:
    clock = FakeClock(1000.0)
    client = FakeClient()
    client.down = True
    el = LeaderElector(client, cfg("a"), clock=clock, jitter=lambda: 1.0)
    assert el.tick() == pytest.approx(RETRY * 2.2)
    assert not el.is_leader() and "partitioned" in (el.last_error or "")
    client.down = False
    assert el.tick() == RETRY and el.is_leader()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"lease_duration": 10.0, "renew_deadline": 10.0}, "lease_duration"),
        ({"renew_deadline": 2.4, "retry_period": 2.0}, "renew_deadline"),
        ({"retry_period": 0.0}, "retry_period must be > 0"),
        ({"lease_duration": -1.0}, "lease_duration must be > 0"),
    ],
)
def test_invalid_durations_are_rejected(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElectionConfig(**kw)


def test_defaults_are_controller_runtime_defaults_and_enabled_needs_a_lease() -> None:
    c = LeaderElectionConfig()
    assert (c.lease_duration, c.renew_deadline, c.retry_period) == (15.0, 10.0, 2.0)
    LeaderElectionConfig(renew_deadline=2.41, retry_period=2.0, lease_duration=3.0)
    with pytest.raises(ValueError, match="lease_name"):
        LeaderElectionConfig(enabled=True, lease_namespace="ns")
    with pytest.raises(ValueError, match="lease_namespace"):
        LeaderElector(FakeClient(), LeaderElectionConfig(enabled=True, lease_name="l"))


def test_micro_time_format() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    dt = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert format_micro_time(dt) == "2026-01-02T03:04:05.000006Z"
    other = dt.astimezone(timezone(timedelta(hours=2)))
    assert format_micro_time(other) == "2026-01-02T03:04:05.000006Z"


def test_leader_that_sees_another_holder_steps_down_at_once() -> None:
    clock = FakeClock(1000.0)
    client = FakeClient()
    lost: list[float] = []
    el = LeaderElector(
        client, cfg("a"), clock=clock, on_stopped_leading=lambda: lost.append(clock.monotonic())
    )
    assert el.tick() == RETRY and el.is_leader()
    lease = client.lease()
    assert lease is not None
    lease["spec"]["holderIdentity"] = "intruder"
    client.update(lease)
    clock.step(RETRY)
    assert el.tick() is None
    assert not el.is_leader() and el.lost and lost == [clock.monotonic()]
    assert "intruder" in (el.last_error or "")
