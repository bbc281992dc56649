"""Fixtures for the ship tests: the real helm (see helm.py) renders and lints both charts.

``make controlplane`` (part of ``make test`` where Go is) builds it; without it the tests that
need it skip with the one-line reason :class:`MissingBinaries` gives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .helm import Helm, MissingBinaries, find_helm


@pytest.fixture(scope="session")
def helm() -> Iterator[Helm]:
    try:
        runner = find_helm()
    except MissingBinaries as exc:
        pytest.skip(str(exc))
    try:
        yield runner
    finally:
        runner.close()
