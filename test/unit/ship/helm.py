"""The real helm, for the chart tests and the chart's install into the real control plane.

The binary is the helm v3 that ``hack/ensure-controlplane.sh`` builds from ``helm.sh/helm/v3``
with the control plane (``make controlplane``), found by the control plane's rules
(``TEST_ASSET_HELM``, ``$KUBEBUILDER_ASSETS``, the build cache; never ``$PATH``, so a stray helm
of another minor cannot answer). Its offline Kubernetes version is the control plane's, so
``helm template`` renders for the cluster the integration tests install into.

Every run gets its own ``HELM_*_HOME`` directories: nothing is read from or written to the
user's helm configuration, and parallel runs cannot see each other's repositories or caches.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from llmscaler_runtime.envtest.controlplane.assets import MissingBinaries, find_binaries

__all__ = ["Helm", "MissingBinaries", "find_helm"]


def find_helm() -> Helm:
    """The real helm, or :class:`MissingBinaries` whose message is the one-line reason."""
    return Helm(str(find_binaries(["helm"])["helm"]))


class Helm:
    """Runs ``helm`` with an isolated home; every method returns the CompletedProcess."""

    def __init__(self, binary: str, home: Path | None = None) -> None:
        self.binary = binary
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if home is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="llmscaler-helm-")
            home = Path(self._tmp.name)
        self.home = home
        self.env = {
            **os.environ,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }
        # Commands that do not name a cluster must not reach one from the environment.
        self.env.pop("KUBECONFIG", None)

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )

    def template(
        self,
        chart: Path,
        *,
        name: str = "rel",
        namespace: str = "ns",
        sets: Sequence[str] = (),
        extra: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """``helm template NAME CHART --namespace NS --set ...`` (client-side, no cluster)."""
        args = ["template", name, str(chart), "--namespace", namespace]
        for item in sets:
            args += ["--set", item]
        return self.run(*args, *extra)

    def render(self, chart: Path, **kw: Any) -> list[dict[str, Any]]:
        """The rendered objects of :meth:`template`; fails the test when helm fails."""
        result = self.template(chart, **kw)
        assert result.returncode == 0, result.stderr
        return [d for d in yaml.safe_load_all(result.stdout) if d]

    def lint(
        self, chart: Path, *, strict: bool = True, sets: Sequence[str] = ()
    ) -> subprocess.CompletedProcess[str]:
        """``helm lint [--strict] CHART --set ...``; ``--strict`` turns warnings into failures."""
        args = ["lint", str(chart)]
        if strict:
            args.append("--strict")
        for item in sets:
            args += ["--set", item]
        return self.run(*args)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def helm_or_skip() -> Iterator[Helm]:
    """The body of every ``helm`` fixture: the runner, or a skip with the one-line reason."""
    import pytest

    try:
        runner = find_helm()
    except MissingBinaries as exc:
        pytest.skip(str(exc))
    try:
        yield runner
    finally:
        runner.close()
