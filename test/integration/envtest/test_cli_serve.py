"""``python -m llmscaler_runtime.envtest serve``: start as a subprocess, use it, stop it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmscaler_runtime.envtest.__main__ import main

pytestmark = pytest.mark.integration


def _wait_file(path: Path, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return
        if proc.poll() is not None:
            raise AssertionError(f"serve exited early with {proc.returncode}: {proc.stderr}")
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear within {timeout}s")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_prints_kubeconfig_serves_kubectl_and_exits_zero_on_signal(
    tmp_path: Path, sig: signal.Signals
) -> None:
    kc = tmp_path / "out" / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llmscaler_runtime.envtest",
            "serve",
            "--kubeconfig-out",
            str(kc),
            "--simulate-workloads",
            "--pod-startup-seconds",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        _wait_file(kc, proc)
        got = subprocess.run(
            ["kubectl", "--kubeconfig", str(kc), "get", "ns", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert got.returncode == 0, got.stderr
        assert "namespace/default" in got.stdout.split()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"kubeconfig: {kc}" in out
    assert f"export KUBECONFIG={kc}" in out
    assert not kc.exists()  # it pointed at a server that is gone


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "required"),
        (["serve", "--port", "http"], "not a port number"),
        (["serve", "--port", "70000"], "0..65535"),
        (["serve", "--pod-startup-seconds", "-1"], "seconds must be >= 0"),
        (["serve", "--crd", "/nonexistent/crds"], "no such file or directory"),
        (["serve", "--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_flags_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
