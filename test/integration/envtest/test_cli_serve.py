"""``python -m llmscaler_runtime.envtest serve``: start as a subprocess, use it, stop it cleanly."""

from __future__ import annotations

import json
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


def _controlplane_kubectl() -> str:
    from llmscaler_runtime.envtest.controlplane import MissingBinaries, find_binaries

    try:
        return str(find_binaries(["kubectl", "kube-apiserver", "etcd"])["kubectl"])
    except MissingBinaries as exc:
        pytest.skip(str(exc))


def test_serve_controlplane_runs_the_real_server_and_leaves_nothing_behind(tmp_path: Path) -> None:
    import psutil

    kubectl = _controlplane_kubectl()
    kc = tmp_path / "kubeconfig"
    crds = Path(__file__).resolve().parents[3] / "config" / "crd" / "bases"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llmscaler_runtime.envtest",
            "serve",
            "--backend",
            "controlplane",
            "--crd",
            str(crds),
            "--kubeconfig-out",
            str(kc),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        _wait_file(kc, proc, timeout=120)
        children = psutil.Process(proc.pid).children(recursive=True)
        names = sorted(c.name() for c in children)
        assert names == ["etcd", "kube-apiserver"], names
        version = subprocess.run(
            [kubectl, "--kubeconfig", str(kc), "version", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert version.returncode == 0, version.stderr
        server = json.loads(version.stdout)["serverVersion"]
        assert server["gitVersion"].startswith("v1."), server
        assert server["gitVersion"] != "v0.0.0-master+$Format:%H$"
        crd = subprocess.run(
            [kubectl, "--kubeconfig", str(kc), "get", "crd", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "customresourcedefinition.apiextensions.k8s.io/llmscalers." in crd.stdout
        tmpdirs = {
            arg.split("=", 1)[1].rsplit("/", 1)[0]
            for c in children
            for arg in c.cmdline()
            if arg.startswith("--data-dir=")
        }
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "envtest API server (controlplane) ready at https://127.0.0.1:" in out
    _gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"stray processes after shutdown: {alive}"
    assert tmpdirs and not any(Path(d).exists() for d in tmpdirs), tmpdirs
    assert not kc.exists()


def test_serve_controlplane_without_binaries_says_how_to_build_them(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEST_ASSET_", "KUBEBUILDER_ASSETS", "LLMSCALER_CONTROLPLANE_BIN"))
    }
    env["LLMSCALER_CACHE_DIR"] = str(tmp_path / "empty")
    proc = subprocess.run(
        [sys.executable, "-m", "llmscaler_runtime.envtest", "serve", "--backend", "controlplane"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "real control plane unavailable" in lines[0]
    assert "make controlplane" in lines[0]
