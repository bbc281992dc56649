"""Builder + real InformerCache + Controller against each API server backend on 127.0.0.1.

The unit tests pin each rule with fakes; this one checks the pieces fit on real watches: own
events, owner-reference mapping, delete events, and a real-clock ``requeue_after``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from llmscaler_runtime.clock import SYSTEM_CLOCK
from llmscaler_runtime.controller import Builder, Request, Result
from test.unit.controller.fakes import wait_until

pytest.importorskip("llmscaler_runtime.envtest")
cache_mod = pytest.importorskip("llmscaler_runtime.cache")

pytestmark = pytest.mark.integration


class Manager:
    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.clock = SYSTEM_CLOCK
        self.metrics = None
        self.runnables: list[Any] = []

    def add(self, runnable: Any) -> None:
        self.runnables.append(runnable)


class Recorder:
    """Records Requests; asks for a 50 ms periodic requeue for names starting with 'tick'."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[Request] = []

    def reconcile(self, request: Request) -> Result:
        with self.lock:
            self.seen.append(request)
        return Result(requeue_after=0.05) if request.name.startswith("tick") else Result()

    def count(self, req: Request) -> int:
        with self.lock:
            return self.seen.count(req)


def test_controller_on_real_informers(envtest: Any) -> None:
    client = envtest.client()
    ns = "wq-" + uuid.uuid4().hex[:8]
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cache = cache_mod.InformerCache(client)
    rec = Recorder()
    ctrl = Builder(Manager(cache)).for_("v1", "ConfigMap").owns("v1", "Secret").complete(rec)
    cache.start()
    try:
        assert cache.wait_for_cache_sync(10)
        ctrl.start()
        owner = client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "owner", "namespace": ns},
            }
        )
        req = Request(ns, "owner")
        wait_until(lambda: rec.count(req) >= 1, 10, "owner reconciled on create")
        before = rec.count(req)
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
        client.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": ns, "ownerReferences": [ref]},
            }
        )
        wait_until(lambda: rec.count(req) > before, 10, "owner reconciled for its Secret")
        before = rec.count(req)
        client.delete("v1", "ConfigMap", "owner", ns)
        wait_until(lambda: rec.count(req) > before, 10, "owner reconciled on delete")

        client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tick", "namespace": ns}}
        )
        tick = Request(ns, "tick")
        wait_until(lambda: rec.count(tick) >= 3, 10, "periodic requeue_after on a real clock")
    finally:
        assert ctrl.stop(timeout=5)
        cache.stop()
        client.close()
