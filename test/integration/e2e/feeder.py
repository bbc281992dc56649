"""Keeps the vLLM exporter in step with the pods the embedded cluster is really running.

A real vLLM pod exports its own metrics; here the exporter publishes a series for each ready,
non-terminating pod of one app, with a value chosen by the test, and drops the series of pods
that are gone: the same picture Prometheus would scrape from a live fleet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from llmscaler_runtime.testkit.vllm_exporter import VllmMetricsExporter


def is_ready(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


class PodMetricsFeeder:
    def __init__(
        self,
        kube: Any,
        exporter: VllmMetricsExporter,
        namespace: str,
        app: str,
        kv: Callable[[str], float],
        *,
        interval: float = 0.2,
    ) -> None:
        self.kube, self.exporter, self.namespace, self.app = kube, exporter, namespace, app
        self.kv = kv
        self.interval = interval
        self._stop = threading.Event()
        self._published: set[str] = set()
        self._thread = threading.Thread(target=self._run, name=f"feeder-{app}", daemon=True)

    def __enter__(self) -> PodMetricsFeeder:
        self.sync()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for pod in self._published:
            self.exporter.remove_pod(self.namespace, pod)

    def ready_pods(self) -> list[str]:
        pods = self.kube.list("v1", "Pod", self.namespace, label_selector=f"app={self.app}")
        return sorted(p["metadata"]["name"] for p in pods["items"] if is_ready(p))

    def sync(self) -> None:
        ready = set(self.ready_pods())
        for pod in self._published - ready:
            self.exporter.remove_pod(self.namespace, pod)
        for pod in ready:
            self.exporter.set_pod(self.namespace, self.app, pod, kv=self.kv(pod), running=1)
        self._published = ready

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except Exception:  # the namespace may be going away at teardown
                continue
