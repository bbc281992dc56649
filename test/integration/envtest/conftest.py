"""Session-wide embedded API server for the envtest conformance tests, plus kubectl helpers."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.dynamic import DynamicClient

from llmscaler_runtime.envtest import Environment

FIXTURES = Path(__file__).parent / "fixtures"


class Kubectl:
    """Runs the real kubectl against the embedded server."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig

    def run(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)


@pytest.fixture(scope="session")
def env() -> Iterator[Environment]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    with Environment(crd_paths=[str(FIXTURES / "crds")]) as e:
        yield e


@pytest.fixture(scope="session")
def kubectl(env: Environment) -> Kubectl:
    return Kubectl(env.kubeconfig_path)


@pytest.fixture(scope="session")
def api_client(env: Environment) -> Iterator[kubernetes.client.ApiClient]:
    with kubernetes.client.ApiClient(env.start()) as client:
        yield client


@pytest.fixture(scope="session")
def dyn(api_client: kubernetes.client.ApiClient) -> DynamicClient:
    return DynamicClient(api_client)


@pytest.fixture()
def ns(env: Environment) -> str:
    """A fresh namespace per test (left behind; the session server is thrown away at the end)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    env.storage.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def deployment(name: str, replicas: int | None = 2, image: str = "nginx:1.25") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}
