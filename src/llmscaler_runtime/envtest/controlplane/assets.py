"""Where the control plane's binaries come from.

The user's own binaries win, by controller-runtime envtest's conventions, so that someone with
``setup-envtest`` binaries (or a distribution's packages) builds nothing:

1. ``TEST_ASSET_<NAME>`` (``TEST_ASSET_KUBE_APISERVER``, ``TEST_ASSET_ETCD``,
   ``TEST_ASSET_KUBECTL``, and for the workload tier ``TEST_ASSET_KUBE_CONTROLLER_MANAGER``,
   ``TEST_ASSET_KUBE_SCHEDULER``, ``TEST_ASSET_KWOK``; ``TEST_ASSET_HELM`` for the chart tests);
2. a file of that name in ``$KUBEBUILDER_ASSETS`` (what ``setup-envtest use -p path`` prints);
3. ``$LLMSCALER_CONTROLPLANE_BIN``, the directory ``hack/ensure-controlplane.sh`` builds into
   (``make controlplane`` prints it; ``make test`` exports it);
4. the newest such directory in the default cache,
   ``${XDG_CACHE_HOME:-~/.cache}/llmscaler/controlplane/k8s-*``.

``$PATH`` is deliberately not searched: a distribution's kubectl (Debian ships 1.32) next to a
newer API server would make every kubectl-driven check lie about version skew.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

__all__ = [
    "CORE",
    "WORKLOADS",
    "Assets",
    "MissingBinaries",
    "cache_root",
    "find_binaries",
]

ENV_BIN = "LLMSCALER_CONTROLPLANE_BIN"
ENV_ASSETS = "KUBEBUILDER_ASSETS"
#: What an API-only control plane needs (kubectl for the tests that drive it).
CORE = ("etcd", "kube-apiserver", "kubectl")
#: What the opt-in workload tier adds: controllers, a scheduler and kwok in place of kubelets.
WORKLOADS = ("kube-controller-manager", "kube-scheduler", "kwok")

BUILD_HINT = "run `make controlplane` (builds them from Go modules, once)"


class MissingBinaries(RuntimeError):
    """Some binaries were not found; the message is one line naming them and how to get them."""

    def __init__(self, names: Iterable[str], searched: Iterable[str]) -> None:
        self.names = tuple(names)
        self.searched = tuple(searched)
        super().__init__(
            f"real control plane unavailable: no {', '.join(self.names)} "
            f"(looked in {'; '.join(self.searched)}); {BUILD_HINT}"
        )


def env_var(name: str) -> str:
    """``kube-apiserver`` -> ``TEST_ASSET_KUBE_APISERVER`` (envtest's naming)."""
    return "TEST_ASSET_" + name.upper().replace("-", "_")


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The directory ``hack/ensure-controlplane.sh`` builds under (same rule as the script)."""
    env = os.environ if environ is None else environ
    base = env.get("LLMSCALER_CACHE_DIR") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "llmscaler"
    )
    return Path(base) / "controlplane"


def _version_key(path: Path) -> tuple[int, ...]:
    match = re.match(r"k8s-v(\d+)\.(\d+)\.(\d+)", path.name)
    return tuple(int(x) for x in match.groups()) if match else (0,)


def _newest_cached(root: Path) -> Path | None:
    if not root.is_dir():
        return None
    dirs = [p for p in root.glob("k8s-v*") if p.is_dir()]
    return max(dirs, key=_version_key) if dirs else None


@attrs.frozen
class Assets:
    """Absolute paths of the binaries found, by name."""

    paths: Mapping[str, Path]

    def __getitem__(self, name: str) -> Path:
        return self.paths[name]

    def get(self, name: str) -> Path | None:
        return self.paths.get(name)


def find_binaries(names: Iterable[str] = CORE, environ: Mapping[str, str] | None = None) -> Assets:
    """Resolve each binary by the rules above; raise :class:`MissingBinaries` for any missing."""
    env = os.environ if environ is None else environ
    dirs: list[tuple[str, Path]] = []
    if env.get(ENV_ASSETS):
        dirs.append((f"${ENV_ASSETS}", Path(env[ENV_ASSETS])))
    if env.get(ENV_BIN):
        dirs.append((f"${ENV_BIN}", Path(env[ENV_BIN])))
    cached = _newest_cached(cache_root(env))
    if cached is not None:
        dirs.append((str(cached), cached))
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in names:
        explicit = env.get(env_var(name))
        if explicit:
            path = Path(explicit)
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise MissingBinaries([name], [f"{env_var(name)}={explicit} (not executable)"])
            found[name] = path.resolve()
            continue
        for _label, directory in dirs:
            candidate = directory / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                found[name] = candidate.resolve()
                break
        else:
            missing.append(name)
    if missing:
        searched = [f"${env_var('<name>')}"] + [label for label, _ in dirs]
        if cached is None:
            searched.append(f"{cache_root(env)}/k8s-*")
        raise MissingBinaries(missing, searched)
    return Assets(found)
