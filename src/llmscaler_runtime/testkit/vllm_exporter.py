"""A stand-in for a fleet of vLLM pods' ``/metrics`` endpoints, served from one process.

Tests and the demo need metric values they choose, exposed the way a real vLLM pod behind a
ServiceMonitor ends up in Prometheus: the three gauges the scaler reads, carrying ``namespace``,
``app``, ``pod`` and ``model_name`` labels. Emitting those labels directly (rather than relying on
Kubernetes service discovery relabelling) lets a plain static Prometheus scrape config produce the
same series a cluster would.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

import attrs

from llmscaler_runtime.testkit._http import LocalHTTPServer, LoopbackService, send

KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
NUM_REQUESTS_WAITING = "vllm:num_requests_waiting"
NUM_REQUESTS_RUNNING = "vllm:num_requests_running"
METRIC_NAMES = (KV_CACHE_USAGE, NUM_REQUESTS_WAITING, NUM_REQUESTS_RUNNING)
DEFAULT_MODEL = "facebook/opt-125m"

_HELP = {
    KV_CACHE_USAGE: "KV-cache usage. 1 means 100 percent usage.",
    NUM_REQUESTS_WAITING: "Number of requests waiting to be processed.",
    NUM_REQUESTS_RUNNING: "Number of requests in model execution batches.",
}


@attrs.frozen
class Sample:
    """One exposed series value; ``labels`` excludes the metric name."""

    name: str
    labels: Mapping[str, str]
    value: float


@attrs.frozen
class PodMetrics:
    """The values one simulated vLLM pod currently reports."""

    namespace: str
    app: str
    pod: str
    model_name: str = DEFAULT_MODEL
    kv: float = 0.0
    waiting: float = 0.0
    running: float = 0.0

    def labels(self) -> dict[str, str]:
        return {
            "namespace": self.namespace,
            "app": self.app,
            "pod": self.pod,
            "model_name": self.model_name,
        }

    def samples(self) -> list[Sample]:
        labels = self.labels()
        return [
            Sample(KV_CACHE_USAGE, labels, self.kv),
            Sample(NUM_REQUESTS_WAITING, labels, self.waiting),
            Sample(NUM_REQUESTS_RUNNING, labels, self.running),
        ]


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render_text(samples: list[Sample]) -> str:
    """Renders samples in the Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []
    by_name: dict[str, list[Sample]] = {}
    for sample in samples:
        by_name.setdefault(sample.name, []).append(sample)
    for name, group in by_name.items():
        lines.append(f"# HELP {name} {_HELP.get(name, name)}")
        lines.append(f"# TYPE {name} gauge")
        for sample in group:
            labels = ",".join(
                f'{key}="{_escape_label(val)}"' for key, val in sorted(sample.labels.items())
            )
            lines.append(f"{name}{{{labels}}} {_format_value(sample.value)}")
    return "\n".join(lines) + "\n"


def _check_value(field: str, value: float) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{field} must be a number, got {type(value).__name__}")
    return float(value)


class VllmMetricsExporter(LoopbackService):
    """Thread-safe, settable vLLM metrics for any number of pods on ``http://127.0.0.1:<port>``.

    ``set_pod`` replaces a pod's values atomically, so a scrape never sees half an update.
    Removing a pod drops its series from the next scrape, which Prometheus turns into a
    staleness marker, exactly like a deleted pod's target disappearing.
    """

    def __init__(self, *, port: int = 0) -> None:
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], PodMetrics] = {}
        self._scrapes = 0
        self._scrape_cond = threading.Condition(self._lock)
        self._server = LocalHTTPServer(self._handle, port=port, name="vllm-exporter")

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def target(self) -> str:
        """``host:port`` as a Prometheus static scrape target."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    # -- values -----------------------------------------------------------------------------
    def set_pod(
        self,
        namespace: str,
        app: str,
        pod: str,
        *,
        kv: float | None = None,
        waiting: float | None = None,
        running: float | None = None,
        model_name: str | None = None,
    ) -> PodMetrics:
        """Adds or updates a pod; fields left as ``None`` keep their previous (or zero) value."""
        for field, value in (("namespace", namespace), ("app", app), ("pod", pod)):
            if not value:
                raise ValueError(f"{field} must be a non-empty string")
        with self._lock:
            current = self._pods.get((namespace, pod)) or PodMetrics(namespace, app, pod)
            changes: dict[str, Any] = {"app": app}
            if kv is not None:
                changes["kv"] = _check_value("kv", kv)
            if waiting is not None:
                changes["waiting"] = _check_value("waiting", waiting)
            if running is not None:
                changes["running"] = _check_value("running", running)
            if model_name is not None:
                changes["model_name"] = model_name
            updated = attrs.evolve(current, **changes)
            self._pods[(namespace, pod)] = updated
            return updated

    def set_all(
        self,
        namespace: str,
        app: str,
        *,
        kv: float | None = None,
        waiting: float | None = None,
        running: float | None = None,
    ) -> None:
        """Sets the same values on every pod of one app (a whole Deployment's fleet)."""
        with self._lock:
            pods = [p for p in self._pods.values() if p.namespace == namespace and p.app == app]
        for p in pods:
            self.set_pod(namespace, app, p.pod, kv=kv, waiting=waiting, running=running)

    def remove_pod(self, namespace: str, pod: str) -> bool:
        """Drops a pod's series; returns whether it was present."""
        with self._lock:
            return self._pods.pop((namespace, pod), None) is not None

    def clear(self) -> None:
        with self._lock:
            self._pods.clear()

    def pods(self) -> list[PodMetrics]:
        with self._lock:
            return sorted(self._pods.values(), key=lambda p: (p.namespace, p.app, p.pod))

    def samples(self) -> list[Sample]:
        """The series the next scrape would return (the data source of ``promql_lite``)."""
        return [s for p in self.pods() for s in p.samples()]

    def __iter__(self) -> Iterator[PodMetrics]:
        return iter(self.pods())

    # -- scrape accounting ------------------------------------------------------------------
    @property
    def scrape_count(self) -> int:
        with self._lock:
            return self._scrapes

    def wait_for_scrapes(self, count: int, timeout: float = 10.0) -> bool:
        """Blocks until ``count`` more scrapes have happened (a real signal, not a sleep)."""
        with self._scrape_cond:
            goal = self._scrapes + count
            return self._scrape_cond.wait_for(lambda: self._scrapes >= goal, timeout=timeout)

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        if path != "/metrics":
            send(request, 404, b"not found\n", "text/plain; charset=utf-8")
            return
        body = render_text(self.samples()).encode()
        with self._scrape_cond:
            self._scrapes += 1
            self._scrape_cond.notify_all()
        send(request, 200, body, "text/plain; version=0.0.4; charset=utf-8")
