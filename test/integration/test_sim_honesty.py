"""The simulator's honesty check (issue 15, part 5): one short trace, two runs, same decisions.

The trace runs once through ``llmscaler_sim`` (virtual clock, simulated fleet) and once through
the real manager process against the API server, with the Deployment's pods driven by the
workload simulator and their series scraped by a real Prometheus, the per-pod values computed
from the same trace by the same rule as the fleet model: each Ready pod carries a share of the
demand in proportion to its traffic weight, the weight of the k-th pod created being the k-th
the fleet model draws (``load_skew``, seeded), and ``share x kv_per_sequence`` of KV-cache.
If the two runs differ in any of the following, the simulator is wrong:

* the sequence of distinct replica counts written;
* which pods were removed, by creation order: the load is unequal, so the deletion-cost query
  ranks the pods and CacheAware removes the coldest first, not the newest (with these weights
  the 3rd, then the 4th, then the 1st pod created);
* how long scale-down was held by the stabilization window after the demand fell, and the
  window-long gaps between the steps of the walk-down: the gaps within one sync period, the
  hold within two and a scrape interval (the real system's Prometheus is up to a scrape
  behind, its syncs are not aligned with the drop; see ``GAP_TOLERANCE``), plus the sampling
  intervals of this test and an allowance for a loaded machine. A window the simulator ignored
  or misread by two seconds or more fails the gaps.

The trace's levels are chosen so every reading the real system can take during a transition
(Prometheus a scrape behind the Deployment's ready count) gives the same decision, so the check
compares decisions, not the timing luck of one run: 2 replicas; a burst that needs more than
maxReplicas (2 -> 4, clamped); a dip much shorter than the window, which must not shed a
replica; then a collapse walked down one replica per window (4 -> 3 -> 2 -> 1).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from llmscaler_runtime.testkit.prometheus import PrometheusServer
from llmscaler_runtime.testkit.vllm_exporter import VllmMetricsExporter
from llmscaler_sim.fleet import ColdStart, Fleet, FleetModel
from llmscaler_sim.run import RunResult, simulate
from llmscaler_sim.trace import Trace
from llmscaler_sim.variants import build_variants
from test.integration.e2e.conftest import deployment, scaler
from test.integration.e2e.feeder import is_ready
from test.integration.e2e.harness import ManagerProcess, PeriodicSampler, running_manager, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.slow]

KV_PER_SEQUENCE = 0.01
MAX_SEQUENCES = 100
STARTUP_SECONDS = 2.0
TERMINATION_SECONDS = 1.0
WINDOW = 6  # scaleDown.stabilizationWindowSeconds
SYNC_SECONDS = 1.0  # the e2e scaler's syncPeriodSeconds
SCRAPE_SECONDS = 1.0  # Prometheus's scrape interval
#: (start second, concurrency): 2 replicas hold at 70; 175 needs 3.5 x target (clamped to 4);
#: a 2 s dip to 35, well inside the window, must not shed a replica; from 30 s 35 needs 0.7 x
#: target, so the fleet walks down to minReplicas one step per window.
PHASES = ((0.0, 70.0), (8.0, 175.0), (22.0, 35.0), (24.0, 175.0), (30.0, 35.0))
FINAL_DROP = PHASES[-1][0]
DURATION = 60.0
EXPECTED = [2, 4, 3, 2, 1]
#: the pods removed, by creation order (1 = the first created): the coldest first
EXPECTED_REMOVED = [3, 4, 1]
#: seed of the fleet model's traffic weights: 0.97, 1.30, 0.63, 0.83 for the first four pods,
#: far enough apart that the deletion costs never tie; at 175 on 2 pods the heavier is just at
#: capacity, so the average KV-cache (0.87) still asks for 4
SEED = 40
SKEW = 0.4
#: this test samples the replicas every 0.05 s and publishes series every 0.1 s; a loaded
#: 2-core machine may start a sync a few hundred milliseconds late
SAMPLING_SLACK = 0.05 + 0.1 + 0.35
#: A step of the walk-down comes a window after the previous write, at the first sync that
#: finds it out of the window; the simulator's syncs land exactly a window later, the real
#: manager's timers a few milliseconds either side, so that sync or the next: one sync period.
GAP_TOLERANCE = SYNC_SECONDS + SAMPLING_SLACK
#: The first step also depends on when the last high reading was taken: Prometheus is up to a
#: scrape behind the drop, and the syncs fall anywhere within a period of it.
HOLD_TOLERANCE = GAP_TOLERANCE + SYNC_SECONDS + SCRAPE_SECONDS


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
        max_sequences=MAX_SEQUENCES,
        kv_per_sequence=KV_PER_SEQUENCE,
        cold_start=ColdStart("fixed", STARTUP_SECONDS),
        drain_seconds=TERMINATION_SECONDS,
        scrape_interval=SCRAPE_SECONDS,
        load_skew=SKEW,
        warmup_seconds=0.0,
        seed=SEED,
    )


def traffic_weights(count: int = 16) -> list[float]:
    """The traffic weight of the k-th pod created, as the fleet model draws it: its own Fleet
    creating ``count`` pods (a fixed cold start draws nothing, so the k-th pod a run creates
    gets the k-th draw whenever it is created)."""
    fleet = Fleet(model(), namespace="w", name="w", app="w", replicas=count, now=0.0)
    return [pod.affinity for pod in fleet.pods]


def pod_load(demand: float, weights: list[float]) -> list[tuple[float, float]]:
    """(KV-cache use, running sequences) of each Ready pod, by the fleet model's rule."""
    total = sum(weights)
    out = []
    for w in weights:
        running = min(demand * w / total, float(MAX_SEQUENCES))
        out.append((min(1.0, running * KV_PER_SEQUENCE), running))
    return out


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
            "stabilizationWindowSeconds": WINDOW,
            "maxStepReplicas": 1,
            "behavior": "CacheAware",
            # x 10000: the costs of pods whose weights differ by 10 % differ by tens, not 0 or 1
            "deletionCostQuery": f"vllm:kv_cache_usage_perc{{{selector}}} * 10000",
        },
    )


def distinct(values: list[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


class TraceFeeder(PeriodicSampler):
    """Publishes each Ready pod's series from the trace, as the fleet model computes them, and
    notes the pods' creation order and the order in which they were removed."""

    interval = 0.1

    def __init__(self, kube: Any, exporter: VllmMetricsExporter, ns: str, app: str) -> None:
        super().__init__()
        self.kube, self.exporter, self.ns, self.app = kube, exporter, ns, app
        self.started = time.monotonic()
        self.published: set[str] = set()
        self.weights = traffic_weights()
        self.rank: dict[str, int] = {}  # pod -> creation order, 1 first
        self.removed: list[int] = []  # creation order of each pod removed, in removal order
        self.lock = threading.Lock()

    def sample(self) -> None:
        pods = self.kube.list("v1", "Pod", self.ns, label_selector=f"app={self.app}")["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        new = [p for p in pods if p["metadata"]["name"] not in self.rank]
        # a batch created in the same second is ordered by name: any order is a creation order
        for pod in sorted(
            new, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"])
        ):
            self.rank[pod["metadata"]["name"]] = len(self.rank) + 1
        with self.lock:
            live_names = {p["metadata"]["name"] for p in live}
            for name, rank in sorted(self.rank.items(), key=lambda item: item[1]):
                if name not in live_names and rank not in self.removed:
                    self.removed.append(rank)
        ready = sorted((p["metadata"]["name"] for p in live if is_ready(p)), key=self.rank.get)
        for gone in self.published - set(ready):
            self.exporter.remove_pod(self.ns, gone)
        demand = demand_at(time.monotonic() - self.started)
        weights = [self.weights[self.rank[pod] - 1] for pod in ready]
        for pod, (kv, running) in zip(ready, pod_load(demand, weights)):
            self.exporter.set_pod(self.ns, self.app, pod, kv=kv, running=running)
        self.published = set(ready)


class ReplicaRecorder(PeriodicSampler):
    """``spec.replicas`` of the Deployment over time: (seconds since ``started``, replicas)."""

    interval = 0.05

    def __init__(self, kube: Any, ns: str, app: str) -> None:
        super().__init__()
        self.kube, self.ns, self.app = kube, ns, app
        self.started = time.monotonic()
        self.values: list[tuple[float, int]] = []
        self.lock = threading.Lock()

    def sample(self) -> None:
        dep = self.kube.get("apps/v1", "Deployment", self.app, self.ns)
        with self.lock:
            self.values.append((time.monotonic() - self.started, int(dep["spec"]["replicas"])))

    def changes(self) -> list[tuple[float, int]]:
        """Each distinct value and when it was first seen."""
        with self.lock:
            out: list[tuple[float, int]] = []
            for t, v in self.values:
                if not out or out[-1][1] != v:
                    out.append((t, v))
            return out


def scale_down_times(changes: list[tuple[float, int]]) -> list[float]:
    """Seconds after the final drop at which each step of the walk-down was written."""
    return [
        t - FINAL_DROP
        for (_, before), (t, v) in itertools.pairwise(changes)
        if v < before and t >= FINAL_DROP
    ]


def simulated_removals(result: RunResult) -> list[int]:
    """Creation order of each simulated pod removed (the fleet names pods by it)."""
    return [int(r.pod.rsplit("-", 1)[-1]) for r in result.removals]


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
    assert simulated_removals(result) == EXPECTED_REMOVED, result.removals
    sim_downs = [d.time - FINAL_DROP for d in result.decisions if d.replicas < d.previous]
    assert len(sim_downs) == 3 and sim_downs[0] >= WINDOW - SYNC_SECONDS, sim_downs

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
        # trace time 0 is the scaler's creation
        feeder.started = rec.started = time.monotonic()
        kube.create(obj)

        def walked_down() -> bool:
            values = [v for _, v in rec.changes()]
            return values[-1:] == [1] and len(values) > 1

        wait_for(
            walked_down, timeout=DURATION + 30, what="the walk down to 1", diagnostics=manager.logs
        )
        # the trace's last phase holds at minReplicas: nothing may follow the 1
        end = feeder.started + DURATION
        wait_for(lambda: time.monotonic() >= end, timeout=DURATION + 30, what="the trace's end")
    changes = rec.changes()
    real = [v for _, v in changes]
    assert real == simulated, (
        f"simulator {simulated} != manager {real}: the simulator is wrong\n{manager.logs()}"
    )
    with feeder.lock:
        removed = list(feeder.removed)
    assert removed == simulated_removals(result), (
        f"the manager removed pods {removed} (by creation order), the simulator "
        f"{simulated_removals(result)}: the simulator's victim selection is wrong"
    )
    # held for the window after the drop, then one window between steps, in both
    real_downs = scale_down_times(changes)
    assert real_downs[0] >= WINDOW - SYNC_SECONDS, f"the manager did not hold: {changes}"
    assert abs(real_downs[0] - sim_downs[0]) <= HOLD_TOLERANCE, (
        f"held {real_downs[0]:.2f} s by the manager, {sim_downs[0]:.2f} s by the simulator; "
        f"the manager wrote {changes}"
    )
    real_gaps = [b - a for a, b in itertools.pairwise(real_downs)]
    sim_gaps = [b - a for a, b in itertools.pairwise(sim_downs)]
    for real_gap, sim_gap in zip(real_gaps, sim_gaps, strict=True):
        assert abs(real_gap - sim_gap) <= GAP_TOLERANCE, (
            f"steps {real_gaps} s apart in the manager, {sim_gaps} s in the simulator"
        )
