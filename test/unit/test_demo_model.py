"""The demo's traffic model: the story must actually call for a scale-up and a scale-down."""

from __future__ import annotations

import math

from demo.model import LoadCurve, next_warmth, pod_metrics


def test_load_curve_bursts_then_falls_back_to_base() -> None:
    curve = LoadCurve(duration=60, base=4, peak=40)
    assert curve.at(0) == 4
    assert curve.at(20) > 35  # plateau
    assert curve.at(59) == 4
    # monotone rise during the ramp
    ramp = [curve.at(t) for t in (6.5, 8, 10, 12, 14.5)]
    assert ramp == sorted(ramp)


def test_pod_metrics_overload_waits_and_fills_cache() -> None:
    m = pod_metrics(40, ["a"], {}, capacity=8)
    assert m["a"].running == 8
    assert m["a"].waiting == 32
    assert m["a"].kv_cache_usage > 0.85


def test_warm_pods_take_more_traffic_than_cold_ones() -> None:
    m = pod_metrics(12, ["warm", "cold"], {"warm": 0.9, "cold": 0.0}, capacity=8)
    assert m["warm"].running > m["cold"].running
    assert m["warm"].kv_cache_usage > m["cold"].kv_cache_usage


def test_no_ready_pods_means_no_metrics() -> None:
    assert pod_metrics(10, [], {}) == {}


def test_warmth_relaxes_towards_usage() -> None:
    w = next_warmth(0.0, 1.0, dt=10.0, tau=10.0)
    assert math.isclose(w, 1 - math.exp(-1), rel_tol=1e-9)
    assert next_warmth(0.5, 0.5, dt=1.0) == 0.5
