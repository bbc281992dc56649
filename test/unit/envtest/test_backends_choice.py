"""Backend selection: which Kubernetes the test session uses, and the errors for bad settings."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmscaler_runtime.envtest import backends
from llmscaler_runtime.envtest.backends import (
    BackendError,
    choose_backend,
    choose_backends,
    crd_files,
    docker_reachable,
)
from llmscaler_runtime.envtest.controlplane.assets import CORE, WORKLOADS


def _fake_binaries(directory: Path, names: tuple[str, ...] = CORE + WORKLOADS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        f = directory / name
        f.write_text("#!/bin/sh\n")
        f.chmod(0o755)
    return directory


def _no_cache(tmp_path: Path) -> dict[str, str]:
    """An environment in which no control-plane binaries can be found."""
    return {"LLMSCALER_CACHE_DIR": str(tmp_path / "empty-cache")}


def test_default_runs_embedded_and_the_control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "docker_reachable", lambda timeout=0.5: False)
    bins = _fake_binaries(tmp_path / "bin")
    env = {**_no_cache(tmp_path), "LLMSCALER_CONTROLPLANE_BIN": str(bins)}
    choices = choose_backends(env)
    assert [c.name for c in choices] == ["embedded", "controlplane"]
    assert all(c.unavailable is None for c in choices)


def test_control_plane_without_binaries_is_listed_unavailable_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "docker_reachable", lambda timeout=0.5: False)
    embedded, controlplane = choose_backends(_no_cache(tmp_path))
    assert embedded.unavailable is None
    assert controlplane.unavailable is not None
    assert "\n" not in controlplane.unavailable
    assert "make controlplane" in controlplane.unavailable
    assert "kube-apiserver" in controlplane.unavailable
    assert "unavailable" in controlplane.describe()


def test_required_control_plane_without_binaries_is_an_error(tmp_path: Path) -> None:
    env = {**_no_cache(tmp_path), "LLMSCALER_REQUIRE_CONTROLPLANE": "1"}
    with pytest.raises(BackendError, match="LLMSCALER_REQUIRE_CONTROLPLANE is set but"):
        choose_backends(env)


def test_forced_list_of_backends_keeps_order_and_drops_repeats(tmp_path: Path) -> None:
    bins = _fake_binaries(tmp_path / "bin")
    env = {
        **_no_cache(tmp_path),
        "KUBEBUILDER_ASSETS": str(bins),
        "LLMSCALER_TEST_BACKEND": "controlplane, embedded,controlplane",
    }
    assert [c.name for c in choose_backends(env)] == ["controlplane", "embedded"]
    assert choose_backend(env).name == "controlplane"


def test_a_kubeconfig_cluster_runs_alone(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text("apiVersion: v1\n")
    env = {**_no_cache(tmp_path), "LLMSCALER_TEST_KUBECONFIG": str(kc)}
    assert [c.name for c in choose_backends(env)] == ["kubeconfig"]


def test_kubeconfig_variable_selects_the_real_cluster(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text("apiVersion: v1\n")
    choice = choose_backend({"LLMSCALER_TEST_KUBECONFIG": str(kc)})
    assert (choice.name, choice.kubeconfig) == ("kubeconfig", str(kc))
    assert "LLMSCALER_TEST_KUBECONFIG" in choice.describe()


def test_missing_kubeconfig_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="no such file"):
        choose_backend({"LLMSCALER_TEST_KUBECONFIG": str(tmp_path / "absent")})


def test_forced_backend_must_be_known() -> None:
    with pytest.raises(
        BackendError, match="expected one of embedded, controlplane, k3s, kubeconfig"
    ):
        choose_backend({"LLMSCALER_TEST_BACKEND": "minikube"})


def test_forced_kubeconfig_needs_the_path() -> None:
    with pytest.raises(BackendError, match="needs LLMSCALER_TEST_KUBECONFIG"):
        choose_backend({"LLMSCALER_TEST_BACKEND": "kubeconfig"})


def test_embedded_is_the_fallback_without_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "docker_reachable", lambda timeout=0.5: False)
    choice = choose_backend({})
    assert choice.name == "embedded"
    assert choice.kubeconfig is None


def test_k3s_chosen_when_docker_and_testcontainers_are_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(backends, "docker_reachable", lambda timeout=0.5: True)
    monkeypatch.setattr(backends, "testcontainers_available", lambda: True)
    assert choose_backend({}).name == "k3s"
    # ... unless the embedded server is forced.
    assert choose_backend({"LLMSCALER_TEST_BACKEND": "embedded"}).name == "embedded"


def test_forced_k3s_without_testcontainers_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(backends, "testcontainers_available", lambda: False)
    with pytest.raises(BackendError, match="testcontainers is not installed"):
        choose_backend({"LLMSCALER_TEST_BACKEND": "k3s"})


@pytest.fixture
def fake_docker(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """A unix socket answering like dockerd's /_ping (or not, per the queued answers)."""
    answers: list[bytes] = []
    directory = tempfile.mkdtemp(prefix="dock", dir="/tmp")  # short path: AF_UNIX limit
    path = os.path.join(directory, "d.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(1024)
                conn.sendall(answers.pop(0) if answers else b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    yield answers
    server.close()
    os.unlink(path)
    os.rmdir(directory)


def test_docker_ping_must_answer_200(fake_docker: list[bytes]) -> None:
    fake_docker.append(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")
    assert docker_reachable()
    fake_docker.append(b"HTTP/1.1 500 Internal Server Error\r\n\r\n")
    assert not docker_reachable()


def test_docker_absent_socket(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    assert not docker_reachable()
    monkeypatch.setenv("DOCKER_HOST", "ssh://somewhere")
    assert not docker_reachable()


def test_crd_files_expands_directories_and_rejects_missing(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("{}")
    (tmp_path / "a.yml").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    single = tmp_path / "x.json"
    single.write_text("{}")
    assert [p.name for p in crd_files([str(tmp_path)])] == ["a.yml", "b.yaml", "x.json"]
    assert crd_files([str(single)]) == [single]
    with pytest.raises(BackendError, match="does not exist"):
        crd_files([str(tmp_path / "nope")])
