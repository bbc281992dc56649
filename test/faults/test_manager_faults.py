"""The campaign's manager-side rows: the manager itself killed mid-sync, or frozen while it
leads. Each row runs its own managers (scoped to the row's namespace), so no other manager of
the session writes to the same target. See campaign.py for the table."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.faults.campaign import ApiOutcome, deployment, poll
from test.faults.test_api_faults import Row, _record, _scaler
from test.integration.e2e.harness import ManagerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: A restarted manager: interpreter and imports, cache sync, then its first sync of the scaler.
RESTART_RECOVERY = 15.0
#: The standby takes over once the frozen leader's Lease expires: lease duration (15 s) after it
#: last saw the record change (observed every retry period, 2 s), then one sync.
TAKEOVER_BOUND = 15.0 + 2.0 + 5.0


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def test_manager_sigkilled_mid_sync_and_restarted(
    envtest: Any, kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    """SIGKILL while syncs are in flight (no graceful shutdown); a new manager picks up every
    scaler where it stood, seeds its history from spec.replicas and applies the next decision."""
    own = ManagerProcess(kubeconfig_path, "--watch-namespace", namespace).start()
    try:
        own.wait_ready(timeout=60)
        row = Row(kube, namespace, decisions, "sigkill")
        row.decide(4)
        poll(lambda: row.replicas() == 4, 20)
        own.stop(sig=signal.SIGKILL)
        after_kill = row.replicas()
    finally:
        own.stop()
    row.decide(2)
    again = ManagerProcess(kubeconfig_path, "--watch-namespace", namespace).start()
    try:
        # From the new process's start: its start-up (cache sync) plus one sync.
        took = row.time_until(lambda: row.replicas() == 2, RESTART_RECOVERY)
        again.wait_ready(timeout=60)
        alive = again.proc is not None and again.proc.poll() is None
    finally:
        code = again.stop()
    _record(
        ApiOutcome(
            "manager-sigkill",
            envtest.backend,
            "the manager SIGKILLed mid-sync, then restarted",
            {
                "state_kept": after_kill == 4,
                "resumed": took is not None and took <= RESTART_RECOVERY,
                "manager_alive": alive and code == 0,
            },
            took,
        )
    )


def test_frozen_leader_loses_the_lease_and_writes_nothing_after(
    envtest: Any, kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    """SIGSTOP of the leader: the standby takes the Lease once it expires and scales; when the
    old leader is thawed it must find it lost the Lease and exit 1 without writing."""
    row = None
    lease = f"llmscaler-faults-{namespace}"
    args = (
        "--watch-namespace",
        namespace,
        "--leader-elect",
        "--leader-election-id",
        lease,
        "--leader-election-namespace",
        namespace,
    )
    a = ManagerProcess(kubeconfig_path, *args).start()
    b: ManagerProcess | None = None
    try:
        a.wait_ready(timeout=60)
        row = Row(kube, namespace, decisions, "frozen-leader")
        b = ManagerProcess(kubeconfig_path, *args).start()
        b.wait_ready(timeout=60)
        leader = kube.get("coordination.k8s.io/v1", "Lease", lease, namespace)["spec"]
        assert a.proc is not None
        a.proc.send_signal(signal.SIGSTOP)
        row.decide(5)
        took_over = row.time_until(lambda: row.replicas() == 5, TAKEOVER_BOUND)
        holder = kube.get("coordination.k8s.io/v1", "Lease", lease, namespace)["spec"]
        row.decide(6)
        scaled_again = poll(lambda: row.replicas() == 6, 20)
        a.proc.send_signal(signal.SIGCONT)
        exited = poll(lambda: a.proc is not None and a.proc.poll() is not None, 30)
        code_a = a.proc.returncode
        # The standby keeps control (the thawed leader wrote nothing back: it held decision 3).
        row.decide(2)
        kept = scaled_again and poll(lambda: row.replicas() == 2, 20)
        _record(
            ApiOutcome(
                "leader-frozen",
                envtest.backend,
                "the leader SIGSTOPped; the standby takes over; the old leader thawed",
                {
                    "standby_took_over": took_over is not None
                    and took_over <= TAKEOVER_BOUND
                    and holder["holderIdentity"] != leader["holderIdentity"],
                    "old_leader_exits_1": exited and code_a == 1,
                    "new_leader_keeps_scaling": kept,
                    "manager_alive": b.proc is not None and b.proc.poll() is None,
                },
                took_over,
            )
        )
    finally:
        if a.proc is not None and a.proc.poll() is None:
            a.proc.send_signal(signal.SIGCONT)
        a.stop()
        if b is not None:
            b.stop()


@pytest.mark.envtest_embedded("fails the apply of spec.replicas through the fault injector")
def test_sigkill_between_marking_victims_and_writing_replicas_leaks_no_mark(
    envtest: Any, kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    """The manager marks the newest pod as the scale-down victim, its write of spec.replicas
    fails, and it is SIGKILLed. A later scale-down (after a scale-up added a newer pod) must
    remove the new victim only: the stale mark is taken off, not left to mislead the
    ReplicaSet."""
    from llmscaler_runtime.scaling.types import DELETION_COST_ANNOTATION

    def pods() -> dict[str, dict[str, Any]]:
        items = kube.list("v1", "Pod", namespace, label_selector="app=marks")["items"]
        return {
            p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")
        }

    def cost(pod: dict[str, Any]) -> str | None:
        return (pod["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION)

    first = ManagerProcess(kubeconfig_path, "--watch-namespace", namespace).start()
    try:
        first.wait_ready(timeout=60)
        row = Row(kube, namespace, decisions, "marks", behavior="CacheAware")
        assert poll(lambda: len(pods()) == 3, 30)
        faults = envtest.server.faults
        faults.add_error(rf"/namespaces/{namespace}/deployments/marks$", 503, methods={"PATCH"})
        row.decide(2)
        marked = poll(lambda: any(cost(p) for p in pods().values()), 20)
        stale = next((n for n, p in pods().items() if cost(p)), None)
        first.stop(sig=signal.SIGKILL)
    finally:
        first.stop()
        envtest.server.faults.clear()
    row.decide(4)
    second = ManagerProcess(kubeconfig_path, "--watch-namespace", namespace).start()
    try:
        second.wait_ready(timeout=60)
        grew = poll(lambda: row.replicas() == 4 and len(pods()) == 4, 30)
        newest = max(pods().values(), key=lambda p: p["metadata"]["creationTimestamp"])
        newest_name = newest["metadata"]["name"]
        row.decide(3)
        shrunk = poll(lambda: row.replicas() == 3 and len(pods()) == 3, 30)
        left = pods()
    finally:
        code = second.stop()
    _record(
        ApiOutcome(
            "manager-sigkill-after-marks",
            envtest.backend,
            "SIGKILL after marking the victim, before spec.replicas is written",
            {
                "a_victim_was_marked": marked and stale is not None,
                "nothing_written_meanwhile": row.replicas() == 3 and grew,
                "new_victim_removed": shrunk and newest_name not in left,
                "stale_mark_gone": stale in left and cost(left[stale]) is None,
                "manager_alive": code == 0,
            },
            None,
        )
    )


@pytest.mark.envtest_embedded("delays the initial list of LLMScalers through the fault injector")
def test_slow_initial_list_delays_readiness_not_correctness(
    envtest: Any, kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    """A manager starting while every list of LLMScalers takes 4 s: it reports ready only once
    its caches have synced, and then scales as asked."""
    sid = f"slow-list-{namespace}"
    decisions.set_decision(sid, 4, namespace=namespace)
    kube.create(deployment("slow-list", namespace))
    kube.create(_scaler("slow-list", namespace, decisions, sid))
    faults = envtest.server.faults
    faults.add_latency(r"/llmscalers$", 4.0, methods={"GET"})
    started = time.monotonic()
    proc = ManagerProcess(kubeconfig_path, "--watch-namespace", namespace).start()
    try:
        proc.wait_ready(timeout=60)
        ready_after = time.monotonic() - started
        faults.clear()
        scaled = poll(
            lambda: (
                kube.get("apps/v1", "Deployment", "slow-list", namespace)["spec"]["replicas"] == 4
            ),
            20,
        )
        took = time.monotonic() - started
        alive = proc.proc is not None and proc.proc.poll() is None
    finally:
        faults.clear()
        code = proc.stop()
    _record(
        ApiOutcome(
            "slow-initial-list",
            envtest.backend,
            "every list of LLMScalers takes 4 s while the manager starts",
            {
                "ready_only_after_the_list": ready_after >= 4.0,
                "scaled_once_synced": scaled,
                "manager_alive": alive and code == 0,
            },
            took if scaled else None,
        )
    )
