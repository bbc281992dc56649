"""The fleet model: the Deployment the scaler drives, its pods, and the series they export.

This is the part of the world the simulator has to make up, kept deliberately simple and
stated here so a result can be judged by its assumptions:

* **Capacity.** A replica runs at most ``max_sequences`` sequences at once, and no more than its
  KV-cache holds (``kv_per_sequence`` of the cache each, at the reference request length,
  scaled by the trace's ``prompt_tokens + output_tokens`` when it has them). Demand beyond that
  waits in the replica's queue (``vllm:num_requests_waiting``).
* **Routing.** Demand is spread over the Ready, non-terminating pods in proportion to a
  per-pod weight: a random affinity drawn once per pod from ``[1 - load_skew, 1 + load_skew]``
  (prefix-aware routers keep sending a prompt family where its cache is), ramped up linearly
  over ``warmup_seconds`` after the pod becomes Ready. That is what makes pods differ in
  KV-cache use, and so what cache-aware scale-down can choose between.
* **Cold start.** A new pod is Ready after a delay drawn from :class:`ColdStart` (seeded).
* **Removal.** When ``spec.replicas`` drops, pods are chosen the way the ReplicaSet controller
  does (not-ready first, then the lowest ``controller.kubernetes.io/pod-deletion-cost``, then
  the most recently Ready, then the newest), so the deletion-cost hints the scaler's victim
  selection writes are honoured. A removed pod stops receiving traffic at once and holds its
  GPU for ``drain_seconds`` before it is gone.
* **Series.** Every ``scrape_interval`` the Ready, non-terminating pods export
  ``vllm:kv_cache_usage_perc``, ``vllm:num_requests_waiting`` and ``vllm:num_requests_running``
  with ``namespace``, ``app``, ``pod`` and ``model_name`` labels, as the vLLM exporter in the test
  kit does; the scaler's PromQL is evaluated over those scrapes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from llmscaler_runtime.kube.times import rfc3339
from llmscaler_runtime.scaling.types import DELETION_COST_ANNOTATION
from llmscaler_runtime.testkit.vllm_exporter import (
    DEFAULT_MODEL,
    KV_CACHE_USAGE,
    NUM_REQUESTS_RUNNING,
    NUM_REQUESTS_WAITING,
    Sample,
)

__all__ = ["ColdStart", "Fleet", "FleetModel", "Removal", "ScrapeStats", "SimPod"]


@attrs.frozen
class ColdStart:
    """Delay from a pod's creation until it is Ready.

    ``fixed``: always ``seconds``; ``uniform``: between ``seconds - spread`` and
    ``seconds + spread``; ``lognormal``: median ``seconds``, shape ``spread`` (0.3 is a
    moderate tail). Parsed from ``fixed:120``, ``uniform:120,60`` or ``lognormal:120,0.3``.
    """

    kind: Literal["fixed", "uniform", "lognormal"] = "fixed"
    seconds: float = attrs.field(default=120.0, validator=attrs.validators.ge(0))
    spread: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))

    def sample(self, rng: random.Random) -> float:
        if self.kind == "uniform":
            return max(0.0, rng.uniform(self.seconds - self.spread, self.seconds + self.spread))
        if self.kind == "lognormal" and self.seconds > 0:
            return rng.lognormvariate(math.log(self.seconds), self.spread)
        return self.seconds

    @classmethod
    def parse(cls, text: str) -> ColdStart:
        kind, _, args = text.partition(":")
        if not args:  # a bare number is a fixed delay
            kind, args = "fixed", text
        parts = [p.strip() for p in args.split(",")]
        if kind not in ("fixed", "uniform", "lognormal") or not 1 <= len(parts) <= 2:
            raise ValueError(
                f"invalid cold start {text!r}; use fixed:120, uniform:120,60 or lognormal:120,0.3"
            )
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"invalid cold start {text!r}: not a number") from None
        return cls(kind, values[0], values[1] if len(values) > 1 else 0.0)  # type: ignore[arg-type]


@attrs.frozen
class FleetModel:
    """Per-replica capacity and lifecycle (see module docstring for what each one models)."""

    max_sequences: int = attrs.field(default=64, validator=attrs.validators.gt(0))
    kv_per_sequence: float = attrs.field(default=0.015, validator=attrs.validators.gt(0))
    reference_tokens: float = attrs.field(default=1500.0, validator=attrs.validators.gt(0))
    seconds_per_request: float = attrs.field(default=10.0, validator=attrs.validators.gt(0))
    seconds_per_output_token: float = attrs.field(default=0.02, validator=attrs.validators.gt(0))
    cold_start: ColdStart = attrs.field(factory=ColdStart)
    drain_seconds: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))
    scrape_interval: float = attrs.field(default=15.0, validator=attrs.validators.gt(0))
    gpus_per_replica: float = attrs.field(default=1.0, validator=attrs.validators.ge(0))
    #: Each pod's share of the traffic is drawn from [1 - skew, 1 + skew]: below 1, or a pod
    #: could be drawn to take no traffic at all (or a negative share).
    load_skew: float = attrs.field(
        default=0.3, validator=[attrs.validators.ge(0), attrs.validators.lt(1)]
    )
    warmup_seconds: float = attrs.field(default=60.0, validator=attrs.validators.ge(0))
    model_name: str = DEFAULT_MODEL
    seed: int = 0

    def capacity(self, tokens_factor: float = 1.0) -> float:
        """Sequences one replica can run at once: its slots, or what its KV-cache holds."""
        return min(float(self.max_sequences), 1.0 / (self.kv_per_sequence * tokens_factor))

    def tokens_factor(self, prompt: float | None, output: float | None) -> float:
        """KV held per sequence relative to the reference request (1 without lengths)."""
        if prompt is None and output is None:
            return 1.0
        return max(1e-6, ((prompt or 0.0) + (output or 0.0)) / self.reference_tokens)

    def concurrency(self, rate: float, output: float | None) -> float:
        """Little's law: sequences in flight for ``rate`` requests/s."""
        seconds = (
            self.seconds_per_request if output is None else output * self.seconds_per_output_token
        )
        return rate * seconds


@attrs.define
class SimPod:
    name: str
    seq: int
    created: float
    ready_at: float
    affinity: float
    deleting_at: float | None = None
    gone_at: float | None = None
    deletion_cost: str | None = None
    kv: float = 0.0
    running: float = 0.0
    waiting: float = 0.0

    def ready(self, now: float) -> bool:
        return self.ready_at <= now and self.deleting_at is None


@attrs.frozen
class Removal:
    """A pod the workload controller removed: when, whether Ready, its KV-cache use then."""

    time: float
    pod: str
    was_ready: bool
    kv: float


@attrs.frozen
class ScrapeStats:
    """The fleet at one scrape, for the report."""

    time: float
    demand: float
    needed: int
    spec_replicas: int
    ready: int
    pods: int
    waiting: float
    kv_avg: float
    kv_max: float


class Fleet:
    """One Deployment's pods under a :class:`FleetModel` (see module docstring).

    Time is the virtual wall clock, in epoch seconds; :meth:`advance` applies every lifecycle
    step due by then (pods becoming Ready, drained pods disappearing).
    """

    def __init__(
        self, model: FleetModel, *, namespace: str, name: str, app: str, replicas: int, now: float
    ) -> None:
        self.model = model
        self.namespace, self.name, self.app = namespace, name, app
        self._rng = random.Random(model.seed)
        self.pods: list[SimPod] = []
        self.spec_replicas = 0
        self.generation = 1
        self.resource_version = 1
        self._seq = 0
        self.pod_seconds = 0.0  # pods that are gone; live ones are added by pod_hours()
        self.created_pods = 0
        self.removals: list[Removal] = []
        self._labels = {"app": app}
        self._series_labels: dict[str, Mapping[str, str]] = {}
        # Billing starts with the trace: pods present from the start are backdated by the
        # warmup (below) only so that they route as warm, not to charge for time before it.
        self.start = now
        # pods present from the start are warm and Ready (the trace starts mid-operation)
        self._create(replicas, now, ready_at=now - model.warmup_seconds, counted=False)
        self.spec_replicas = replicas

    # -- the workload controller -------------------------------------------------------------

    def _create(self, count: int, now: float, *, ready_at: float | None, counted: bool) -> None:
        for _ in range(count):
            self._seq += 1
            skew = self.model.load_skew
            pod = SimPod(
                name=f"{self.name}-sim-{self._seq:05d}",
                seq=self._seq,
                created=now if ready_at is None else min(now, ready_at),
                ready_at=ready_at
                if ready_at is not None
                else now + self.model.cold_start.sample(self._rng),
                affinity=self._rng.uniform(1 - skew, 1 + skew) if skew else 1.0,
            )
            self.pods.append(pod)
            if counted:
                self.created_pods += 1

    def set_replicas(self, replicas: int, now: float) -> None:
        """``spec.replicas`` written: create or remove pods as the ReplicaSet would."""
        self.advance(now)
        if replicas != self.spec_replicas:
            self.generation += 1
        self.spec_replicas = replicas
        active = [p for p in self.pods if p.deleting_at is None]
        if replicas > len(active):
            self._create(replicas - len(active), now, ready_at=None, counted=True)
        elif replicas < len(active):
            for pod in sorted(active, key=lambda p: self._victim_key(p, now))[
                : len(active) - replicas
            ]:
                pod.deleting_at = now
                pod.gone_at = now + self.model.drain_seconds
                self.removals.append(Removal(now, pod.name, pod.ready_at <= now, pod.kv))
        self.resource_version += 1

    @staticmethod
    def _victim_key(pod: SimPod, now: float) -> tuple[int, int, float, int]:
        ready = pod.ready_at <= now
        try:
            cost = int(pod.deletion_cost) if pod.deletion_cost is not None else 0
        except ValueError:
            cost = 0
        return (1 if ready else 0, cost, -pod.ready_at if ready else 0.0, -pod.seq)

    def advance(self, now: float) -> None:
        """Drop the pods whose drain has ended by ``now``."""
        kept: list[SimPod] = []
        for pod in self.pods:
            if pod.gone_at is not None and pod.gone_at <= now:
                self.pod_seconds += pod.gone_at - self._billed_from(pod)
            else:
                kept.append(pod)
        if len(kept) != len(self.pods):
            self.pods = kept
            self.resource_version += 1

    def _billed_from(self, pod: SimPod) -> float:
        return max(pod.created, self.start)

    def pod_hours(self, now: float) -> float:
        """Replica-hours so far: every pod from creation (or the trace's start, for the pods
        present then) until gone (or ``now``)."""
        live = sum(now - self._billed_from(p) for p in self.pods)
        return (self.pod_seconds + live) / 3600.0

    # -- load and series ---------------------------------------------------------------------

    def scrape(
        self, now: float, demand: float, tokens_factor: float = 1.0
    ) -> tuple[list[Sample], ScrapeStats]:
        """Spread ``demand`` (concurrent sequences) over the Ready pods; their exported series
        and the fleet's figures at ``now``."""
        self.advance(now)
        model = self.model
        capacity = model.capacity(tokens_factor)
        ready = [p for p in self.pods if p.ready(now)]
        weights = []
        for pod in ready:
            age = now - pod.ready_at
            warm = 1.0 if model.warmup_seconds <= 0 else min(1.0, 0.1 + age / model.warmup_seconds)
            weights.append(pod.affinity * warm)
        total_weight = sum(weights)
        samples: list[Sample] = []
        waiting_total = 0.0 if ready else demand
        kv_sum, kv_max = 0.0, 0.0
        for pod, weight in zip(ready, weights):
            share = demand * weight / total_weight if total_weight > 0 else 0.0
            pod.running = min(share, capacity)
            pod.waiting = share - pod.running
            pod.kv = min(1.0, pod.running * model.kv_per_sequence * tokens_factor)
            waiting_total += pod.waiting
            kv_sum += pod.kv
            kv_max = max(kv_max, pod.kv)
            labels = self._series_labels.get(pod.name)
            if labels is None:
                labels = self._series_labels[pod.name] = {
                    "namespace": self.namespace,
                    "app": self.app,
                    "pod": pod.name,
                    "model_name": model.model_name,
                }
            samples.append(Sample(KV_CACHE_USAGE, labels, pod.kv))
            samples.append(Sample(NUM_REQUESTS_WAITING, labels, float(round(pod.waiting))))
            samples.append(Sample(NUM_REQUESTS_RUNNING, labels, float(round(pod.running))))
        for pod in self.pods:
            if not pod.ready(now):
                pod.running = pod.waiting = 0.0
                if pod.deleting_at is None:
                    pod.kv = 0.0
        stats = ScrapeStats(
            time=now,
            demand=demand,
            needed=math.ceil(demand / capacity - 1e-9) if demand > 0 else 0,
            spec_replicas=self.spec_replicas,
            ready=len(ready),
            pods=len(self.pods),
            waiting=waiting_total,
            kv_avg=kv_sum / len(ready) if ready else 0.0,
            kv_max=kv_max,
        )
        return samples, stats

    # -- the objects the scaler reads ----------------------------------------------------------

    def deployment(self, now: float) -> dict[str, Any]:
        """The Deployment as the API server would return it (status as its controller sets it)."""
        self.advance(now)
        active = [p for p in self.pods if p.deleting_at is None]
        ready = sum(1 for p in active if p.ready_at <= now)
        terminating = len(self.pods) - len(active)
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": f"sim-deployment-{self.name}",
                "generation": self.generation,
                "resourceVersion": str(self.resource_version),
            },
            "spec": {
                "replicas": self.spec_replicas,
                "selector": {"matchLabels": dict(self._labels)},
            },
            "status": {
                "observedGeneration": self.generation,
                "replicas": len(active),
                "updatedReplicas": len(active),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "terminatingReplicas": terminating,
            },
        }

    def pod_objects(self, now: float) -> list[dict[str, Any]]:
        self.advance(now)
        out: list[dict[str, Any]] = []
        for pod in self.pods:
            meta: dict[str, Any] = {
                "name": pod.name,
                "namespace": self.namespace,
                "labels": dict(self._labels),
                "creationTimestamp": rfc3339(pod.created),
                "uid": f"sim-pod-{pod.seq}",
            }
            if pod.deletion_cost is not None:
                meta["annotations"] = {DELETION_COST_ANNOTATION: pod.deletion_cost}
            if pod.deleting_at is not None:
                meta["deletionTimestamp"] = rfc3339(pod.deleting_at)
            ready = "True" if pod.ready(now) else "False"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": meta,
                    "status": {"conditions": [{"type": "Ready", "status": ready}]},
                }
            )
        return out

    def annotate(self, pod_name: str, cost: str | None) -> bool:
        """Set (None: remove) a pod's deletion cost; False when there is no such pod."""
        for pod in self.pods:
            if pod.name == pod_name:
                pod.deletion_cost = cost
                return True
        return False
