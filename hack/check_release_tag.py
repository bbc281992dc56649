#!/usr/bin/env python3
"""Refuses to publish an image whose tag disagrees with the chart.

The chart leaves ``manager.image.tag`` empty so installs pull ``appVersion``. If a ``vX.Y.Z`` tag
published a different version, ``helm install`` would pull an image that was never built (or an
older one). The release workflow runs this before building; on success it prints ``X.Y.Z`` (the
image tag to push) and exits 0.

Usage: check_release_tag.py [TAG]   (TAG defaults to $GITHUB_REF_NAME; ``refs/tags/`` is accepted)

Exit codes: 0 tag matches; 1 tag is well-formed but disagrees with dist/chart/Chart.yaml's
appVersion (or appVersion disagrees with pyproject.toml's version); 2 usage error, malformed tag,
or an unreadable/ill-formed Chart.yaml or pyproject.toml.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
APP_VERSION = re.compile(r"""^appVersion:\s*(?:"([^"]*)"|'([^']*)'|([^\s#]+))\s*(?:#.*)?$""", re.M)


class CheckError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def chart_app_version(chart_yaml: Path) -> str:
    """appVersion from Chart.yaml, read without PyYAML so a bare runner python3 can do it."""
    try:
        text = chart_yaml.read_text()
    except OSError as exc:
        raise CheckError(2, f"cannot read {chart_yaml}: {exc}") from exc
    matches = APP_VERSION.findall(text)
    if len(matches) != 1:
        raise CheckError(2, f"{chart_yaml}: expected exactly one top-level appVersion line")
    return str(next(part for part in matches[0] if part))


def package_version(pyproject: Path) -> str:
    try:
        data = tomllib.loads(pyproject.read_text())
        version = data["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise CheckError(2, f"cannot read project.version from {pyproject}: {exc}") from exc
    if not isinstance(version, str):
        raise CheckError(2, f"{pyproject}: project.version is not a string")
    return version


def check(tag: str, chart_yaml: Path, pyproject: Path) -> str:
    """Returns the image version for ``tag`` or raises :class:`CheckError`."""
    tag = tag.removeprefix("refs/tags/")
    if not TAG.match(tag):
        raise CheckError(2, f"tag {tag!r} is not a release tag of the form vX.Y.Z (e.g. v0.1.0)")
    version = tag[1:]
    app_version = chart_app_version(chart_yaml)
    if app_version != version:
        raise CheckError(
            1,
            f"tag {tag} does not match appVersion {app_version!r} in {chart_yaml}; bump "
            f"appVersion (and the package version) to {version!r} or tag v{app_version}",
        )
    pkg = package_version(pyproject)
    if pkg != app_version:
        raise CheckError(
            1,
            f"appVersion {app_version!r} in {chart_yaml} differs from version {pkg!r} in "
            f"{pyproject}; the image would report a different version than the chart",
        )
    return version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="check a release tag against the chart")
    parser.add_argument("tag", nargs="?", default=os.environ.get("GITHUB_REF_NAME"))
    parser.add_argument("--chart", type=Path, default=ROOT / "dist" / "chart" / "Chart.yaml")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    args = parser.parse_args(argv)
    if not args.tag:
        print("check_release_tag: no tag given and $GITHUB_REF_NAME is empty", file=sys.stderr)
        return 2
    try:
        version = check(args.tag, args.chart, args.pyproject)
    except CheckError as exc:
        print(f"check_release_tag: {exc}", file=sys.stderr)
        return exc.code
    print(version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
