"""pytest fixtures for tests that need a Kubernetes API: ``envtest``, ``kube``, ``namespace``.

Registered by the repository's root conftest. The backend (embedded server, k3s in Docker, or a
real cluster from ``LLMSCALER_TEST_KUBECONFIG``) is chosen once per session, printed in the
report header, and started lazily by the first test that asks for it, so runs that need no
cluster pay nothing. Tests that need the embedded server itself (fault injection, storage
access) are marked ``@pytest.mark.envtest_embedded`` and are skipped elsewhere with the reason.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from llmscaler_runtime.envtest.backends import (
    EMBEDDED,
    BackendChoice,
    BackendError,
    ClusterHandle,
    choose_backend,
    start_backend,
)

if TYPE_CHECKING:
    from llmscaler_runtime.kube import Client

#: Pod cold start on the embedded server during tests: long enough to observe Pending, short
#: enough to keep the suite fast.
TEST_POD_STARTUP_SECONDS = 0.5

_CHOICE_KEY = pytest.StashKey[BackendChoice | BackendError]()


def _choice(config: pytest.Config) -> BackendChoice:
    found = config.stash.get(_CHOICE_KEY, None)
    if found is None:
        try:
            found = choose_backend()
        except BackendError as exc:
            found = exc
        config.stash[_CHOICE_KEY] = found
    if isinstance(found, BackendError):
        raise found
    return found


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "envtest_embedded: needs the embedded API server itself (fault injection, storage); "
        "skipped on k3s and real-cluster backends",
    )


def pytest_report_header(config: pytest.Config) -> str:
    try:
        return f"envtest backend: {_choice(config).describe()}"
    except BackendError as exc:
        return f"envtest backend: unusable ({exc})"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("envtest_embedded") is None:
        return
    choice = _choice(item.config)
    if choice.name != EMBEDDED:
        pytest.skip(
            f"needs the embedded API server (fault injection / storage access); "
            f"this session uses the {choice.name} backend"
        )


def _crd_paths(config: pytest.Config) -> list[str]:
    bases = Path(config.rootpath) / "config" / "crd" / "bases"
    return [str(bases)] if bases.is_dir() else []


@pytest.fixture(scope="session")
def envtest(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """The session's cluster: embedded server with workload simulation, k3s, or a real cluster.

    On the embedded backend attribute access falls through to the ``Environment``
    (``envtest.server.faults`` ...); ``envtest.backend`` names the backend in use.
    """
    choice = _choice(request.config)
    handle = start_backend(
        choice,
        crd_paths=_crd_paths(request.config),
        pod_startup_seconds=TEST_POD_STARTUP_SECONDS,
        simulate_workloads=True,
    )
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"envtest: {choice.describe()} at {handle.url}")
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="session")
def kubeconfig_path(envtest: ClusterHandle) -> str:
    """Path of a kubeconfig for the session's cluster (for kubectl and subprocesses)."""
    return envtest.kubeconfig_path


@pytest.fixture(scope="session")
def kube(envtest: ClusterHandle) -> Iterator[Client]:
    """A ``llmscaler_runtime.kube.Client`` for the session's cluster."""
    client = envtest.client()
    try:
        yield client
    finally:
        client.close()


def _namespace_name(nodeid: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", nodeid.rsplit("::", 1)[-1].lower()).strip("-")
    base = base[:40].rstrip("-") or "t"
    return f"{base}-{secrets.token_hex(3)}"


@pytest.fixture
def namespace(kube: Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test; deleted (without waiting) afterwards."""
    name = _namespace_name(request.node.nodeid)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        from llmscaler_runtime.kube import NotFound

        try:
            kube.delete("v1", "Namespace", name, propagation_policy="Background")
        except NotFound:
            pass
