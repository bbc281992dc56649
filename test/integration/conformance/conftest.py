"""Both servers at once for the conformance module: one embedded ``Environment`` and one real
``ControlPlane`` (with its workload tier), driven by the control plane's own kubectl 1.36.3.

The session's usual ``envtest`` fixture runs a test on one backend at a time; a conformance
check needs the two side by side, so this module starts its own pair and stops it afterwards.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import kubernetes.config
import pytest

from llmscaler_runtime.envtest import Environment

from .framework import CHECKS, CRD_DIR, HERE, Report, Server

#: Pod start-up on the embedded side; the real side uses the control plane's default.
POD_STARTUP_SECONDS = 0.5

_REPORT_KEY = pytest.StashKey[Report]()


def _server(name: str, kubectl: str, kubeconfig: str, cache: str) -> Server:
    api = kubernetes.config.new_client_from_config(config_file=kubeconfig)
    return Server(name, kubectl, kubeconfig, api, cache)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Server, Server]]:
    """(embedded, real); the whole module is skipped when the control plane is not built."""
    from llmscaler_runtime.envtest.controlplane import ControlPlane, MissingBinaries

    try:
        cp = ControlPlane([str(CRD_DIR)], workloads=True)
    except MissingBinaries as exc:
        pytest.skip(str(exc))
    env = Environment(
        [str(CRD_DIR)], simulate_workloads=True, pod_startup_seconds=POD_STARTUP_SECONDS
    )
    with tempfile.TemporaryDirectory(prefix="conformance-kubectl-") as tmp:
        try:
            # Both on this thread: the control plane's children die with the thread that
            # started them (PR_SET_PDEATHSIG), so a worker thread must not start it.
            env.start()
            cp.start()
            kubectl = str(cp.assets["kubectl"])
            embedded = _server("embedded", kubectl, env.kubeconfig_path, f"{tmp}/embedded")
            real = _server("real", kubectl, cp.kubeconfig_path, f"{tmp}/real")
            try:
                yield embedded, real
            finally:
                embedded.api.close()
                real.api.close()
        finally:
            cp.stop()
            env.stop()


@pytest.fixture(scope="module")
def report(request: pytest.FixtureRequest) -> Iterator[Report]:
    """The module's results; written to RESULTS.md when every check ran and passed."""
    found = Report()
    request.config.stash[_REPORT_KEY] = found
    yield found
    if found.complete():
        (HERE / "RESULTS.md").write_text(found.markdown())


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    found = config.stash.get(_REPORT_KEY, None)
    if found is not None and found.results:
        terminalreporter.write_line(found.summary())
        if not found.complete() and len(found.results) < len(CHECKS):
            terminalreporter.write_line(
                f"conformance: partial run ({len(found.results)} of {len(CHECKS)} checks); "
                "RESULTS.md not rewritten"
            )
