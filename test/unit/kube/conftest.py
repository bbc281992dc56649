from __future__ import annotations

from collections.abc import Iterator

import kubernetes.client
import pytest

from llmscaler_runtime.kube import Client

from .scripted_server import ScriptedApi


@pytest.fixture
def api() -> Iterator[ScriptedApi]:
    server = ScriptedApi()
    yield server
    server.close()
    assert server.failures == [], server.failures
    assert server.script == [], f"unconsumed expectations: {server.script}"


@pytest.fixture
def client(api: ScriptedApi) -> Iterator[Client]:
    cfg = kubernetes.client.Configuration(host=api.url)
    cfg.api_key = {"BearerToken": "s3cret"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    c = Client(cfg)
    yield c
    c.close()
