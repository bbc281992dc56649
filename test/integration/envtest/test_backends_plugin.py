"""The pytest plugin end to end: header line, fixtures, and the embedded-only marker, in a
separate pytest process (so the backend choice is made from scratch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

INNER_TESTS = """
import os
import pytest

def test_fixtures(envtest, kube, namespace, kubeconfig_path):
    assert envtest.backend == os.environ["EXPECT_BACKEND"]
    assert os.path.isfile(kubeconfig_path)
    ns = kube.get("v1", "Namespace", namespace)
    assert ns["metadata"]["name"] == namespace
    assert namespace.startswith("test-fixtures-")

@pytest.mark.envtest_embedded
def test_needs_embedded(envtest):
    assert envtest.server.storage is not None
"""


def run_inner(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(INNER_TESTS)
    base = {k: v for k, v in os.environ.items() if not k.startswith("LLMSCALER_TEST_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "llmscaler_runtime.envtest.pytest_plugin",
            "-rs",
            "-p",
            "no:cacheprovider",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def test_embedded_backend_header_and_fixtures(tmp_path: Path) -> None:
    proc = run_inner(tmp_path, {"LLMSCALER_TEST_BACKEND": "embedded", "EXPECT_BACKEND": "embedded"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "envtest backends: embedded (forced by LLMSCALER_TEST_BACKEND)" in proc.stdout
    assert "2 passed" in proc.stdout


def test_kubeconfig_backend_skips_embedded_only_tests(tmp_path: Path, kubeconfig_path: str) -> None:
    # The session's own server stands in for "a real cluster" reached through a kubeconfig.
    proc = run_inner(
        tmp_path, {"LLMSCALER_TEST_KUBECONFIG": kubeconfig_path, "EXPECT_BACKEND": "kubeconfig"}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "envtest backends: kubeconfig (real cluster from LLMSCALER_TEST_KUBECONFIG)" in proc.stdout
    )
    assert "1 passed, 1 skipped" in proc.stdout
    assert "needs the embedded API server" in proc.stdout


def test_unusable_backend_setting_is_reported(tmp_path: Path) -> None:
    proc = run_inner(tmp_path, {"LLMSCALER_TEST_BACKEND": "minikube", "EXPECT_BACKEND": "x"})
    assert proc.returncode != 0
    assert "envtest backend: unusable" in proc.stdout
    assert "expected one of embedded, controlplane, k3s, kubeconfig" in proc.stdout
