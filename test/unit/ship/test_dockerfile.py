"""The Dockerfile's promises, checked by parsing it (no Docker engine needed), plus a real build
where a daemon is reachable."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import uuid
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"
PUBLIC_REGISTRIES = ("docker.io/", "gcr.io/", "ghcr.io/", "quay.io/", "registry.k8s.io/")


@attrs.frozen
class Instruction:
    keyword: str
    args: str
    line: int


@attrs.frozen
class Stage:
    base: str
    name: str | None
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str | None], list[Stage]]:
    """Returns (global ARGs with defaults, stages); handles comments and line continuations."""
    instructions: list[Instruction] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, args = (pending + stripped).partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        pending = ""
    assert not pending, "Dockerfile ends inside a line continuation"

    global_args: dict[str, str | None] = {}
    stages: list[Stage] = []
    current: list[Instruction] | None = None
    base, name = "", None
    for ins in instructions:
        if ins.keyword == "FROM":
            if current is not None:
                stages.append(Stage(base, name, tuple(current)))
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", ins.args, re.I)
            assert match, f"line {ins.line}: unparsable FROM {ins.args!r}"
            base, name, current = match.group(1), match.group(2), []
        elif current is None:
            assert ins.keyword == "ARG", f"line {ins.line}: only ARG may precede the first FROM"
            key, eq, default = ins.args.partition("=")
            global_args[key] = default if eq else None
        else:
            current.append(ins)
    assert current is not None, "no FROM in the Dockerfile"
    stages.append(Stage(base, name, tuple(current)))
    return global_args, stages


@pytest.fixture(scope="module")
def parsed() -> tuple[dict[str, str | None], list[Stage]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def test_base_images_are_build_args_with_public_defaults(
    parsed: tuple[dict[str, str | None], list[Stage]],
) -> None:
    args, stages = parsed
    assert len(stages) >= 2, "expected a multi-stage build"
    assert stages[0].base == "${PYTHON_IMAGE}"
    assert stages[-1].base == "${RUNTIME_IMAGE}"
    for arg in ("PYTHON_IMAGE", "RUNTIME_IMAGE"):
        default = args.get(arg)
        assert default, f"ARG {arg} needs a default so a plain 'docker build .' works"
        # A public image: a Docker Hub short name or a well-known public registry.
        registry = default.split("/")[0] if "/" in default else ""
        assert not re.search(r"[.:]", registry) or default.startswith(PUBLIC_REGISTRIES), default
    for stage in stages:
        assert stage.base.startswith("${") or stage.base in {s.name for s in stages}, (
            f"stage base {stage.base!r} is hard-coded; use a build arg"
        )


def test_final_stage_runs_the_manager_as_non_root(
    parsed: tuple[dict[str, str | None], list[Stage]],
) -> None:
    _, stages = parsed
    final = stages[-1]
    users = final.all("USER")
    assert users, "the final stage must set USER"
    uid, _, gid = users[-1].args.partition(":")
    assert uid == "65532" and gid == "65532", "numeric non-root uid/gid so runAsNonRoot can verify"
    [entrypoint] = final.all("ENTRYPOINT")
    command = json.loads(entrypoint.args)  # exec form: signals reach the manager directly
    assert command == ["llmscaler-manager"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["llmscaler-manager"] == "llmscaler_manager.__main__:main"
    env = " ".join(i.args for i in final.all("ENV"))
    assert "PYTHONDONTWRITEBYTECODE=1" in env, "a read-only root fs cannot take .pyc writes"


def test_wheel_not_source_tree_reaches_the_image(
    parsed: tuple[dict[str, str | None], list[Stage]],
) -> None:
    _, stages = parsed
    build, final = stages[0], stages[-1]
    assert any("pip wheel" in i.args for i in build.all("RUN")), "build stage must build a wheel"
    assert any(".whl" in i.args for i in build.all("RUN")), "and install the wheel, not the tree"
    assert not final.all("ADD")
    for copy in final.all("COPY"):
        assert copy.args.startswith(f"--from={build.name} "), (
            f"line {copy.line}: the final stage copies from the build context: {copy.args}"
        )
        assert "/src" not in copy.args.split()[1]


def test_build_stage_copies_everything_the_wheel_needs(
    parsed: tuple[dict[str, str | None], list[Stage]],
) -> None:
    """A file pyproject needs (readme, package roots) but the build stage lacks breaks the build."""
    _, stages = parsed
    copied: set[str] = set()
    for copy in stages[0].all("COPY"):
        parts = [p for p in copy.args.split() if not p.startswith("--")]
        copied.update(p.rstrip("/") for p in parts[:-1])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {"pyproject.toml", project["project"]["readme"]}
    packages = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    needed |= {p.split("/")[0] for p in packages}
    assert needed <= copied, f"missing from the build stage: {sorted(needed - copied)}"
    for path in needed:
        assert (ROOT / path).exists(), path


def test_dockerignore_keeps_local_state_out() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".pytest_cache", ".mypy_cache", "**/__pycache__"} <= ignored
    # ... but never what the wheel is built from.
    assert not {"src", "pyproject.toml", "README.md"} & ignored


def test_parser_rejects_what_it_cannot_read() -> None:
    with pytest.raises(AssertionError):
        parse_dockerfile("RUN echo before any FROM\n")
    with pytest.raises(AssertionError):
        parse_dockerfile("FROM a \\\n")


def _docker_reachable() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    probe = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20)
    if probe.returncode != 0:
        return "Docker daemon not reachable: " + (probe.stderr.strip().splitlines() or ["?"])[-1]
    return None


@pytest.mark.docker
@pytest.mark.slow
def test_image_builds_and_starts_read_only() -> None:
    reason = _docker_reachable()
    if reason:
        pytest.skip(reason)
    tag = f"llmscaler-test:{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "build", "-t", tag, str(ROOT)], check=True, timeout=900)
    try:
        inspect = subprocess.run(
            ["docker", "image", "inspect", tag], check=True, capture_output=True, text=True
        )
        config = json.loads(inspect.stdout)[0]["Config"]
        assert config["User"] == "65532:65532"
        assert config["Entrypoint"] == ["llmscaler-manager"]
        run = subprocess.run(
            ["docker", "run", "--rm", "--read-only", "--cap-drop=ALL", tag, "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        listing = subprocess.run(
            ["docker", "run", "--rm", "--entrypoint", "ls", tag, "/opt/llmscaler/lib"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listing.returncode == 0
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=60)
