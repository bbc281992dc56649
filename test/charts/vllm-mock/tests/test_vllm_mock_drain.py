"""The chart's preStop drain script and metrics mock, run for real against 127.0.0.1 endpoints.

Each case runs files/drain.py as the kubelet would (a separate python3 process) and measures how
long it took; the bounds are generous upward (process start on a loaded 2-core machine) but a
script that returned early or ignored a budget fails them.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from llmscaler_runtime.testkit import VllmMetricsExporter

CHART = Path(__file__).resolve().parents[1]
DRAIN = CHART / "files" / "drain.py"
MOCK = CHART / "files" / "metrics_mock.py"
SLACK = 2.5  # upper allowance for interpreter start-up and scheduling


def _start_drain(url: str, sync: float, drain: float, poll: float = 0.1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(DRAIN),
            f"--url={url}",
            f"--endpoint-sync-seconds={sync}",
            f"--drain-seconds={drain}",
            f"--poll-interval={poll}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _run_drain(url: str, sync: float, drain: float) -> tuple[float, str]:
    started = time.monotonic()
    proc = _start_drain(url, sync, drain)
    out, _ = proc.communicate(timeout=sync + drain + 20)
    assert proc.returncode == 0, out  # never blocks the shutdown with a failing hook
    return time.monotonic() - started, out


@pytest.fixture
def pod() -> Iterator[VllmMetricsExporter]:
    with VllmMetricsExporter() as exporter:
        yield exporter


def test_idle_pod_returns_right_after_endpoint_sync(pod: VllmMetricsExporter) -> None:
    pod.set_pod("ns", "app", "p", running=0, waiting=0)
    elapsed, out = _run_drain(pod.url, sync=0.5, drain=10)
    assert 0.5 <= elapsed < 0.5 + SLACK, out  # the sync wait is always taken, the drain is not
    assert "idle" in out


def test_busy_pod_waits_the_whole_drain_budget(pod: VllmMetricsExporter) -> None:
    pod.set_pod("ns", "app", "p", running=2, waiting=0)
    elapsed, out = _run_drain(pod.url, sync=0, drain=1.5)
    assert 1.5 <= elapsed < 1.5 + SLACK, out
    assert "still busy" in out and "2 running" in out


def test_waiting_requests_alone_count_as_busy(pod: VllmMetricsExporter) -> None:
    pod.set_pod("ns", "app", "p", running=0, waiting=3)
    elapsed, out = _run_drain(pod.url, sync=0, drain=1.0)
    assert elapsed >= 1.0 and "3 waiting" in out


def test_endpoint_down_counts_as_busy() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connection refused
        elapsed, out = _run_drain(f"http://127.0.0.1:{port}/metrics", sync=0, drain=1.5)
    assert 1.5 <= elapsed < 1.5 + SLACK, out
    assert "check failed" in out and "idle" not in out


def test_missing_gauges_count_as_busy(pod: VllmMetricsExporter) -> None:
    elapsed, out = _run_drain(pod.url, sync=0, drain=1.0)  # no pods: no vLLM series at all
    assert elapsed >= 1.0 and "not exposed" in out


def test_busy_then_idle_returns_when_idle(pod: VllmMetricsExporter) -> None:
    pod.set_pod("ns", "app", "p", running=1, waiting=1)
    started = time.monotonic()
    proc = _start_drain(pod.url, sync=0, drain=30)
    try:
        assert pod.wait_for_scrapes(3, timeout=10), "drain never polled the endpoint"
        assert proc.poll() is None, "returned while the pod was busy"
        pod.set_pod("ns", "app", "p", running=0, waiting=0)
        went_idle = time.monotonic()
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    elapsed = time.monotonic() - started
    assert proc.returncode == 0
    assert went_idle - started <= elapsed < went_idle - started + SLACK, out
    assert elapsed < 30 and "idle" in out and "busy" in out


def test_bad_arguments_are_refused() -> None:
    run = subprocess.run(
        [sys.executable, str(DRAIN), "--endpoint-sync-seconds=-1", "--drain-seconds=1"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert run.returncode == 2 and "must be a finite number" in run.stderr


def test_metrics_mock_serves_the_values_file_and_follows_changes(tmp_path: Path) -> None:
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"kvCacheUsage": 0.9, "numRequestsWaiting": 4}))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            str(MOCK),
            f"--values-file={values}",
            "--host=127.0.0.1",
            f"--port={port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1).text
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "metrics mock did not start"
                time.sleep(0.05)
        assert 'vllm:kv_cache_usage_perc{model_name="facebook/opt-125m"} 0.9' in text
        assert "vllm:num_requests_waiting{" in text and "} 4.0" in text
        assert "vllm:num_requests_running{" in text
        values.write_text(json.dumps({"kvCacheUsage": 0.1}))
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
        assert 'vllm:kv_cache_usage_perc{model_name="facebook/opt-125m"} 0.1' in text
        values.write_text('{"kvCacheUsage": "high"}')
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).status_code == 500
    finally:
        proc.kill()
        proc.wait(timeout=5)


def test_exposition_parsing_sums_series_and_survives_odd_labels() -> None:
    import importlib.util

    # by path: files/drain.py ships in the chart and its directory (vllm-mock) is no package
    spec = importlib.util.spec_from_file_location("vllm_mock_drain", DRAIN)
    assert spec and spec.loader
    drain = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drain)
    text = "\n".join(
        [
            "# HELP vllm:num_requests_running Requests running.",
            "# TYPE vllm:num_requests_running gauge",
            'vllm:num_requests_running{model_name="a}b",engine="0"} 2.0',
            'vllm:num_requests_running{model_name="say \\"hi\\"",engine="1"} 1.0 1700000000000',
            "vllm:num_requests_waiting 0",
        ]
    )
    assert drain.parse_totals(text) == {
        "vllm:num_requests_running": 3.0,
        "vllm:num_requests_waiting": 0.0,
    }
