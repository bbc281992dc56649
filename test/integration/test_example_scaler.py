"""The README's "build another scaler" example, run for real against the session's cluster.

If the library's public surface (Builder, Manager, predicates, SSA apply, events) changes in a
way that breaks the documented example, this fails instead of the README silently rotting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from examples.annotation_scaler import ANNOTATION, FIELD_MANAGER, setup
from examples.headroom import setup_headroom
from llmscaler_runtime.kube import Client
from llmscaler_runtime.manager import Manager
from llmscaler_runtime.testkit import DecisionServer

pytestmark = pytest.mark.integration


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def deployment(name: str, namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]},
            },
        },
    }


@pytest.fixture
def running_manager(envtest: Any, namespace: str) -> Iterator[Manager]:
    """The example's controller in a real Manager, scoped to the test's namespace."""
    client = envtest.client()
    manager = Manager(
        client,
        namespace=namespace,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        install_signal_handlers=False,
    )
    setup(manager)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(manager.run()), daemon=True)
    thread.start()
    try:
        wait_for("the manager's caches to sync", manager.synced.is_set)
        yield manager
    finally:
        manager.stop()
        thread.join(timeout=30)
        client.close()
    assert not thread.is_alive(), "manager did not stop"
    assert codes == [0]


def replicas(kube: Client, name: str, namespace: str) -> int:
    return int(kube.get("apps/v1", "Deployment", name, namespace)["spec"]["replicas"])


def test_annotation_drives_replicas_through_ssa(
    running_manager: Manager, kube: Client, namespace: str
) -> None:
    kube.create(deployment("web", namespace, {ANNOTATION: "3"}))
    wait_for("scale to 3", lambda: replicas(kube, "web", namespace) == 3)

    dep = kube.get("apps/v1", "Deployment", "web", namespace)
    managers = {m.get("manager") for m in dep["metadata"].get("managedFields") or []}
    assert FIELD_MANAGER in managers, managers

    kube.patch(
        "apps/v1",
        "Deployment",
        "web",
        {"metadata": {"annotations": {ANNOTATION: "1"}}},
        namespace,
    )
    wait_for("scale back to 1", lambda: replicas(kube, "web", namespace) == 1)

    # Someone else resets the field: the controller puts it back (generation changed).
    kube.patch("apps/v1", "Deployment", "web", {"spec": {"replicas": 4}}, namespace)
    wait_for("the annotation to win again", lambda: replicas(kube, "web", namespace) == 1)


def test_bad_annotation_is_reported_and_changes_nothing(
    running_manager: Manager, kube: Client, namespace: str
) -> None:
    kube.create(deployment("api", namespace, {ANNOTATION: "three"}))

    def warned() -> bool:
        events = kube.list("v1", "Event", namespace)["items"]
        return any(
            e.get("reason") == "BadAnnotation" and e["involvedObject"]["name"] == "api"
            for e in events
        )

    wait_for("a BadAnnotation event", warned)
    assert replicas(kube, "api", namespace) == 1


# -- examples/headroom.py: one pipeline step swapped, the rest of LLMScaler unchanged -----------


def test_headroom_recommender_adds_spare_replicas_in_a_real_manager(
    envtest: Any, kube: Client, namespace: str, decision_server: DecisionServer
) -> None:
    client = envtest.client()
    manager = Manager(
        client,
        namespace=namespace,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        install_signal_handlers=False,
    )
    setup_headroom(manager, spare=1)
    thread = threading.Thread(target=manager.run, daemon=True)
    thread.start()
    try:
        kube.create(deployment("llm", namespace, {}))
        decision_server.set_decision("llm", 2, namespace=namespace)
        kube.create(
            {
                "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
                "kind": "LLMScaler",
                "metadata": {"name": "llm", "namespace": namespace},
                "spec": {
                    "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm"},
                    "metricProvider": "Custom",
                    "serverAddress": decision_server.url,
                    "customProvider": {"serviceId": "llm", "namespace": namespace},
                    "minReplicas": 1,
                    "maxReplicas": 5,
                    "syncPeriodSeconds": 1,
                    "retryPeriodSeconds": 1,
                },
            }
        )
        # The decision server asks for 2; the swapped recommender adds one spare.
        wait_for("2 + 1 spare", lambda: replicas(kube, "llm", namespace) == 3, timeout=30)

        # The steps that were not swapped still apply: 5 + 1 spare is clamped to maxReplicas.
        decision_server.set_decision("llm", 5, namespace=namespace)
        wait_for("clamp at 5", lambda: replicas(kube, "llm", namespace) == 5, timeout=30)

        def limited() -> bool:
            scaler = kube.get("autoscaling.modelsphere.dev/v1alpha1", "LLMScaler", "llm", namespace)
            conditions = (scaler.get("status") or {}).get("conditions") or []
            return any(
                c["type"] == "ScalingLimited" and c["reason"] == "TooManyReplicas"
                for c in conditions
            )

        wait_for("ScalingLimited=TooManyReplicas", limited, timeout=30)
    finally:
        manager.stop()
        thread.join(timeout=30)
        client.close()
    assert not thread.is_alive(), "manager did not stop"
