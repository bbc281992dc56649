"""The campaign's API-side rows: the Kubernetes API failing under the running manager.

Each row runs alone (most faults are cluster-wide) on a scaler driven by the fake decision server
(Custom provider: the signal is exact, so any wrong write is the manager's), starting from 3
replicas, and records its invariants in the campaign's table. Rows that need the embedded
server's fault injector or the real control plane's processes say so in their marker.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.faults.campaign import (
    API_REGISTRY,
    LLMSCALER,
    RETRY_SECONDS,
    ApiOutcome,
    condition,
    deployment,
    failure_events,
    poll,
)
from test.integration.e2e.harness import ManagerProcess, running_manager

pytestmark = [pytest.mark.integration, pytest.mark.slow]

START = 3
#: A write that failed is retried at the retry period; one more for the write and sampling.
WRITE_RECOVERY = RETRY_SECONDS + 2.0
#: A broken list/watch recovers at the reflector's next attempt: client-go's backoff (0.8 s,
#: doubling, jittered, capped at 30 s, reset after 2 min without failures), so after a few
#: seconds of outage the next try can be several seconds away. Bound for outages of about 5 s
#: on a manager whose backoff starts fresh (the fixture above).
WATCH_RECOVERY = 15.0


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


@pytest.fixture
def manager(envtest: Any, kubeconfig_path: str) -> Iterator[ManagerProcess]:
    """A fresh manager per row: a reflector's backoff grows with failures and resets only
    after two minutes without one (as client-go's), so one row's API faults must not slow the
    next row's recovery."""
    with running_manager(kubeconfig_path, "--max-concurrent-reconciles", "4") as proc:
        yield proc


def _scaler(
    name: str, ns: str, decisions: DecisionServer, sid: str, behavior: str = "None"
) -> dict[str, Any]:
    return {
        "apiVersion": LLMSCALER,
        "kind": "LLMScaler",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "serverAddress": decisions.url,
            "metricProvider": "Custom",
            "customProvider": {"serviceId": sid, "namespace": ns},
            "minReplicas": 1,
            "maxReplicas": 6,
            "syncPeriodSeconds": 5,
            "retryPeriodSeconds": RETRY_SECONDS,
            "scaleDown": {"stabilizationWindowSeconds": 0, "behavior": behavior},
        },
    }


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(kube.get("apps/v1", "Deployment", name, ns)["spec"]["replicas"])


class Row:
    """One API-side row: a namespace with a Deployment and its scaler at 3 replicas."""

    def __init__(
        self,
        kube: Any,
        namespace: str,
        decisions: DecisionServer,
        name: str,
        *,
        behavior: str = "None",
    ) -> None:
        self.kube, self.ns, self.decisions, self.name = kube, namespace, decisions, name
        self.sid = f"{name}-{secrets.token_hex(3)}"
        decisions.set_decision(self.sid, START, namespace=namespace)
        kube.create(deployment(name, namespace))
        kube.create(_scaler(name, namespace, decisions, self.sid, behavior))
        ok = poll(
            lambda: (
                (condition(kube, namespace, name, "ScalingActive") or {}).get("status") == "True"
            ),
            timeout=60,
        )
        assert ok, f"{name} never became healthy"

    def decide(self, replicas: int) -> None:
        self.decisions.set_decision(self.sid, replicas, namespace=self.ns)

    def replicas(self) -> int:
        return _replicas(self.kube, self.ns, self.name)

    def time_until(self, predicate: Callable[[], bool], bound: float) -> float | None:
        """Seconds until ``predicate`` holds (polled every 0.1 s), None past ``2 * bound``.

        An API error while polling (the API server may be coming back) counts as "not yet"."""

        def holds() -> bool:
            try:
                return predicate()
            except Exception:
                return False

        start = time.monotonic()
        if poll(holds, timeout=2 * bound, interval=0.1):
            return time.monotonic() - start
        return None


def _write_round_trips(kube: Any, ns: str) -> bool:
    name = f"probe-{secrets.token_hex(3)}"
    try:
        kube.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}, namespace=ns
        )
        kube.delete("v1", "ConfigMap", name, ns)
    except Exception:
        return False
    return True


def _record(outcome: ApiOutcome) -> None:
    API_REGISTRY.add(outcome)
    failed = [k for k, v in outcome.checks.items() if not v]
    assert not failed, f"{outcome.name} broke {failed}: {outcome}"


def _alive(manager: ManagerProcess) -> bool:
    return manager.proc is not None and manager.proc.poll() is None


# -- writes failing -----------------------------------------------------------------------------


@pytest.mark.envtest_embedded("answers the manager's writes with errors through the fault injector")
@pytest.mark.parametrize("code", [429, 500, 503, 409])
def test_apply_of_replicas_fails(
    envtest: Any,
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
    code: int,
) -> None:
    row = Row(kube, namespace, decisions, f"apply-{code}")
    faults = envtest.server.faults
    rule = rf"/namespaces/{re.escape(namespace)}/deployments/{row.name}$"
    faults.add_error(rule, code, methods={"PATCH"})
    try:
        row.decide(5)
        evaluated = poll(
            lambda: failure_events(kube, namespace, row.name, "FailedRescale")[1] >= 3, 20
        )
        cond = condition(kube, namespace, row.name, "AbleToScale") or {}
        held = row.replicas() == START
    finally:
        faults.clear()
    took = row.time_until(lambda: row.replicas() == 5, WRITE_RECOVERY)
    _record(
        ApiOutcome(
            f"apply-{code}",
            envtest.backend,
            f"{code} on the server-side apply of spec.replicas",
            {
                "retried_at_retry_period": evaluated,
                "condition": cond.get("status") == "False"
                and cond.get("reason") == "FailedUpdateScale",
                "aggregated_event": failure_events(kube, namespace, row.name, "FailedRescale")[0]
                == 1,
                "nothing_written_meanwhile": held,
                "recovered": took is not None and took <= WRITE_RECOVERY,
                "manager_alive": _alive(manager),
            },
            took,
        )
    )


@pytest.mark.envtest_embedded("answers status patches with 500 through the fault injector")
def test_status_patch_fails(
    envtest: Any, kube: Any, namespace: str, manager: ManagerProcess, decisions: DecisionServer
) -> None:
    row = Row(kube, namespace, decisions, "status-500")
    faults = envtest.server.faults
    faults.add_error(
        rf"/namespaces/{re.escape(namespace)}/llmscalers/{row.name}/status$", 500, methods={"PATCH"}
    )
    try:
        row.decide(4)
        scaled = poll(lambda: row.replicas() == 4, 20)
        in_bounds = 1 <= row.replicas() <= 6
    finally:
        faults.clear()

    def status_caught_up() -> bool:
        st = kube.get(LLMSCALER, "LLMScaler", row.name, namespace).get("status") or {}
        return st.get("desiredReplicas") == 4 and st.get("currentReplicas") == 4

    took = row.time_until(status_caught_up, WRITE_RECOVERY + 5)
    _record(
        ApiOutcome(
            "status-patch-500",
            envtest.backend,
            "500 on every status patch of the scaler",
            {
                "scaling_goes_on": scaled,
                "bounds": in_bounds,
                "recovered": took is not None and took <= WRITE_RECOVERY + 5,
                "manager_alive": _alive(manager),
            },
            took,
        )
    )


# -- reads failing ------------------------------------------------------------------------------


@pytest.mark.envtest_embedded("fails list and watch of LLMScalers through the fault injector")
@pytest.mark.parametrize("code", [429, 500])
def test_list_and_watch_of_scalers_fail(
    envtest: Any,
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
    code: int,
) -> None:
    """The informer cannot list or watch LLMScalers: known scalers go on from the cache; a
    scaler created meanwhile is picked up once the watch is back."""
    row = Row(kube, namespace, decisions, f"listwatch-{code}")
    faults = envtest.server.faults
    faults.add_error(r"/llmscalers$", code, methods={"GET"})
    faults.drop_watches()
    try:
        row.decide(4)
        cached_scaling = poll(lambda: row.replicas() == 4, 20)
        kube.create(deployment(f"{row.name}-late", namespace))
        late_sid = f"late-{row.sid}"
        decisions.set_decision(late_sid, 2, namespace=namespace)
        kube.create(_scaler(f"{row.name}-late", namespace, decisions, late_sid))
        time_down = time.monotonic()
        poll(lambda: time.monotonic() - time_down > 4, 10)  # a 4 s outage, measured
        unseen = _replicas(kube, namespace, f"{row.name}-late") == START
    finally:
        faults.clear()
    took = row.time_until(
        lambda: _replicas(kube, namespace, f"{row.name}-late") == 2, WATCH_RECOVERY
    )
    _record(
        ApiOutcome(
            f"list-watch-{code}",
            envtest.backend,
            f"{code} on every list and watch of LLMScalers, watches cut",
            {
                "known_scalers_keep_scaling": cached_scaling,
                "nothing_unseen_acted_on": unseen,
                "recovered": took is not None and took <= WATCH_RECOVERY,
                "manager_alive": _alive(manager),
            },
            took,
        )
    )


@pytest.mark.envtest_embedded("cuts watch streams and forces 410 Gone through the fault injector")
@pytest.mark.parametrize("gone", [False, True], ids=["cut", "gone-410"])
def test_watch_streams_cut_mid_change(
    envtest: Any,
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
    gone: bool,
) -> None:
    """Every watch is cut (and, with 410, its resume is refused) while the spec changes: the
    manager lists again and acts on the newest spec (maxReplicas lowered under the fleet)."""
    name = "watch-gone" if gone else "watch-cut"
    row = Row(kube, namespace, decisions, name)
    row.decide(6)
    assert poll(lambda: row.replicas() == 6, 20), "the fleet never reached 6"
    faults = envtest.server.faults
    if gone:
        faults.force_gone_on_next_watch(3)
    faults.drop_watches()
    kube.patch(LLMSCALER, "LLMScaler", row.name, {"spec": {"maxReplicas": 4}}, namespace)
    faults.drop_watches()
    took = row.time_until(lambda: row.replicas() == 4, WATCH_RECOVERY)
    stays = took is not None and not poll(lambda: row.replicas() != 4, 2 * RETRY_SECONDS + 1)
    faults.clear()
    _record(
        ApiOutcome(
            f"watch-{'gone-410' if gone else 'cut'}",
            envtest.backend,
            "watch streams cut" + (", resumes answered 410 Gone" if gone else "") + " mid-change",
            {
                "newest_spec_applied": took is not None and took <= WATCH_RECOVERY,
                "stays_within_new_bounds": stays,
                "manager_alive": _alive(manager),
            },
            took,
        )
    )


# -- the control plane itself failing -------------------------------------------------------------


@pytest.mark.envtest_controlplane("kills kube-apiserver or etcd")
@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
def test_control_plane_component_killed(
    envtest: Any,
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    decisions: DecisionServer,
    component: str,
) -> None:
    """SIGKILL of kube-apiserver or etcd under the running manager; a decision made while it is
    down lands once it is back, and nothing is written below the bounds meanwhile."""
    row = Row(kube, namespace, decisions, f"kill-{component}")
    plane = envtest.controlplane
    plane.components[component].kill()
    row.decide(5)
    down_since = time.monotonic()
    poll(lambda: time.monotonic() - down_since > 3, 10)  # a 3 s outage, measured
    # While it is down nothing can be written, so the count is where it was (or, for etcd,
    # kube-apiserver may still answer reads from its watch cache).
    try:
        held_while_down = row.replicas() in (START, 5)
    except Exception:
        held_while_down = True  # no API to ask: nothing could have been written either
    plane.components[component].start()
    # Recovery is the manager's once the API takes writes again. After an etcd restart
    # kube-apiserver answers /readyz before every write path works (writes time out with 504
    # while its etcd client reconnects: ~10 s idle, over 30 s on a loaded machine). That part
    # is kube-apiserver's, so the clock starts when a write round-trips (which also keeps the
    # next test from inheriting the outage).
    plane.wait_apiserver_ready()
    assert poll(lambda: _write_round_trips(kube, namespace), 120, 0.5), "API never writable"
    took = row.time_until(lambda: row.replicas() == 5, WATCH_RECOVERY)
    _record(
        ApiOutcome(
            f"{component}-killed",
            envtest.backend,
            f"{component} SIGKILLed for 3 s under the manager; recovery timed from the API's first"
            " write",
            {
                "decision_applied_after_restart": took is not None,
                "held_while_down": held_while_down,
                "recovered": took is not None and took <= WATCH_RECOVERY,
                "manager_alive": _alive(manager),
            },
            took,
        )
    )
