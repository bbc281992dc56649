"""The benchmark harness at toy size: it must produce sane figures, or `make bench` lies.

Runs the real manager against the bench API server and fake Prometheus processes with 20
scalers at syncPeriodSeconds 2 for two measured periods, then 20 scalers sharing 2 queries.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import harness as h

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.envtest_embedded(
        "the benchmark drives the embedded server in a process of its own, sized for 10,000 scalers"
    ),
]

PERIOD = 2


def test_capacity_harness_counts_reconciles_and_sees_no_steady_state_writes(
    tmp_path: Path,
) -> None:
    s = h.Scenario(n=20, sync_period=PERIOD, per_namespace=10)
    with h.Cluster(tmp_path) as cluster:
        h.populate(cluster, s, progress=lambda _: None)
        m = h.run_controller(
            cluster,
            s,
            lambda: h.start_manager(cluster, tmp_path),
            periods=2,
            reaction_sample=5,
            progress=lambda _: None,
            warmup_timeout=30,
        )
    assert m.reconcile_source == "controller_runtime_reconcile_total"
    # 20 scalers x 2 periods; a few land on either side of the window edges
    assert 20 <= m.reconciles <= 60, m
    assert m.reconciles_per_second > 0
    assert m.api_writes_per_reconcile == 0.0, m.api_requests
    assert m.prom_per_reconcile == pytest.approx(1.0, abs=0.2)  # unique queries: no sharing
    assert m.lateness_samples >= 20
    assert math.isfinite(m.lateness_p99) and -0.5 < m.lateness_p50 < 1.0, m
    assert m.cpu_seconds > 0 and m.cpu_ms_per_reconcile > 0
    assert 10 < m.peak_rss_mib < 1024
    assert m.reaction is not None
    assert m.reaction["samples"] == 5 and m.reaction["missed"] == 0, m.reaction
    assert 0 < m.reaction["p99"] < PERIOD + 2.0, m.reaction


def test_identical_queries_are_coalesced(tmp_path: Path) -> None:
    s = h.Scenario(n=20, sync_period=PERIOD, per_namespace=10, distinct_queries=2)
    with h.Cluster(tmp_path) as cluster:
        h.populate(cluster, s, progress=lambda _: None)
        m = h.run_controller(
            cluster,
            s,
            lambda: h.start_manager(cluster, tmp_path),
            periods=2,
            progress=lambda _: None,
            warmup_timeout=30,
        )
    assert m.reconciles >= 20
    assert m.prom_distinct_queries == 2
    # 20 scalers per period would be 20 queries without coalescing
    assert m.prom_per_period <= 4, m
