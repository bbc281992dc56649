"""Pausing by annotation and advisory mode (issue 14, items 3 and 7), with the real manager
process on each API backend.

The Custom provider drives exact replica counts. "Nothing was written" is asserted only after
evidence that the manager kept evaluating: a control scaler in the same manager, on the same
one-second period, follows a new decision first, or the decision server has been asked again
several times. A write to the target would bump its ``metadata.generation`` (any spec change
does, a status change does not), a status write the scaler's ``resourceVersion``, and a
victim hint would put a pod-deletion-cost on a pod, so those are the proof.

The first test runs its own manager with ``--advisory`` and must run before the module's
shared manager starts (file order), since two managers would both act on the same scalers.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.scaling.types import DELETION_COST_ANNOTATION
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


def _asked(decisions: DecisionServer, service_id: str) -> int:
    return sum(1 for r in decisions.requests if r.service_id == service_id)


def _evaluated_again(decisions: DecisionServer, service_id: str, times: int) -> None:
    """The scaler asked its decision server ``times`` more times: it kept evaluating."""
    start = _asked(decisions, service_id)
    wait_for(
        lambda: _asked(decisions, service_id) >= start + times,
        timeout=20,
        what=f"{times} more evaluations of {service_id}",
    )


def _events(kube: Any, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in kube.list("v1", "Event", ns)["items"]
        if e.get("involvedObject", {}).get("name") == name and e.get("reason") == reason
    ]


def _advice(kube: Any, ns: str, name: str) -> str:
    for c in _scaler(kube, ns, name).get("status", {}).get("conditions") or []:
        if c.get("type") == "Advisory":
            return f"{c['reason']}: {c['message']}"
    return ""


def _until_advice(kube: Any, ns: str, name: str, text: str, manager: ManagerProcess) -> None:
    wait_for(
        lambda: text in _advice(kube, ns, name),
        timeout=30,
        what=f"the advice {text!r}",
        diagnostics=manager.logs,
    )


def test_the_advisory_flag_makes_the_manager_write_nothing(
    kube: Any, namespace: str, kubeconfig_path: str, decisions: DecisionServer
) -> None:
    ns, sid = namespace, f"{namespace}-flagged"
    _deploy(kube, ns, "flagged", 1)
    kube.create(decided_scaler(decisions, "flagged", ns, "flagged", 3, service_id=sid))
    proc = ManagerProcess(kubeconfig_path, "--advisory", "--watch-namespace", ns).start()
    try:
        proc.wait_ready(timeout=60)
        advice = "WouldRescale: Would set Deployment flagged to 3 replicas (it has 1)"
        _until_advice(kube, ns, "flagged", advice, proc)
        assert _scaler(kube, ns, "flagged")["status"]["desiredReplicas"] == 3
        assert _reason(kube, ns, "flagged", "AbleToScale") == "Advisory"
        generation = _dep(kube, ns, "flagged")["metadata"]["generation"]
        _evaluated_again(decisions, sid, 3)
        assert _replicas(kube, ns, "flagged") == 1
        assert _dep(kube, ns, "flagged")["metadata"]["generation"] == generation
        assert _events(kube, ns, "flagged", "WouldRescale")
    finally:
        assert proc.stop() == 0, proc.logs()


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


def test_an_advisory_scaler_beside_a_real_writer_writes_nothing_and_reports(
    kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    """The advisory scaler is created first, so it is the older one (or wins the tie on name):
    were it weighed by the one-writer rule, the real scaler would be blocked."""
    ns, app = namespace, "shared"
    _deploy(kube, ns, app, 4)
    advisor = decided_scaler(decisions, "advisor", ns, app, 2, service_id=f"{ns}-advisor")
    advisor["spec"]["advisory"] = True
    kube.create(advisor)
    kube.create(decided_scaler(decisions, "incumbent", ns, app, 5, service_id=f"{ns}-incumbent"))

    _until(kube, ns, app, 5, manager, "the real scaler to scale to 5, not blocked")
    advice = "WouldRescale: Would set Deployment shared to 2 replicas (it has 5)"
    _until_advice(kube, ns, "advisor", advice, manager)
    assert _scaler(kube, ns, "advisor")["status"]["desiredReplicas"] == 2
    assert _reason(kube, ns, "advisor", "AbleToScale") == "Advisory"
    assert _reason(kube, ns, "advisor", "Ready") == "Scaling"
    assert _reason(kube, ns, "incumbent", "Ready") == "Scaling"
    # the fifth pod's start changes currentReplicas (a legitimate status write): let it settle
    wait_for(
        lambda: _scaler(kube, ns, "advisor")["status"].get("currentReplicas") == 5,
        timeout=30,
        what="the advisor to report the 5 ready replicas",
        diagnostics=manager.logs,
    )
    generation = _dep(kube, ns, app)["metadata"]["generation"]
    scaler_rv = _scaler(kube, ns, "advisor")["metadata"]["resourceVersion"]
    _evaluated_again(decisions, f"{ns}-advisor", 3)
    assert _replicas(kube, ns, app) == 5
    assert _dep(kube, ns, app)["metadata"]["generation"] == generation
    assert _scaler(kube, ns, "advisor")["metadata"]["resourceVersion"] == scaler_rv
    pods = kube.list("v1", "Pod", ns, label_selector=f"app={app}")["items"]
    assert pods and not [
        p for p in pods if DELETION_COST_ANNOTATION in (p["metadata"].get("annotations") or {})
    ], "an advisory scale-down must not leave pod-deletion-cost hints"
    assert _events(kube, ns, "advisor", "WouldRescale")
    assert not _events(kube, ns, "advisor", "TargetOwnedByAnotherScaler")
