"""hack/check_release_tag.py (exit codes and messages) and the workflows that use it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "hack" / "check_release_tag.py"


def _run(
    *args: str, env_tag: str | None = None, tmp: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_REF_NAME"}
    if env_tag is not None:
        env["GITHUB_REF_NAME"] = env_tag
    extra = []
    if tmp is not None:
        extra = ["--chart", str(tmp / "Chart.yaml"), "--pyproject", str(tmp / "pyproject.toml")]
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


def _project(tmp: Path, app_version: str, package: str = "1.2.3") -> Path:
    (tmp / "Chart.yaml").write_text(
        f"apiVersion: v2\nname: llmscaler\nversion: 0.4.0\nappVersion: {app_version}  # image\n"
    )
    (tmp / "pyproject.toml").write_text(f'[project]\nname = "llmscaler"\nversion = "{package}"\n')
    return tmp


def test_repository_versions_agree() -> None:
    chart = yaml.safe_load((ROOT / "dist" / "chart" / "Chart.yaml").read_text())
    result = _run(f"v{chart['appVersion']}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == chart["appVersion"]


@pytest.mark.parametrize("app_version", ['"1.2.3"', "'1.2.3'", "1.2.3"])
def test_matching_tag_passes_and_prints_the_image_version(tmp_path: Path, app_version: str) -> None:
    _project(tmp_path, app_version)
    for tag in ("v1.2.3", "refs/tags/v1.2.3"):
        result = _run(tag, tmp=tmp_path)
        assert (result.returncode, result.stdout.strip()) == (0, "1.2.3"), result.stderr


def test_tag_from_github_ref_name(tmp_path: Path) -> None:
    _project(tmp_path, '"1.2.3"')
    assert _run(env_tag="v1.2.3", tmp=tmp_path).returncode == 0
    missing = _run(tmp=tmp_path)
    assert missing.returncode == 2 and "no tag given" in missing.stderr


def test_mismatching_tag_is_refused_with_both_versions(tmp_path: Path) -> None:
    _project(tmp_path, '"1.2.3"')
    result = _run("v1.2.4", tmp=tmp_path)
    assert result.returncode == 1
    assert "v1.2.4" in result.stderr and "'1.2.3'" in result.stderr
    assert result.stdout == ""  # nothing for the workflow to push


def test_chart_and_package_must_agree(tmp_path: Path) -> None:
    _project(tmp_path, '"1.2.3"', package="1.2.2")
    result = _run("v1.2.3", tmp=tmp_path)
    assert result.returncode == 1 and "pyproject.toml" in result.stderr


@pytest.mark.parametrize(
    "tag", ["1.2.3", "v1.2", "v1.2.3-rc.1", "v01.2.3", "release-1.2.3", "v1.2.3 "]
)
def test_malformed_tags_are_usage_errors(tmp_path: Path, tag: str) -> None:
    _project(tmp_path, '"1.2.3"')
    result = _run(tag, tmp=tmp_path)
    assert result.returncode == 2 and "vX.Y.Z" in result.stderr


def test_unreadable_inputs(tmp_path: Path) -> None:
    result = _run("v1.2.3", tmp=tmp_path)  # no files at all
    assert result.returncode == 2 and "cannot read" in result.stderr
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: x\n")
    result = _run("v1.2.3", tmp=tmp_path)
    assert result.returncode == 2 and "appVersion" in result.stderr


def _workflow(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    assert isinstance(loaded, dict)
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    loaded["on"] = loaded.pop(True, loaded.get("on"))
    return loaded


def test_release_workflow_checks_the_tag_before_pushing() -> None:
    workflow = _workflow("release.yml")
    assert workflow["on"] == {"push": {"tags": ["v*.*.*"]}}
    steps = workflow["jobs"]["image"]["steps"]
    check_index = next(i for i, s in enumerate(steps) if "check_release_tag.py" in s.get("run", ""))
    push_index = next(
        i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("docker/build-push")
    )
    assert check_index < push_index
    run = steps[check_index]["run"]
    # An assignment carries the script's exit status (bash -e stops); `echo "$(...)"` would not.
    assert 'version="$(python3 hack/check_release_tag.py "$GITHUB_REF_NAME")"' in run
    push = steps[push_index]["with"]
    assert push["push"] is True
    assert "${{ env.IMAGE }}:${{ steps.version.outputs.version }}" in push["tags"]
    assert workflow["env"]["IMAGE"] == "4pdosc/llm-operator"
    login = next(s for s in steps if str(s.get("uses", "")).startswith("docker/login-action"))
    assert login["with"]["password"] == "${{ secrets.DOCKERHUB_TOKEN }}"


def test_ci_workflow_runs_make_test() -> None:
    workflow = _workflow("ci.yml")
    runs = [s.get("run", "") for s in workflow["jobs"]["test"]["steps"]]
    assert any(r.strip() == "make test" for r in runs)
    assert any("prometheus" in r for r in runs), "the integration suite needs the real binary"
