"""Hypothesis profiles for the property and fuzz tests, and the count of inputs they ran.

``ci`` (the default, what ``make test`` runs) is short and derandomized, so a run never
depends on luck and never flakes; ``HYPOTHESIS_PROFILE=long`` runs many more random examples:

    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest test/unit/properties -q -p no:cacheprovider

Neither profile writes an example database into the checkout: a failure prints the example
(and, in ``long``, the ``@reproduce_failure`` blob) to paste into a regular test.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from ._tally import summary

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=2000,  # ms per example: a hang fails fast; generous for a loaded 2-core machine
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=1200,  # 20 times ci's budget for every test
    derandomize=False,
    database=None,
    deadline=2000,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in summary():
        terminalreporter.write_line(line)
