"""Fixtures for the ship tests: the real helm (see helm.py) renders and lints both charts.

``make controlplane`` (part of ``make test`` where Go is) builds it; without it the tests that
need it skip with the one-line reason :class:`MissingBinaries` gives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .helm import Helm, helm_or_skip


@pytest.fixture(scope="session")
def helm() -> Iterator[Helm]:
    yield from helm_or_skip()
