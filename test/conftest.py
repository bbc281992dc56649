"""Root conftest: registers the project's pytest plugins (embedded API server, test kit)."""

from __future__ import annotations

import importlib.util

import pytest

_PLUGINS = (
    "llmscaler_runtime.envtest.pytest_plugin",
    "llmscaler_runtime.testkit.pytest_plugin",
)


def pytest_configure(config: pytest.Config) -> None:
    for name in _PLUGINS:
        if importlib.util.find_spec(name.rsplit(".", 1)[0]) is None:
            continue
        if importlib.util.find_spec(name) is not None and not config.pluginmanager.has_plugin(name):
            config.pluginmanager.import_plugin(name)
