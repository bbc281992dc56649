"""The simulator's honesty check (issue 15, part 5): one short trace, two runs, same decisions.

The trace runs once through ``llmscaler_sim`` (virtual clock, simulated fleet) and once through
the real manager process against the API server, with the Deployment's pods driven by the
workload simulator and their series scraped by a real Prometheus, the per-pod values computed
from the same trace by the same rule as the fleet model (even routing: each Ready pod carries
``demand x kv_per_sequence / ready`` of KV-cache, capped at 1). The sequence of distinct replica
counts the two write must be equal; if it is not, the simulator is wrong.

The trace's levels are chosen so every reading the real system can take during a transition
(Prometheus a scrape behind the Deployment's ready count) gives the same decision, so the check
compares decisions, not the timing luck of one run: 2 replicas; a burst that needs more than
maxReplicas (2 -> 4, clamped); a collapse walked down one replica per step (4 -> 3 -> 2 -> 1).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.prometheus import PrometheusServer
from llmscaler_runtime.testkit.vllm_exporter import VllmMetricsExporter
from llmscaler_sim.fleet import ColdStart, FleetModel
from llmscaler_sim.run import simulate
from llmscaler_sim.trace import Trace
from llmscaler_sim.variants import build_variants
from test.integration.e2e.conftest import deployment, scaler
from test.integration.e2e.feeder import is_ready
from test.integration.e2e.harness import ManagerProcess, PeriodicSampler, running_manager, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.slow]

KV_PER_SEQUENCE = 0.01
STARTUP_SECONDS = 2.0
TERMINATION_SECONDS = 1.0
#: (start second, concurrency): 2 replicas hold at 70; 175 needs 3.5 x target (clamped to 4);
#: 35 needs 0.7 x target, so the fleet walks down to minReplicas one step at a time.
PHASES = ((0.0, 70.0), (8.0, 175.0), (30.0, 35.0))
DURATION = 60.0
EXPECTED = [2, 4, 3, 2, 1]


def demand_at(t: float) -> float:
    value = PHASES[0][1]
    for start, level in PHASES:
        if t >= start:
            value = level
    return value


def trace() -> Trace:
    times = [float(t) for t in range(int(DURATION))]
    return Trace(
        times=tuple(times),
        demand=tuple(demand_at(t) for t in times),
        unit="concurrency",
        end=DURATION,
        source="honesty",
    )


def model() -> FleetModel:
    return FleetModel(
        max_sequences=100,
        kv_per_sequence=KV_PER_SEQUENCE,
        cold_start=ColdStart("fixed", STARTUP_SECONDS),
        drain_seconds=TERMINATION_SECONDS,
        scrape_interval=1.0,
        load_skew=0.0,
        warmup_seconds=0.0,
    )


def scaler_object(ns: str, app: str, server: str) -> dict[str, Any]:
    selector = f'namespace="{ns}", app="{app}"'
    return scaler(
        "honest",
        ns,
        app,
        server,
        min_replicas=1,
        max_replicas=4,
        metrics=[
            {"name": "kv", "query": f"avg(vllm:kv_cache_usage_perc{{{selector}}})", "target": "0.5"}
        ],
        scale_down={
            "stabilizationWindowSeconds": 0,
            "maxStepReplicas": 1,
            "behavior": "CacheAware",
            "deletionCostQuery": f"vllm:kv_cache_usage_perc{{{selector}}} * 100",
        },
    )


def distinct(values: list[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


class TraceFeeder(PeriodicSampler):
    """Publishes each Ready pod's series from the trace, as the fleet model computes them."""

    interval = 0.1

    def __init__(self, kube: Any, exporter: VllmMetricsExporter, ns: str, app: str) -> None:
        super().__init__()
        self.kube, self.exporter, self.ns, self.app = kube, exporter, ns, app
        self.started = time.monotonic()
        self.published: set[str] = set()

    def sample(self) -> None:
        pods = self.kube.list("v1", "Pod", self.ns, label_selector=f"app={self.app}")["items"]
        ready = sorted(p["metadata"]["name"] for p in pods if is_ready(p))
        for gone in self.published - set(ready):
            self.exporter.remove_pod(self.ns, gone)
        demand = demand_at(time.monotonic() - self.started)
        for pod in ready:
            kv = min(1.0, demand / len(ready) * KV_PER_SEQUENCE)
            self.exporter.set_pod(self.ns, self.app, pod, kv=kv, running=demand / len(ready))
        self.published = set(ready)


class ReplicaRecorder(PeriodicSampler):
    interval = 0.05

    def __init__(self, kube: Any, ns: str, app: str) -> None:
        super().__init__()
        self.kube, self.ns, self.app = kube, ns, app
        self.values: list[int] = []
        self.lock = threading.Lock()

    def sample(self) -> None:
        dep = self.kube.get("apps/v1", "Deployment", self.app, self.ns)
        with self.lock:
            self.values.append(int(dep["spec"]["replicas"]))


@pytest.fixture(scope="module")
def manager(envtest: Any, kubeconfig_path: str) -> Iterator[ManagerProcess]:
    with running_manager(kubeconfig_path) as proc:
        yield proc


@pytest.fixture(scope="module")
def exporter() -> Iterator[VllmMetricsExporter]:
    with VllmMetricsExporter() as exp:
        yield exp


@pytest.fixture(scope="module")
def prom(prometheus_binary: str, exporter: VllmMetricsExporter) -> Iterator[PrometheusServer]:
    with PrometheusServer([exporter.target], "1s", prometheus_binary) as server:
        server.wait_ready(timeout=30)
        yield server


def test_simulator_and_manager_make_the_same_replica_decisions(
    kube: Any,
    namespace: str,
    manager: ManagerProcess,
    prom: PrometheusServer,
    exporter: VllmMetricsExporter,
) -> None:
    ns, app = namespace, "honest-vllm"
    obj = scaler_object(ns, app, prom.url)

    # the simulator first: it must not depend on anything the real run leaves behind
    variant = build_variants([("honest", obj)], baselines=False)[0]
    result = simulate(variant, trace(), model(), initial_replicas=2)
    simulated = distinct([2, *(d.replicas for d in result.decisions)])
    assert simulated == EXPECTED, f"the simulator itself changed: {result.decisions}"

    dep = deployment(app, ns, 2)
    template = dep["spec"]["template"]
    template["metadata"]["annotations"] = {
        "envtest.llmscaler.dev/startup-seconds": str(STARTUP_SECONDS),
        "pod-ready.stage.kwok.x-k8s.io/delay": f"{STARTUP_SECONDS:g}s",
    }
    template["spec"]["terminationGracePeriodSeconds"] = int(TERMINATION_SECONDS)
    kube.create(dep)
    wait_for(
        lambda: (
            kube.get("apps/v1", "Deployment", app, ns).get("status", {}).get("readyReplicas") == 2
        ),
        timeout=30,
        what="2 ready replicas before the trace starts",
    )
    with TraceFeeder(kube, exporter, ns, app) as feeder, ReplicaRecorder(kube, ns, app) as rec:
        wait_for(lambda: len(feeder.published) == 2, timeout=10, what="the first series")
        prom.wait_for_series(f'vllm:kv_cache_usage_perc{{namespace="{ns}", app="{app}"}}')
        feeder.started = time.monotonic()  # trace time 0 is the scaler's creation
        kube.create(obj)

        def walked_down() -> bool:
            with rec.lock:
                return distinct(rec.values)[-1:] == [1] and len(distinct(rec.values)) > 1

        wait_for(
            walked_down, timeout=DURATION + 30, what="the walk down to 1", diagnostics=manager.logs
        )
        # the trace's last phase holds at minReplicas: nothing may follow the 1
        end = feeder.started + DURATION
        wait_for(lambda: time.monotonic() >= end, timeout=DURATION + 30, what="the trace's end")
    with rec.lock:
        real = distinct(rec.values)
    assert real == simulated, (
        f"simulator {simulated} != manager {real}: the simulator is wrong\n{manager.logs()}"
    )
