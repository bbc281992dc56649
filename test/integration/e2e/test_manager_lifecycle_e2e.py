"""Manager processes coming and going: restarts keep the damping, leadership hands over cleanly."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.conftest import decided_scaler, deployment
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(kube.get("apps/v1", "Deployment", name, ns)["spec"]["replicas"])


def _ready(kube: Any, ns: str, name: str, n: int) -> bool:
    return kube.get("apps/v1", "Deployment", name, ns).get("status", {}).get("readyReplicas") == n


def _requests_for(decisions: DecisionServer, service_id: str) -> list[float]:
    return [r.at for r in decisions.requests if r.service_id == service_id]


def test_restart_does_not_undo_scale_down_stabilization(
    kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    """A fresh manager seeds the scaler's history with the current replica count, so a low
    recommendation right after a restart waits one full stabilization window."""
    ns, app, sid, window = namespace, "restarted", f"restart-{namespace}", 8
    kube.create(deployment(app, ns, 3))
    wait_for(lambda: _ready(kube, ns, app, 3), timeout=30, what="3 ready replicas")
    kube.create(
        decided_scaler(
            decisions,
            app,
            ns,
            app,
            3,
            service_id=sid,
            scale_down={"stabilizationWindowSeconds": window, "behavior": "None"},
        )
    )
    first = ManagerProcess(kubeconfig_path).start()
    try:
        first.wait_ready(timeout=60)
        wait_for(
            lambda: len(_requests_for(decisions, sid)) >= 2,
            timeout=30,
            what="the first manager to evaluate the scaler",
            diagnostics=first.logs,
        )
    finally:
        assert first.stop() == 0, first.logs()

    decisions.set_decision(sid, 1, namespace=ns)
    seen = len(_requests_for(decisions, sid))
    second = ManagerProcess(kubeconfig_path).start()
    try:
        second.wait_ready(timeout=60)
        wait_for(
            lambda: len(_requests_for(decisions, sid)) >= seen + 3,
            timeout=30,
            what="three evaluations by the restarted manager",
            diagnostics=second.logs,
        )
        t_first = _requests_for(decisions, sid)[seen]
        held = _replicas(kube, ns, app)
        elapsed = time.time() - t_first
        assert elapsed < window, f"test too slow to observe the hold ({elapsed:.1f}s)"
        assert held == 3, "scaled down right after a restart: the damping was lost"
        wait_for(
            lambda: _replicas(kube, ns, app) == 1,
            timeout=window + 20,
            what="the scale-down once the window has passed",
            diagnostics=second.logs,
        )
        assert time.time() - t_first >= window - 1.0, "scaled down before the window ended"
    finally:
        assert second.stop() == 0, second.logs()


def _leader_status(proc: ManagerProcess) -> float | None:
    try:
        text = proc.metrics()
    except Exception:
        return None
    m = re.search(r"^leader_election_master_status\{[^}]*\}\s+([0-9.]+)", text, re.M)
    return float(m.group(1)) if m else None


def test_leader_election_one_writer_and_hand_over_on_shutdown(
    kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    """Two managers on one Lease: one leads and scales; when it shuts down it releases the
    Lease and the other takes over well within the lease duration and keeps scaling."""
    ns, app, sid = namespace, "elected", f"elected-{namespace}"
    lease = f"llmscaler-e2e-{namespace}"
    kube.create(deployment(app, ns, 1))
    kube.create(
        decided_scaler(
            decisions,
            app,
            ns,
            app,
            2,
            service_id=sid,
        )
    )
    args = ("--leader-elect", "--leader-election-id", lease, "--leader-election-namespace", ns)
    a = ManagerProcess(kubeconfig_path, *args).start()
    b = ManagerProcess(kubeconfig_path, *args).start()
    try:
        a.wait_ready(timeout=60)
        b.wait_ready(timeout=60)
        wait_for(
            lambda: _replicas(kube, ns, app) == 2,
            timeout=40,
            what="the leader to scale",
            diagnostics=lambda: a.logs() + "\n---\n" + b.logs(),
        )

        def one_leader() -> tuple[ManagerProcess, ManagerProcess] | None:
            sa, sb = _leader_status(a), _leader_status(b)
            if sa == 1.0 and sb == 0.0:
                return a, b
            if sb == 1.0 and sa == 0.0:
                return b, a
            return None

        leader, follower = wait_for(one_leader, timeout=20, what="exactly one leader")
        holder = kube.get("coordination.k8s.io/v1", "Lease", lease, ns)["spec"]["holderIdentity"]
        assert holder, "the Lease names no holder"

        t_stop = time.monotonic()
        assert leader.stop() == 0, leader.logs()
        wait_for(
            lambda: _leader_status(follower) == 1.0,
            timeout=15,
            what="the follower to take over",
            diagnostics=follower.logs,
        )
        took = time.monotonic() - t_stop
        assert took < 15, f"hand-over took {took:.1f}s, longer than the lease duration"
        new_holder = kube.get("coordination.k8s.io/v1", "Lease", lease, ns)["spec"][
            "holderIdentity"
        ]
        assert new_holder and new_holder != holder

        decisions.set_decision(sid, 3, namespace=ns)
        wait_for(
            lambda: _replicas(kube, ns, app) == 3,
            timeout=30,
            what="the new leader to scale",
            diagnostics=follower.logs,
        )
    finally:
        for p in (a, b):
            p.stop()
