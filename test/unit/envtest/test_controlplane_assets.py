"""Where the real control plane's binaries are looked up: envtest's conventions, then our cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmscaler_runtime.envtest.controlplane.assets import (
    CORE,
    MissingBinaries,
    cache_root,
    env_var,
    find_binaries,
)


def _binary(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_env_var_names_follow_envtest() -> None:
    assert env_var("kube-apiserver") == "TEST_ASSET_KUBE_APISERVER"
    assert env_var("etcd") == "TEST_ASSET_ETCD"
    assert env_var("kube-controller-manager") == "TEST_ASSET_KUBE_CONTROLLER_MANAGER"


def test_explicit_asset_beats_kubebuilder_assets_which_beats_our_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = cache / "controlplane" / "k8s-v1.36.3_etcd-v3.6.8_kwok-v0.8.0_helm-v3.21.4"
    for name in CORE:
        _binary(built / name)
    kb = tmp_path / "kubebuilder"
    _binary(kb / "etcd")
    mine = _binary(tmp_path / "mine" / "my-apiserver")
    env = {
        "LLMSCALER_CACHE_DIR": str(cache),
        "KUBEBUILDER_ASSETS": str(kb),
        "TEST_ASSET_KUBE_APISERVER": str(mine),
    }
    found = find_binaries(CORE, env)
    assert found["kube-apiserver"] == mine.resolve()
    assert found["etcd"] == (kb / "etcd").resolve()
    assert found["kubectl"] == (built / "kubectl").resolve()


def test_the_newest_cached_kubernetes_wins(tmp_path: Path) -> None:
    root = tmp_path / "controlplane"
    for version in ("v1.9.0", "v1.36.3", "v1.35.10"):
        _binary(root / f"k8s-{version}_etcd-x" / "etcd")
    found = find_binaries(["etcd"], {"LLMSCALER_CACHE_DIR": str(tmp_path)})
    assert found["etcd"].parent.name == "k8s-v1.36.3_etcd-x"


def test_path_is_never_searched(tmp_path: Path) -> None:
    _binary(tmp_path / "bin" / "kubectl")
    env = {"LLMSCALER_CACHE_DIR": str(tmp_path / "none"), "PATH": str(tmp_path / "bin")}
    with pytest.raises(MissingBinaries) as info:
        find_binaries(["kubectl"], env)
    assert info.value.names == ("kubectl",)


def test_missing_binaries_are_named_in_one_line_with_the_fix(tmp_path: Path) -> None:
    env = {"LLMSCALER_CACHE_DIR": str(tmp_path)}
    with pytest.raises(MissingBinaries) as info:
        find_binaries(CORE, env)
    message = str(info.value)
    assert "\n" not in message
    assert "etcd, kube-apiserver, kubectl" in message
    assert "make controlplane" in message
    assert str(cache_root(env)) in message


def test_an_explicit_asset_that_is_not_executable_is_an_error(tmp_path: Path) -> None:
    plain = tmp_path / "etcd"
    plain.write_text("not a program")
    with pytest.raises(MissingBinaries, match="not executable"):
        find_binaries(["etcd"], {"TEST_ASSET_ETCD": str(plain)})


def test_cache_root_follows_xdg(tmp_path: Path) -> None:
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "llmscaler" / "controlplane"
    assert cache_root({"LLMSCALER_CACHE_DIR": str(tmp_path)}) == tmp_path / "controlplane"
