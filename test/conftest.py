"""Root conftest: registers the project's pytest plugins (embedded API server, test kit)."""

from __future__ import annotations

import pytest

_PLUGINS = (
    "llmscaler_runtime.envtest.pytest_plugin",
    "llmscaler_runtime.testkit.pytest_plugin",
)


def pytest_configure(config: pytest.Config) -> None:
    for name in _PLUGINS:
        if not config.pluginmanager.has_plugin(name):
            config.pluginmanager.import_plugin(name)
