"""The campaign's metric-side rows: Prometheus and decision servers that fail in every way we
know of, against the real manager process on each API server backend. See campaign.py."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from test.faults.campaign import INVARIANTS, Row, RowResult, rows_selected, run_rows
from test.integration.e2e.harness import ManagerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROWS: tuple[Row, ...] = rows_selected()


@pytest.fixture(scope="module")
def campaign(kube: Any, envtest: Any, manager: ManagerProcess) -> dict[str, RowResult]:
    """Every metric row at once, each in a fresh namespace of its own."""
    suffix = secrets.token_hex(3)
    namespaces = {r.name: f"fault-{r.name}-{suffix}" for r in ROWS}
    # (ROWS: every row, or those named in $LLMSCALER_FAULT_ROWS, comma-separated)
    for ns in namespaces.values():
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        return run_rows(
            ROWS,
            kube=kube,
            namespaces=namespaces,
            backend=envtest.backend,
            manager_alive=lambda: manager.proc is not None and manager.proc.poll() is None,
            manager_log=manager.log_path,
        )
    finally:
        for ns in namespaces.values():
            try:
                kube.delete("v1", "Namespace", ns, propagation_policy="Background")
            except Exception:  # best effort: the session's cluster is thrown away anyway
                pass


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_fault_is_survived(row: Any, campaign: dict[str, RowResult]) -> None:
    result = campaign[row.name]
    marks = result.invariants()
    failed = [name for name in INVARIANTS if not marks[name]]
    assert not failed, f"{row.name} ({row.what}) broke {failed}: {result}"
