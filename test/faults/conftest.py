"""Fixtures of the fault campaign: the real manager process, and the results table at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from test.faults.campaign import (
    API_REGISTRY,
    METRICS_TIMEOUT,
    REGISTRY,
    RESULTS_FILE,
    counts,
    write_results,
)
from test.integration.e2e.harness import ManagerProcess, running_manager


@pytest.fixture(scope="module")
def manager(envtest: Any, kubeconfig_path: str) -> Iterator[ManagerProcess]:
    """The real manager binary, watching every namespace, with a 1 s metrics timeout."""
    args = ("--max-concurrent-reconciles", "8", "--metrics-timeout", str(METRICS_TIMEOUT))
    with running_manager(kubeconfig_path, *args) as proc:
        yield proc


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REGISTRY.results and not API_REGISTRY.results:
        return
    write_results()
    tried, survived = counts()
    terminalreporter.write_sep("=", "fault campaign")
    terminalreporter.write_line(REGISTRY.table())
    terminalreporter.write_line(API_REGISTRY.table())
    terminalreporter.write_line(
        f"fault campaign: {tried} fault runs, {survived} survived; table in {RESULTS_FILE}"
    )
