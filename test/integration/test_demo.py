"""``make demo`` runs the whole story headless: the fleet grows with the burst and shrinks after."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cluster", ["embedded", "controlplane"])
def test_demo_without_a_tty_scales_up_then_down_and_plots(tmp_path: Path, cluster: str) -> None:
    if cluster == "controlplane":
        from llmscaler_runtime.envtest.controlplane import (
            CORE,
            WORKLOADS,
            MissingBinaries,
            find_binaries,
        )

        try:
            find_binaries(CORE + WORKLOADS)
        except MissingBinaries as exc:
            pytest.skip(str(exc))
    plot = tmp_path / "demo.png"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "demo", "--duration", "30", "--plain"),
            *("--plot", str(plot), "--cluster", cluster),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    m = re.search(r"replicas:\s+(\d+) -> peak (\d+) .* -> (\d+)", out)
    assert m, out
    start, peak, end = (int(g) for g in m.groups())
    assert start == 1
    assert peak >= 3, f"the burst did not scale the fleet up:\n{out}"
    assert end < peak, f"the fleet did not shrink after the burst:\n{out}"
    assert "SuccessfulRescale" in out
    assert "metric source:" in out
    assert f"starting the {cluster} cluster" in out
    assert plot.stat().st_size > 10_000
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
