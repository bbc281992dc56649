"""Pausing by annotation (issue 14, item 3), with the real manager process on each API backend.

The Custom provider drives exact replica counts. "Nothing was written" is asserted only after
evidence that the manager kept evaluating: a control scaler in the same manager, on the same
one-second period, follows a new decision first. A write to the paused target would bump its
``metadata.generation`` (any spec change does, a status change does not), and a status write
the scaler's ``resourceVersion``, so those two numbers are the proof.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.conftest import LLMSCALER, decided_scaler, deployment
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration]

PAUSED = "autoscaling.modelsphere.dev/paused"
PAUSED_REPLICAS = "autoscaling.modelsphere.dev/paused-replicas"


def _dep(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get("apps/v1", "Deployment", name, ns)  # type: ignore[no-any-return]


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(_dep(kube, ns, name)["spec"]["replicas"])


def _scaler(kube: Any, ns: str, name: str) -> dict[str, Any]:
    return kube.get(LLMSCALER, "LLMScaler", name, ns)  # type: ignore[no-any-return]


def _reason(kube: Any, ns: str, name: str, ctype: str) -> str | None:
    for c in _scaler(kube, ns, name).get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return str(c.get("reason"))
    return None


def _annotate(kube: Any, ns: str, name: str, **annotations: str | None) -> None:
    body = {"metadata": {"annotations": annotations}}
    kube.patch(LLMSCALER, "LLMScaler", name, body, ns, patch_type="merge")


def _deploy(kube: Any, ns: str, name: str, replicas: int) -> None:
    kube.create(deployment(name, ns, replicas))


def _until(kube: Any, ns: str, name: str, n: int, manager: ManagerProcess, what: str) -> None:
    wait_for(
        lambda: _replicas(kube, ns, name) == n,
        timeout=30,
        what=what,
        diagnostics=manager.logs,
    )


def _until_reason(
    kube: Any, ns: str, name: str, ctype: str, reason: str, manager: ManagerProcess
) -> None:
    wait_for(
        lambda: _reason(kube, ns, name, ctype) == reason,
        timeout=15,
        what=f"{ctype} reason {reason} on {name}",
        diagnostics=manager.logs,
    )


def test_pause_holds_paused_replicas_sets_once_and_unpause_resumes(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    ns = namespace
    _deploy(kube, ns, "paused", 1)
    _deploy(kube, ns, "control", 1)
    for name in ("paused", "control"):
        kube.create(decided_scaler(decisions, name, ns, name, 3, service_id=f"{ns}-{name}"))

    def decide(n: int) -> None:
        for name in ("paused", "control"):
            decisions.set_decision(f"{ns}-{name}", n, namespace=ns)

    def evaluated(n: int) -> None:
        """The control scaler followed decision n: the manager kept syncing meanwhile."""
        _until(kube, ns, "control", n, manager, f"the control scaler to follow {n}")

    _until(kube, ns, "paused", 3, manager, "the first decision of 3")

    # paused: the status says so once; then nothing at all is written while decisions move
    _annotate(kube, ns, "paused", **{PAUSED: "true"})
    _until_reason(kube, ns, "paused", "AbleToScale", "Paused", manager)
    generation = _dep(kube, ns, "paused")["metadata"]["generation"]
    scaler_rv = _scaler(kube, ns, "paused")["metadata"]["resourceVersion"]
    decide(5)
    evaluated(5)
    assert _replicas(kube, ns, "paused") == 3
    assert _dep(kube, ns, "paused")["metadata"]["generation"] == generation
    assert _scaler(kube, ns, "paused")["metadata"]["resourceVersion"] == scaler_rv
    assert _reason(kube, ns, "paused", "Ready") == "Paused"

    # paused-replicas: set once (it wins over paused), then a hand edit is left alone
    _annotate(kube, ns, "paused", **{PAUSED_REPLICAS: "2"})
    _until(kube, ns, "paused", 2, manager, "the paused-replicas count of 2")
    _until_reason(kube, ns, "paused", "AbleToScale", "PausedReplicas", manager)
    kube.patch("apps/v1", "Deployment", "paused", {"spec": {"replicas": 4}}, ns)
    generation = _dep(kube, ns, "paused")["metadata"]["generation"]
    decide(1)
    evaluated(1)
    assert _replicas(kube, ns, "paused") == 4, "paused-replicas is set once, not enforced"
    assert _dep(kube, ns, "paused")["metadata"]["generation"] == generation

    # a bad value: reported, and still nothing is written
    _annotate(kube, ns, "paused", **{PAUSED_REPLICAS: "lots"})
    _until_reason(kube, ns, "paused", "AbleToScale", "InvalidPausedReplicas", manager)
    decide(2)
    evaluated(2)
    assert _dep(kube, ns, "paused")["metadata"]["generation"] == generation

    # unpause: the next sync follows the decision again
    _annotate(kube, ns, "paused", **{PAUSED: None, PAUSED_REPLICAS: None})
    _until(kube, ns, "paused", 2, manager, "scaling to resume after the annotations go")
    _until_reason(kube, ns, "paused", "Ready", "Scaling", manager)
