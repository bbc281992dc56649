"""FencedClient: writes refused (before anything is sent) while the fence is closed; reads and
an open fence pass through to the real client."""

from __future__ import annotations

from collections.abc import Callable

import kubernetes
import pytest

from llmscaler_runtime.kube import ApiError, Client, TransportError
from llmscaler_runtime.kube.mapper import ResourceInfo
from llmscaler_runtime.manager import FencedClient, NotLeader


class StaticMapper:
    """Answers ConfigMap without discovery, so no request is needed to build a path."""

    def resource_for(self, api_version: str, kind: str) -> ResourceInfo:
        return ResourceInfo(
            group="",
            version="v1",
            kind="ConfigMap",
            plural="configmaps",
            namespaced=True,
            subresources=frozenset(),
            verbs=frozenset({"get", "create", "update", "patch", "delete"}),
        )

    def invalidate(self) -> None:
        return None


def client() -> Client:
    config = kubernetes.client.Configuration()
    config.host = "http://127.0.0.1:1"  # nothing listens: any request that is sent fails fast
    return Client(config, mapper=StaticMapper())  # type: ignore[arg-type]


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}


def test_closed_fence_refuses_every_write_without_sending() -> None:
    fenced = FencedClient(client(), lambda: False)
    writes: list[Callable[[], object]] = [
        lambda: fenced.create(dict(CM)),
        lambda: fenced.update(dict(CM)),
        lambda: fenced.patch("v1", "ConfigMap", "c", {"data": {}}, "ns"),
        lambda: fenced.apply(dict(CM), field_manager="llmscaler"),
        lambda: fenced.delete("v1", "ConfigMap", "c", "ns"),
    ]
    for write in writes:
        with pytest.raises(NotLeader) as err:
            write()
        assert isinstance(err.value, ApiError) and err.value.reason == "NotLeader"
    # Reads are not fenced: this one reaches the (absent) server.
    with pytest.raises(TransportError):
        fenced.get("v1", "ConfigMap", "c", "ns")


def test_open_fence_passes_writes_through() -> None:
    state = {"leader": True}
    fenced = FencedClient(client(), lambda: state["leader"])
    with pytest.raises(TransportError):  # sent, so the transport failed
        fenced.create(dict(CM))
    state["leader"] = False
    with pytest.raises(NotLeader):
        fenced.create(dict(CM))
    assert fenced.mapper is fenced.inner.mapper  # shares discovery cache and pool
