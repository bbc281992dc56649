"""pytest fixtures for tests that need a Kubernetes API: ``envtest``, ``kube``, ``namespace``.

Registered by the repository's root conftest. The backends (embedded server, the real control
plane, k3s in Docker, or a cluster from ``LLMSCALER_TEST_KUBECONFIG``; see
:func:`~llmscaler_runtime.envtest.backends.choose_backends`) are chosen once per session and
printed in the report header. Every test that uses ``envtest`` (directly or through ``kube``,
``namespace``, ``kubeconfig_path``) runs once per backend, its id ending in ``[embedded]`` or
``[controlplane]``; each backend starts lazily with the first test that needs it and stops when
pytest moves on to the next, so runs that need no cluster pay nothing.

Markers say where a test cannot run, and why:

* ``@pytest.mark.envtest_embedded``: needs the embedded server itself (fault injection, storage
  access, the simulator's knobs); skipped on the other backends;
* ``@pytest.mark.envtest_controlplane``: needs the real control plane (restarting
  kube-apiserver, ServiceAccount tokens, real controllers); skipped on the others.

A backend that is unavailable (control-plane binaries not built) skips its tests with a one-line
reason. The terminal summary counts the outcomes per backend.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from llmscaler_runtime.envtest.backends import (
    CONTROLPLANE,
    EMBEDDED,
    BackendChoice,
    BackendError,
    ClusterHandle,
    choose_backends,
    start_backend,
)

if TYPE_CHECKING:
    from llmscaler_runtime.kube import Client

#: Pod cold start on the embedded server during tests: long enough to observe Pending, short
#: enough to keep the suite fast.
TEST_POD_STARTUP_SECONDS = 0.5

_CHOICE_KEY = pytest.StashKey[list[BackendChoice] | BackendError]()
_COUNTS_KEY = pytest.StashKey[dict[str, dict[str, int]]]()

#: Marker name -> the backend a test so marked needs, and how a skip names it.
_ONLY_ON = {
    "envtest_embedded": (EMBEDDED, "the embedded API server (fault injection / storage access)"),
    "envtest_controlplane": (CONTROLPLANE, "the real control plane"),
}


def _choices(config: pytest.Config) -> list[BackendChoice]:
    found = config.stash.get(_CHOICE_KEY, None)
    if found is None:
        try:
            found = choose_backends()
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
        "skipped on the other backends",
    )
    config.addinivalue_line(
        "markers",
        "envtest_controlplane: needs the real control plane (kube-apiserver restarts, "
        "ServiceAccount tokens, real controllers); skipped on the other backends",
    )
    config.stash[_COUNTS_KEY] = {}


def pytest_report_header(config: pytest.Config) -> str:
    try:
        return "envtest backends: " + "; ".join(c.describe() for c in _choices(config))
    except BackendError as exc:
        return f"envtest backend: unusable ({exc})"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "envtest" not in metafunc.fixturenames:
        return
    try:
        choices = _choices(metafunc.config)
    except BackendError:
        return  # reported by the fixture, with the reason, for every test that needs it
    metafunc.parametrize(
        "envtest", choices, indirect=True, scope="session", ids=[c.name for c in choices]
    )


def _backend_of(item: pytest.Item) -> BackendChoice | None:
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("envtest") if callspec is not None else None
    return param if isinstance(param, BackendChoice) else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    choice = _backend_of(item)
    if choice is None:
        return
    for marker, (needed, what) in _ONLY_ON.items():
        mark = item.get_closest_marker(marker)
        if mark is not None and choice.name != needed:
            why = mark.kwargs.get("reason") or (mark.args[0] if mark.args else "")
            pytest.skip(f"needs {what}{f': {why}' if why else ''}; this run is on {choice.name}")
    if choice.unavailable:
        pytest.skip(choice.unavailable)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Count each test's outcome under its backend, for the terminal summary."""
    report = yield
    choice = _backend_of(item)
    counted = report.when == "call" or (report.when == "setup" and report.outcome != "passed")
    if choice is not None and counted:
        counts = item.config.stash[_COUNTS_KEY].setdefault(choice.name, {})
        counts[report.outcome] = counts.get(report.outcome, 0) + 1
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    per_backend = config.stash.get(_COUNTS_KEY, {})
    if not per_backend:
        return
    parts = []
    for backend, counts in per_backend.items():
        text = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
        parts.append(f"{backend}: {text}")
    terminalreporter.write_line("tests per envtest backend: " + "; ".join(parts))


def _crd_paths(config: pytest.Config) -> list[str]:
    bases = Path(config.rootpath) / "config" / "crd" / "bases"
    return [str(bases)] if bases.is_dir() else []


@pytest.fixture(scope="session")
def envtest(request: pytest.FixtureRequest) -> Iterator[ClusterHandle]:
    """The cluster of this test's backend, with workloads (pods that become Ready).

    On the embedded backend attribute access falls through to the ``Environment``
    (``envtest.server.faults`` ...); on the real one ``envtest.controlplane`` is the
    ``ControlPlane``; ``envtest.backend`` names the backend in use.
    """
    choice = getattr(request, "param", None)
    if not isinstance(choice, BackendChoice):
        choice = _choices(request.config)[0]
    if choice.unavailable:
        pytest.skip(choice.unavailable)
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
        import time

        from llmscaler_runtime.kube import NotFound, ServerTimeout, TransportError

        # Best effort, but patient: a test that restarted etcd or kube-apiserver may leave the
        # API timing out for a while, and cleanup must not turn that into an error of its own.
        deadline = time.monotonic() + 60
        while True:
            try:
                kube.delete("v1", "Namespace", name, propagation_policy="Background")
                break
            except NotFound:
                break
            except (ServerTimeout, TransportError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
