"""The real manager process against real workload controllers: rollouts, scale to zero, restarts.

On the control plane every pod is made by the real ReplicaSet controller, scheduled by the real
scheduler and made Ready by kwok after the delay its annotation asks for; on the embedded server
the simulator plays those parts and honours the same annotation. The restart of kube-apiserver
can only happen on the real control plane.

Decisions come from the fake decision server (Custom provider), so each test states exactly what
the operator is asked to do and checks what the cluster shows, polling with deadlines.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.conftest import LLMSCALER, decided_scaler, deployment
from test.integration.e2e.harness import ManagerProcess, PeriodicSampler, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

READY_DELAY = "pod-ready.stage.kwok.x-k8s.io/delay"


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _dep(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get("apps/v1", "Deployment", name, ns)  # type: ignore[no-any-return]


def _ready(kube: Any, ns: str, name: str, replicas: int) -> bool:
    d = _dep(kube, ns, name)
    status = d.get("status") or {}
    return bool(
        d["spec"]["replicas"] == replicas
        and status.get("observedGeneration") == d["metadata"]["generation"]
        and (status.get("readyReplicas") or 0) == replicas
        and (status.get("updatedReplicas") or 0) == replicas
        and (status.get("replicas") or 0) == replicas
    )


def _deploy(kube: Any, ns: str, name: str, replicas: int) -> None:
    kube.create(deployment(name, ns, replicas))
    wait_for(lambda: _ready(kube, ns, name, replicas), timeout=60, what=f"{name} ready")


def _live_pods(kube: Any, ns: str, app: str) -> list[dict[str, Any]]:
    pods = kube.list("v1", "Pod", ns, label_selector=f"app={app}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def _condition(kube: Any, ns: str, name: str, ctype: str) -> dict[str, Any] | None:
    obj = kube.get(LLMSCALER, "LLMScaler", name, ns)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c  # type: ignore[no-any-return]
    return None


@attrs.define
class Sample:
    at: float
    generation: int
    spec_replicas: int
    observed: int
    replicas: int
    updated: int
    ready: int


class DeploymentWatcher(PeriodicSampler):
    """Samples one Deployment every 100 ms: what the cluster showed, and when."""

    interval = 0.1

    def __init__(self, kube: Any, ns: str, name: str) -> None:
        super().__init__()
        self.kube, self.ns, self.name = kube, ns, name
        self.samples: list[Sample] = []

    def sample(self) -> None:
        d = _dep(self.kube, self.ns, self.name)
        st = d.get("status") or {}
        self.samples.append(
            Sample(
                at=time.monotonic(),
                generation=d["metadata"]["generation"],
                spec_replicas=d["spec"]["replicas"],
                observed=st.get("observedGeneration") or 0,
                replicas=st.get("replicas") or 0,
                updated=st.get("updatedReplicas") or 0,
                ready=st.get("readyReplicas") or 0,
            )
        )


def test_rollout_guard_holds_scaling_until_slow_new_pods_are_ready(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    """A template change rolls out pods that take seconds to become Ready (an LLM loading its
    weights); the decision to scale up arrives mid-rollout and waits for the rollout to end."""
    ns, app, service = namespace, "rolling", "svc-roll-" + namespace
    _deploy(kube, ns, app, 2)
    kube.create(decided_scaler(decisions, "roll", ns, app, 2, service_id=service, max_replicas=6))
    wait_for(
        lambda: (_condition(kube, ns, "roll", "ScalingActive") or {}).get("status") == "True",
        timeout=30,
        what="the scaler to evaluate at 2 replicas",
        diagnostics=manager.logs,
    )
    with DeploymentWatcher(kube, ns, app) as watcher:
        patched = kube.patch(
            "apps/v1",
            "Deployment",
            app,
            {
                "spec": {
                    "template": {
                        "metadata": {"annotations": {READY_DELAY: "4s", "rev": "2"}},
                    }
                }
            },
            ns,
        )
        rollout_generation = patched["metadata"]["generation"]
        decisions.set_decision(service, 4, namespace=ns)
        held = wait_for(
            lambda: (
                (c := _condition(kube, ns, "roll", "AbleToScale"))
                and c.get("reason") == "RolloutInProgress"
                and c
            ),
            timeout=30,
            what="AbleToScale=False RolloutInProgress while new pods load",
            diagnostics=manager.logs,
        )
        assert held["status"] == "False", held
        wait_for(
            lambda: _ready(kube, ns, app, 4),
            timeout=90,
            what="the scale-up to 4 once the rollout has finished",
            diagnostics=manager.logs,
        )
    # While the template's rollout was visibly in progress, spec.replicas never moved.
    rolling = [
        s
        for s in watcher.samples
        if s.generation == rollout_generation
        and (s.observed < s.generation or s.updated < s.spec_replicas or s.replicas > s.updated)
    ]
    assert rolling, "the rollout was never observed in progress"
    assert all(s.spec_replicas == 2 for s in rolling), rolling
    # The rollout really was slow (pods honoured the 4 s cold start), so the hold mattered.
    assert rolling[-1].at - rolling[0].at >= 3.0, (rolling[0], rolling[-1])
    scaled = [s for s in watcher.samples if s.spec_replicas == 4]
    assert scaled and scaled[0].at >= rolling[-1].at


def test_scale_to_zero_then_wake(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    """minReplicas 0: a decision of 0 removes every pod; a later decision wakes the fleet."""
    ns, app, service = namespace, "sleepy", "svc-zero-" + namespace
    _deploy(kube, ns, app, 2)
    kube.create(
        decided_scaler(
            decisions,
            "zero",
            ns,
            app,
            0,
            service_id=service,
            min_replicas=0,
            max_replicas=4,
            scale_down={"stabilizationWindowSeconds": 0},
        )
    )
    wait_for(
        lambda: _dep(kube, ns, app)["spec"]["replicas"] == 0 and not _live_pods(kube, ns, app),
        timeout=60,
        what="scale to zero: spec.replicas 0 and no pods left",
        diagnostics=manager.logs,
    )
    wait_for(
        lambda: (
            (kube.get(LLMSCALER, "LLMScaler", "zero", ns).get("status") or {}).get(
                "currentReplicas"
            )
            == 0
        ),
        timeout=30,
        what="status.currentReplicas 0",
    )
    decisions.set_decision(service, 3, namespace=ns)
    wait_for(
        lambda: _ready(kube, ns, app, 3),
        timeout=60,
        what="wake from zero to 3 ready replicas",
        diagnostics=manager.logs,
    )
    assert len(_live_pods(kube, ns, app)) == 3


def _refused(manager: ManagerProcess) -> int:
    """How many of the manager's API connection attempts were refused so far (from its log)."""
    try:
        text = manager.log_path.read_text(errors="replace")
    except OSError:
        return 0
    return text.count("Connection refused")


@pytest.mark.envtest_controlplane("kills and restarts kube-apiserver")
def test_kube_apiserver_killed_and_restarted_loses_no_decision(
    envtest: Any, kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    """kube-apiserver dies (SIGKILL) under a running manager; a decision made while it is down
    is applied once it is back, and the manager's watches recover: a scaler created after the
    restart is reconciled too. The manager neither exits nor needs a restart."""
    ns, service = namespace, "svc-restart-" + namespace
    _deploy(kube, ns, "before", 1)
    kube.create(decided_scaler(decisions, "before", ns, "before", 2, service_id=service))
    wait_for(lambda: _ready(kube, ns, "before", 2), timeout=60, what="before at 2")

    plane = envtest.controlplane
    refused_before = _refused(manager)
    plane.components["kube-apiserver"].kill()
    decisions.set_decision(service, 3, namespace=ns)  # decided while the API is down
    # Stay down until the manager has tried, and failed, to reach the API a few times.
    wait_for(
        lambda: _refused(manager) >= refused_before + 3,
        timeout=30,
        what="the manager to hit the dead API server",
        diagnostics=manager.logs,
    )
    assert manager.proc is not None and manager.proc.poll() is None, manager.logs()
    plane.components["kube-apiserver"].start()
    plane.wait_apiserver_ready()

    wait_for(
        lambda: _dep(kube, ns, "before")["spec"]["replicas"] == 3,
        timeout=90,
        what="the decision made during the outage applied after the restart",
        diagnostics=manager.logs,
    )
    _deploy(kube, ns, "after", 1)
    kube.create(decided_scaler(decisions, "after", ns, "after", 2, service_id=service + "-b"))
    wait_for(
        lambda: _dep(kube, ns, "after")["spec"]["replicas"] == 2,
        timeout=90,
        what="a scaler created after the restart (the watches recovered)",
        diagnostics=manager.logs,
    )
    assert manager.proc is not None and manager.proc.poll() is None, manager.logs()
