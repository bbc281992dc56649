"""Fixtures for the end-to-end suite: one real manager process for the module, scalers per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.harness import ManagerProcess, running_manager

LLMSCALER = "autoscaling.modelsphere.dev/v1alpha1"


@pytest.fixture(scope="module")
def manager(envtest: Any, kubeconfig_path: str) -> Iterator[ManagerProcess]:
    """The real manager binary watching every namespace of the embedded cluster."""
    with running_manager(kubeconfig_path, "--max-concurrent-reconciles", "4") as proc:
        yield proc


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    """The test kit's decision server, for modules that drive exact counts with
    :func:`decided_scaler` (a module may define its own instead)."""
    with DecisionServer() as server:
        yield server


def target_deployment(kube: Any, namespace: str, name: str) -> dict[str, Any]:
    """The Deployment as the API server has it now."""
    return kube.get("apps/v1", "Deployment", name, namespace)  # type: ignore[no-any-return]


def deployment(name: str, namespace: str, replicas: int, **labels: str) -> dict[str, Any]:
    pod_labels = {"app": name, **labels}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": pod_labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:latest"}]},
            },
        },
    }


def decided_scaler(
    decisions: Any,
    name: str,
    namespace: str,
    target: str,
    active: int,
    *,
    service_id: str,
    **spec: Any,
) -> dict[str, Any]:
    """A Custom-provider scaler, with the fake decision server answering ``active`` for it."""
    from llmscaler_runtime.testkit.decision_server import FailureMode

    decisions.set_mode(FailureMode.NONE)
    decisions.set_decision(service_id, active, namespace=namespace)
    return scaler(
        name,
        namespace,
        target,
        decisions.url,
        metricProvider="Custom",
        customProvider={"serviceId": service_id, "namespace": namespace},
        **spec,
    )


def scaler(
    name: str,
    namespace: str,
    target: str,
    server_address: str,
    *,
    min_replicas: int = 1,
    max_replicas: int = 5,
    metrics: list[dict[str, str]] | None = None,
    scale_down: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "serverAddress": server_address,
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "syncPeriodSeconds": 1,
        "retryPeriodSeconds": 1,
        **spec,
    }
    if metrics is not None:
        body["metrics"] = metrics
    if scale_down is not None:
        body["scaleDown"] = scale_down
    return {
        "apiVersion": LLMSCALER,
        "kind": "LLMScaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }
