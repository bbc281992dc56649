"""Fixtures for the ship tests: a Helm-compatible renderer built from helmrender/main.go.

helm itself cannot be installed here, but its engine is Go's text/template plus the sprig
library, both of which Debian packages. Rendering with the same engine catches what static
checks cannot (a typo in a function name, a wrong pipeline, YAML broken by indentation, the
`fail` actually firing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

HELMRENDER_SRC = Path(__file__).parent / "helmrender" / "main.go"
APT_HINT = (
    "apt-get install -y --no-install-recommends golang-go "
    "golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev"
)

Render = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def helmrender_binary(tmp_path_factory: pytest.TempPathFactory) -> str:
    go = shutil.which("go")
    if go is None:
        pytest.skip(f"no Go toolchain to build the chart renderer ({APT_HINT})")
    out = tmp_path_factory.mktemp("helmrender") / "helmrender"
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode", GOFLAGS="")
    if not env.get("GOCACHE") and not os.environ.get("HOME"):
        env["GOCACHE"] = str(out.parent / "gocache")
    build = subprocess.run(
        [go, "build", "-o", str(out), str(HELMRENDER_SRC)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if build.returncode != 0 and "cannot find package" in build.stderr:
        pytest.skip(f"Go libraries for the chart renderer missing ({APT_HINT})")
    assert build.returncode == 0, build.stderr
    return str(out)


@pytest.fixture(scope="session")
def helm_render(helmrender_binary: str) -> Render:
    """``helm_render(chart_dir, name=..., namespace=..., sets=[...])`` -> CompletedProcess."""

    def render(
        chart: Path, *, name: str = "rel", namespace: str = "ns", sets: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess[str]:
        args = [helmrender_binary, str(chart), "--name", name, "--namespace", namespace]
        for item in sets:
            args += ["--set", item]
        return subprocess.run(args, capture_output=True, text=True, timeout=60)

    return render
