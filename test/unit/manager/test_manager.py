"""Manager: start order, probes and metrics over HTTP, leader election wiring (one leader,
hand-over on stop, fencing on loss), graceful shutdown on SIGTERM with an in-flight reconcile."""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from llmscaler_runtime.controller.metrics import ControllerMetricsProvider
from llmscaler_runtime.kube import config as kube_config
from llmscaler_runtime.manager import LeaderElectionConfig, Manager
from llmscaler_runtime.manager.server import parse_bind_address
from llmscaler_runtime.testkit import FakeClock
from llmscaler_runtime.workqueue import RateLimitingQueue
from llmscaler_runtime.workqueue.metrics import QueueMetricsProvider

from .fakes import FakeApiStore, FakeCache, FakeClient, FakeRunnable, InFlightController

LOCAL = "127.0.0.1:0"


def wait_for(cond: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def get(port: int | None, path: str) -> tuple[int, str]:
    assert port is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def make(client: FakeClient | None = None, **kw: Any) -> Manager:
    kw.setdefault("cache", FakeCache())
    kw.setdefault("metrics_bind_address", LOCAL)
    kw.setdefault("health_probe_bind_address", LOCAL)
    kw.setdefault("install_signal_handlers", False)
    # The fakes implement only what the manager calls, hence the cast.
    return Manager(cast(Any, client or FakeClient()), **kw)


class Running:
    """Runs a manager on a thread and collects its exit code."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.code = self.mgr.run()

    def join(self, timeout: float = 10.0) -> int | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "manager did not stop"
        return self.code


@pytest.fixture
def stop_all() -> Iterator[list[Manager]]:
    managers: list[Manager] = []
    yield managers
    for m in managers:
        m.stop()


def le(identity: str, *, lease: float = 15.0, renew: float = 10.0, retry: float = 2.0) -> Any:
    return LeaderElectionConfig(
        enabled=True,
        lease_name="llmscaler-leader",
        lease_namespace="ns",
        identity=identity,
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
    )


def test_readyz_waits_for_cache_sync_and_lists_named_checks(stop_all: list[Manager]) -> None:
    cache = FakeCache()
    mgr = make(cache=cache)
    stop_all.append(mgr)
    run = Running(mgr)
    wait_for(cache.started.is_set, what="cache start")
    assert get(mgr.health_port, "/healthz") == (200, "ok")
    status, body = get(mgr.health_port, "/readyz?verbose")
    assert status == 503
    assert "[-]informer-sync failed" in body
    cache.synced.set()
    wait_for(mgr.synced.is_set, what="sync")
    assert get(mgr.health_port, "/readyz") == (200, "ok")
    status, body = get(mgr.health_port, "/readyz?verbose")
    assert status == 200 and "[+]informer-sync ok" in body and "readyz check passed" in body

    def broken() -> None:
        raise RuntimeError("prometheus unreachable")

    mgr.add_readyz_check("prometheus", broken)
    status, body = get(mgr.health_port, "/readyz?verbose")
    assert status == 503 and "[-]prometheus failed: prometheus unreachable" in body
    assert get(mgr.health_port, "/readyz/informer-sync")[0] == 200
    assert get(mgr.health_port, "/readyz/prometheus")[0] == 503
    assert get(mgr.health_port, "/readyz/nope")[0] == 404
    assert get(mgr.health_port, "/other")[0] == 404
    mgr.add_healthz_check("false", lambda: False)
    assert get(mgr.health_port, "/healthz")[0] == 503
    with pytest.raises(ValueError, match="already registered"):
        mgr.add_readyz_check("prometheus", broken)
    mgr.stop()
    assert run.join() == 0
    assert cache.stopped.is_set()


def test_metrics_endpoint_exports_controller_runtime_names(stop_all: list[Manager]) -> None:
    mgr = make(cache=FakeCache(synced=True))
    stop_all.append(mgr)
    assert isinstance(mgr.metrics, ControllerMetricsProvider)
    provider = mgr.metrics.queue_provider("llmscaler")
    assert isinstance(provider, QueueMetricsProvider)
    mgr.metrics.controller_started("llmscaler", 4)
    mgr.metrics.add_active_workers("llmscaler", 1)
    mgr.metrics.observe_reconcile("llmscaler", "requeue_after", 0.02)
    mgr.metrics.inc_reconcile_errors("llmscaler")
    q: RateLimitingQueue[str] = RateLimitingQueue(name="llmscaler", metrics=provider)
    for key in ("a", "b", "a"):
        q.add(key)
    run = Running(mgr)
    wait_for(mgr.synced.is_set)
    status, text = get(mgr.metrics_port, "/metrics")
    assert status == 200
    expected = [
        'controller_runtime_reconcile_total{controller="llmscaler",result="success"} 0.0',
        'controller_runtime_reconcile_total{controller="llmscaler",result="error"} 0.0',
        'controller_runtime_reconcile_total{controller="llmscaler",result="requeue"} 0.0',
        'controller_runtime_reconcile_total{controller="llmscaler",result="requeue_after"} 1.0',
        'controller_runtime_reconcile_errors_total{controller="llmscaler"} 1.0',
        'controller_runtime_terminal_reconcile_errors_total{controller="llmscaler"} 0.0',
        'controller_runtime_reconcile_panics_total{controller="llmscaler"} 0.0',
        'controller_runtime_reconcile_time_seconds_count{controller="llmscaler"} 1.0',
        'controller_runtime_max_concurrent_reconciles{controller="llmscaler"} 4.0',
        'controller_runtime_active_workers{controller="llmscaler"} 1.0',
        'workqueue_adds_total{controller="llmscaler",name="llmscaler"} 2.0',
        'workqueue_depth{controller="llmscaler",name="llmscaler",priority=""} 2.0',
    ]
    for line in expected:
        assert line in text, line
    for name in (
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
    assert get(mgr.metrics_port, "/nope")[0] == 404
    with pytest.raises(ValueError, match="unknown reconcile result"):
        mgr.metrics.observe_reconcile("llmscaler", "ok", 0.1)
    q.shut_down()
    mgr.stop()
    assert run.join() == 0


def test_registries_are_per_manager() -> None:
    a = make(metrics_bind_address="0", health_probe_bind_address="0")
    b = make(metrics_bind_address="0", health_probe_bind_address="0")
    a.metrics.controller_started("c", 1)
    a.metrics.observe_reconcile("c", "success", 0.1)
    assert (
        a.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "c", "result": "success"}
        )
        == 1.0
    )
    assert (
        b.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "c", "result": "success"}
        )
        is None
    )
    assert a.metrics_port is None and a.health_port is None


def test_bind_addresses() -> None:
    assert parse_bind_address("0") is None
    assert parse_bind_address(":8080") == ("", 8080)
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind_address("[::1]:9090") == ("::1", 9090)
    for bad in ("8080", "host:port", ":70000"):
        with pytest.raises(ValueError):
            parse_bind_address(bad)


def test_controllers_start_only_after_cache_sync(stop_all: list[Manager]) -> None:
    events: list[str] = []
    cache = FakeCache()
    mgr = make(cache=cache)
    stop_all.append(mgr)
    ctrl = FakeRunnable("controller", events)
    source = FakeRunnable("source", events, need_leader_election=False)
    mgr.add(ctrl)
    mgr.add(source)
    run = Running(mgr)
    wait_for(source.started.is_set, what="non-leader runnable start")
    assert not ctrl.started.is_set()
    assert not mgr.is_leader()
    cache.synced.set()
    wait_for(ctrl.started.is_set, what="controller start")
    assert mgr.is_leader() and mgr.still_leader()  # no leader election: always the writer
    late = FakeRunnable("late", events)
    mgr.add(late)  # added while running: started at once
    assert late.started.is_set()
    mgr.stop()
    assert run.join() == 0
    assert events.index("stop:controller") < events.index("stop:source")
    assert ctrl.stop_timeouts[0] is not None and ctrl.stop_timeouts[0] > 0
    with pytest.raises(RuntimeError, match="only be called once"):
        mgr.run()


def test_cache_sync_timeout_fails_the_run() -> None:
    mgr = make(cache=FakeCache(), cache_sync_timeout=0.2)
    events: list[str] = []
    ctrl = FakeRunnable("controller", events)
    mgr.add(ctrl)
    assert mgr.run() == 1
    assert not ctrl.started.is_set()
    with pytest.raises(OSError):  # the probe port was released when run() returned
        get(mgr.health_port, "/healthz")


def test_close_releases_ports_of_a_manager_that_never_ran() -> None:
    import socket

    mgr = make()
    port = mgr.metrics_port
    assert port is not None
    mgr.close()
    mgr.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free again


def test_two_managers_one_leads_and_hand_over_on_stop(stop_all: list[Manager]) -> None:
    store = FakeApiStore()
    events: list[str] = []
    mgrs = [
        make(
            FakeClient(store),
            cache=FakeCache(synced=True),
            leader_election=le(n, lease=2.0, renew=1.5, retry=0.2),
        )
        for n in ("a", "b")
    ]
    stop_all.extend(mgrs)
    ctrls = [FakeRunnable(f"ctrl-{i}", events) for i in range(2)]
    for m, c in zip(mgrs, ctrls):
        m.add(c)
    runs = [Running(m) for m in mgrs]
    wait_for(lambda: any(m.elected.is_set() for m in mgrs), what="a leader")
    leader = 0 if mgrs[0].elected.is_set() else 1
    follower = 1 - leader
    hold_until = time.monotonic() + 0.5  # several retry periods: the follower stays one
    while time.monotonic() < hold_until:
        assert [m.is_leader() for m in mgrs].count(True) == 1
        time.sleep(0.02)
    assert ctrls[leader].started.is_set() and not ctrls[follower].started.is_set()
    assert (
        mgrs[leader].registry.get_sample_value(
            "leader_election_master_status", {"name": "llmscaler-leader"}
        )
        == 1.0
    )
    assert (
        mgrs[follower].registry.get_sample_value(
            "leader_election_master_status", {"name": "llmscaler-leader"}
        )
        == 0.0
    )
    stopped_at = time.monotonic()
    mgrs[leader].stop()
    assert runs[leader].join() == 0
    lease = FakeClient(store).lease("ns", "llmscaler-leader")
    assert lease is not None
    wait_for(ctrls[follower].started.is_set, timeout=2.0, what="hand-over")
    # Released, not expired: the follower took over well within one lease duration.
    assert time.monotonic() - stopped_at < 2.0
    assert mgrs[follower].is_leader()
    lease = FakeClient(store).lease("ns", "llmscaler-leader")
    assert lease is not None and lease["spec"]["leaseTransitions"] == 1
    mgrs[follower].stop()
    assert runs[follower].join() == 0


def test_lost_leadership_stops_controllers_at_once_and_exits_1(stop_all: list[Manager]) -> None:
    clock = FakeClock(1000.0)
    client = FakeClient()
    events: list[str] = []
    mgr = make(client, cache=FakeCache(synced=True), leader_election=le("a"), clock=clock)
    stop_all.append(mgr)
    ctrl = FakeRunnable("controller", events)
    mgr.add(ctrl)
    run = Running(mgr)
    wait_for(ctrl.started.is_set, what="leadership")
    assert mgr.still_leader()
    client.down = True  # partitioned from the API server; renewals now fail
    clock.step(9.99)
    assert mgr.still_leader()
    clock.step(0.01)  # renew deadline reached: the fence closes without any renew attempt
    assert not mgr.still_leader() and not mgr.leading
    assert run.join() == 1
    assert mgr.lost_leadership
    assert ctrl.stop_timeouts[0] == 0  # queues shut down at once, no graceful wait
    client.down = False
    lease = client.lease("ns", "llmscaler-leader")
    assert lease is not None and lease["spec"]["holderIdentity"] == "a"  # not released
    assert (
        mgr.registry.get_sample_value("leader_election_master_status", {"name": "llmscaler-leader"})
        == 0.0
    )


def test_sigterm_drains_in_flight_reconcile_then_releases_lease() -> None:
    events: list[str] = []
    ctrl = InFlightController(events)

    class Recording(FakeClient):
        def update(self, obj: dict[str, Any]) -> dict[str, Any]:
            if obj.get("kind") == "Lease" and obj["spec"]["holderIdentity"] == "":
                events.append("lease-released")
            return super().update(obj)

    client = Recording()
    mgr = make(
        client, cache=FakeCache(synced=True), leader_election=le("a"), install_signal_handlers=True
    )
    mgr.add(ctrl)

    def operator() -> None:
        ctrl.in_reconcile.wait(10)
        os.kill(os.getpid(), signal.SIGTERM)
        ctrl.stopped_taking_work.wait(10)
        ctrl.release.set()  # the reconcile finishes only after the stop began

    before = signal.getsignal(signal.SIGTERM)
    helper = threading.Thread(target=operator, daemon=True)
    helper.start()
    assert mgr.run() == 0  # on the main thread, so the SIGTERM handler is installed
    helper.join(5)
    assert events == [
        "controller-stop-called",
        "reconcile-finished",
        "controller-stopped",
        "lease-released",
    ]
    assert signal.getsignal(signal.SIGTERM) is before  # handlers restored


def test_graceful_shutdown_is_bounded_by_the_timeout() -> None:
    events: list[str] = []
    ctrl = InFlightController(events)
    mgr = make(cache=FakeCache(synced=True), graceful_shutdown_timeout=0.3)
    mgr.add(ctrl)
    run = Running(mgr)
    assert ctrl.in_reconcile.wait(5)
    t0 = time.monotonic()
    mgr.stop()
    assert run.join() == 0
    assert time.monotonic() - t0 < 2.0
    assert not ctrl.finished.is_set()
    ctrl.release.set()


def test_event_recorder_is_shared_per_component_and_stopped_with_manager() -> None:
    client = FakeClient()
    mgr = make(client, cache=FakeCache(synced=True))
    rec = mgr.event_recorder("llmscaler")
    assert mgr.event_recorder("llmscaler") is rec
    run = Running(mgr)
    wait_for(mgr.synced.is_set)
    rec.event({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}, "Normal", "R", "m")
    mgr.stop()
    assert run.join() == 0
    assert len(client.of_kind("Event")) == 1  # flushed on shutdown


def test_one_clock_stamps_the_lease_and_events_and_times_the_controllers() -> None:
    from llmscaler_runtime.controller import Builder, Request, Result

    class Noop:
        def reconcile(self, request: Request) -> Result:
            return Result()

    clock = FakeClock(1000.0, wall=1_800_000_000.0)
    client = FakeClient()
    mgr = make(client, cache=FakeCache(synced=True), leader_election=le("a"), clock=clock)
    assert mgr.clock is clock
    ctrl = Builder(mgr).named("noop").complete(Noop())
    assert ctrl.queue.clock is clock
    run = Running(mgr)
    wait_for(mgr.elected.is_set, what="leadership")
    rec = mgr.event_recorder("llmscaler")
    rec.event({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}, "Normal", "R", "m")
    assert rec.flush(5)
    mgr.stop()
    assert run.join() == 0
    [event] = client.of_kind("Event")
    assert event["firstTimestamp"] == "2027-01-15T08:00:00Z"  # the fake wall clock, not time.time
    lease = client.lease("ns", "llmscaler-leader")
    assert lease is not None and lease["spec"]["acquireTime"] == "2027-01-15T08:00:00.000000Z"


def test_default_cache_is_the_informer_cache() -> None:
    from llmscaler_runtime.cache import InformerCache

    mgr = make(cache=None, metrics_bind_address="0", health_probe_bind_address="0")
    assert isinstance(mgr.cache, InformerCache)
    events: list[str] = []
    ctrl = FakeRunnable("controller", events)
    mgr.add(ctrl)
    run = Running(mgr)
    # With no informers requested yet, the real cache is synced at once.
    wait_for(ctrl.started.is_set, what="controller start")
    mgr.stop()
    assert run.join() == 0


def test_real_controller_reports_through_manager_metrics(stop_all: list[Manager]) -> None:
    from llmscaler_runtime.controller import Controller, Request, Result

    clock = FakeClock(1000.0)
    mgr = make(FakeClient(), cache=FakeCache(synced=True), leader_election=le("a"), clock=clock)
    stop_all.append(mgr)
    seen: list[tuple[str, bool]] = []

    class Reconciler:
        def reconcile(self, request: Request) -> Result:
            seen.append((request.name, mgr.still_leader()))  # the fence a writer checks
            return Result()

    ctrl = Controller("llmscaler", Reconciler(), metrics=mgr.metrics, queue_metrics=mgr.metrics)
    mgr.add(ctrl)
    run = Running(mgr)
    wait_for(mgr.elected.is_set, what="leadership")
    ctrl.queue.add(Request("team", "s1"))
    wait_for(lambda: bool(seen), what="a reconcile")
    assert seen == [("s1", True)]

    def success_count() -> float | None:
        return mgr.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "llmscaler", "result": "success"}
        )

    wait_for(lambda: success_count() == 1.0, what="reconcile metric")
    _, text = get(mgr.metrics_port, "/metrics")
    assert 'workqueue_adds_total{controller="llmscaler",name="llmscaler"} 1.0' in text
    assert 'controller_runtime_max_concurrent_reconciles{controller="llmscaler"} 1.0' in text
    assert 'leader_election_master_status{name="llmscaler-leader"} 1.0' in text
    mgr.stop()
    assert run.join() == 0


def test_leader_election_defaults_identity_and_needs_a_namespace_outside_a_cluster() -> None:
    config = LeaderElectionConfig(enabled=True, lease_name="l", lease_namespace="ns")
    mgr = make(leader_election=config, metrics_bind_address="0", health_probe_bind_address="0")
    assert mgr.leader_election.identity  # "<hostname>_<uuid>"
    assert (
        mgr.leader_election.identity
        != make(
            leader_election=config, metrics_bind_address="0", health_probe_bind_address="0"
        ).leader_election.identity
    )
    with pytest.raises(ValueError, match="lease_namespace"):
        make(
            leader_election=LeaderElectionConfig(enabled=True, lease_name="l"),
            metrics_bind_address="0",
            health_probe_bind_address="0",
        )


def test_leader_election_takes_the_pods_namespace_in_a_cluster(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sa_file = tmp_path / "namespace"
    sa_file.write_text("ops\n")
    monkeypatch.setattr(kube_config, "SERVICE_NAMESPACE_FILENAME", str(sa_file))
    mgr = make(
        leader_election=LeaderElectionConfig(enabled=True, lease_name="l"),
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    assert mgr.leader_election.lease_namespace == "ops"


@pytest.mark.parametrize("leader_election", [False, True])
def test_a_runnable_that_fails_to_start_stops_the_manager_with_1(leader_election: bool) -> None:
    events: list[str] = []

    class Broken(FakeRunnable):
        def start(self) -> None:
            raise TimeoutError("informers did not sync")

    kw: dict[str, Any] = {"cache": FakeCache(synced=True)}
    if leader_election:
        kw["leader_election"] = le("a")
    mgr = make(FakeClient(), **kw)
    ok = FakeRunnable("ok", events)
    mgr.add(Broken("broken", events))
    mgr.add(ok)
    run = Running(mgr)
    assert run.join() == 1
    assert not ok.started.is_set()
