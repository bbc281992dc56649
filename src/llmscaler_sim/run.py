"""Drive the real reconciler on a virtual clock over a trace and a fleet model.

Nothing of the scaler is re-implemented here. :class:`LLMScalerReconciler` runs as the manager
runs it, with its own steps (rollout guard, the Prometheus provider's parsing and error rules,
the HPA recommendation, scale-down pacing, cache-aware victim selection, the server-side-apply
writer); only its ports are replaced:

* the informer cache and API client by :class:`SimCache`/:class:`SimClient`, in-memory views
  of one LLMScaler, its Deployment (the :class:`~llmscaler_sim.fleet.Fleet`) and its pods;
  ``apply`` of ``spec.replicas`` resizes the fleet, a pod merge patch sets its deletion cost;
* the metric transport by :class:`SeriesTransport`, which answers the provider's
  ``/api/v1/query`` requests by evaluating the PromQL over the fleet's scrapes
  (``testkit.promql_lite``) at the virtual time, and hands the provider a Prometheus JSON reply;
* the clock by :class:`VirtualClock` (wall and monotonic advance together).

The event loop alternates scrapes (every ``scrape_interval``) and reconciles (whenever the
previous reconcile's ``Result.requeue_after`` says), scrapes first when both fall on the same
instant, so a sync sees the scrape of its own moment as a Prometheus with a fresh sample would.
"""

from __future__ import annotations

import builtins
import concurrent.futures
import contextlib
import functools
import json
import logging
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs
import structlog

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, ScaleDownBehavior
from llmscaler_runtime.controller.types import Request
from llmscaler_runtime.kube.errors import NotFound
from llmscaler_runtime.scaling import LLMScalerReconciler, default_steps
from llmscaler_runtime.scaling.http import HttpResponse
from llmscaler_runtime.scaling.providers.base import MetricError, ProviderFetcher
from llmscaler_runtime.scaling.providers.prometheus import PrometheusProvider
from llmscaler_runtime.scaling.types import DELETION_COST_ANNOTATION
from llmscaler_runtime.testkit.promql_lite import Evaluator, PromQLError, to_api_data
from llmscaler_runtime.testkit.vllm_exporter import Sample
from llmscaler_sim.fleet import Fleet, FleetModel, Removal, ScrapeStats
from llmscaler_sim.trace import Trace
from llmscaler_sim.variants import Variant, VariantError

__all__ = [
    "Decision",
    "PreflightError",
    "RunResult",
    "SeriesTransport",
    "SimCache",
    "SimClient",
    "VirtualClock",
    "capacity_replicas",
    "preflight",
    "simulate",
    "simulate_all",
    "steady_replicas",
]

T = TypeVar("T")
_SCALING_LOGGERS = ("llmscaler.scaling", "llmscaler.scaling.write")


class VirtualClock:
    """The reconciler's two clocks on simulated time: both advance by the same amounts."""

    def __init__(self, start: float) -> None:
        self.start = start
        self._now = start

    def set(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now - self.start + 1000.0  # any origin will do; never the wall clock's

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Nothing waits on simulated time: the event loop moves it, so return at once."""

    def forget_waiter(self, cond: threading.Condition) -> None:
        """No waiters are kept."""


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """RFC 7386 JSON merge patch, in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = json.loads(json.dumps(value)) if isinstance(value, Mapping) else value


class SimWorld:
    """The state behind the cache and the client: one scaler object and its fleet."""

    def __init__(self, scaler: Mapping[str, Any], fleet: Fleet, clock: VirtualClock) -> None:
        self.scaler = json.loads(json.dumps(scaler))
        meta = self.scaler.setdefault("metadata", {})
        meta.setdefault("uid", f"sim-scaler-{meta.get('name')}")
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", "2024-01-01T00:00:00Z")
        meta["resourceVersion"] = "1"
        self.fleet = fleet
        self.clock = clock

    @property
    def namespace(self) -> str:
        return str(self.scaler["metadata"]["namespace"])

    def is_target(self, api_version: str, kind: str, name: str) -> bool:
        return api_version == "apps/v1" and kind == "Deployment" and name == self.fleet.name

    def get(self, api_version: str, kind: str, name: str, namespace: str | None) -> dict | None:
        if namespace not in (None, self.namespace):
            return None
        if api_version == API_VERSION and kind == KIND:
            return self.scaler if name == self.scaler["metadata"]["name"] else None
        if self.is_target(api_version, kind, name):
            return self.fleet.deployment(self.clock.now())
        return None


class SimCache:
    """``ScalerCache`` over a :class:`SimWorld` (the informer cache's reads)."""

    def __init__(self, world: SimWorld) -> None:
        self.world = world

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        return self.world.get(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        if api_version == API_VERSION and kind == KIND:
            return [self.world.scaler]
        return []

    def by_index(
        self, api_version: str, kind: str, index_name: str, value: str
    ) -> builtins.list[dict[str, Any]]:
        raise KeyError(index_name)  # no indexes: the reconciler lists the namespace instead


class SimClient:
    """``ScalerClient`` over a :class:`SimWorld`: status patches, the replica apply, pod hints."""

    def __init__(self, world: SimWorld) -> None:
        self.world = world

    @property
    def mapper(self) -> None:
        """No RESTMapper: the simulation serves exactly the kinds it has."""
        return None

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        obj = self.world.get(api_version, kind, name, namespace)
        if obj is None:
            raise NotFound(404, "NotFound", f"{kind} {name!r} not found")
        return obj

    def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        if (api_version, kind) != ("v1", "Pod") or namespace != self.world.namespace:
            return [], "1"
        wanted = f"app={self.world.fleet.app}"
        if label_selector != wanted:
            raise ValueError(f"the simulated fleet is selected by {wanted!r}, not {label_selector}")
        return self.world.fleet.pod_objects(self.world.clock.now()), "1"

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: Literal["merge", "strategic", "json"] = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        world = self.world
        if api_version == API_VERSION and kind == KIND and subresource == "status":
            status = world.scaler.setdefault("status", {})
            _merge(status, patch.get("status") or {})
            meta = world.scaler["metadata"]
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
            return world.scaler
        if (api_version, kind) == ("v1", "Pod"):
            annotations = (patch.get("metadata") or {}).get("annotations") or {}
            cost = annotations.get(DELETION_COST_ANNOTATION)
            if not world.fleet.annotate(name, None if cost is None else str(cost)):
                raise NotFound(404, "NotFound", f"pod {name!r} not found")
            return {"metadata": {"name": name}}
        raise NotFound(404, "NotFound", f"the simulation has no {kind} {name!r} to patch")

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        world = self.world
        meta = obj.get("metadata") or {}
        identity = (str(obj.get("apiVersion")), str(obj.get("kind")), str(meta.get("name")))
        if not world.is_target(*identity):
            raise NotFound(404, "NotFound", f"the simulation has no {obj.get('kind')} to apply")
        replicas = int(obj["spec"]["replicas"])
        world.fleet.set_replicas(replicas, world.clock.now())
        return world.fleet.deployment(world.clock.now())


class SeriesTransport:
    """The provider's transport answered from the simulated series (see module docstring)."""

    def __init__(self, evaluator: Evaluator, clock: VirtualClock) -> None:
        self.evaluator = evaluator
        self.clock = clock
        self.queries = 0

    def get_as(
        self,
        read: Callable[[HttpResponse], T],
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        budget: float | None = None,
        coalesce: Hashable | None = None,
    ) -> T:
        self.queries += 1
        query = (params or {}).get("query", "")
        try:
            value = self.evaluator.evaluate(query)
        except PromQLError as exc:
            doc: dict[str, Any] = {"status": "error", "errorType": "bad_data", "error": str(exc)}
            return read(HttpResponse(400, "application/json", json.dumps(doc).encode(), url))
        doc = {"status": "success", "data": to_api_data(value, self.clock.now())}
        return read(HttpResponse(200, "application/json", json.dumps(doc).encode(), url))


class EventCounter:
    """``EventSink`` that counts Events by reason and keeps the first message of each."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.first: dict[str, str] = {}

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.counts[reason] += 1
        self.first.setdefault(reason, message)


@attrs.frozen
class Decision:
    """A replica write: seconds since the trace started, the count before and after."""

    time: float
    previous: int
    replicas: int


@attrs.frozen
class RunResult:
    """Everything one variant's run produced; :mod:`llmscaler_sim.report` turns it into figures."""

    variant: Variant
    model: FleetModel
    trace_end: float
    initial_replicas: int
    decisions: tuple[Decision, ...]
    scrapes: tuple[ScrapeStats, ...]
    removals: tuple[Removal, ...]
    cold_starts: int
    replica_hours: float
    syncs: int
    events: Mapping[str, int]
    event_examples: Mapping[str, str]
    #: The scaler's warnings during the run by event (counted, not printed).
    warnings: Mapping[str, int]
    wall_seconds: float


_WARNING_METHODS = frozenset({"warning", "warn", "error", "exception", "critical", "fatal"})


class _WarningCounter(logging.Filter):
    """Counts the warnings (and errors) logged during a run by event, and drops every line: a
    query that fails on every sync would otherwise print thousands of them, and each decision
    is logged at info; the count goes to the report instead.

    Two entry points, because whoever configured logging decides where a structlog line goes:
    :meth:`processor` runs first in structlog's chain, whatever its logger factory (the stdlib,
    or structlog's own print logger), and the stdlib :meth:`filter` catches plain ``logging``
    records of the scaling loggers.
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def processor(self, _logger: Any, method: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
        if method in _WARNING_METHODS:
            self.counts[str(event.get("event"))] += 1
        raise structlog.DropEvent

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            event = record.msg.get("event") if isinstance(record.msg, Mapping) else None
            self.counts[str(event or record.getMessage())] += 1
        return False


@contextlib.contextmanager
def _quiet_scaling_logs() -> Iterator[_WarningCounter]:
    """Count, not print, what the reconciler logs during a run (see :class:`_WarningCounter`).

    structlog's configuration is process-wide, so other threads' structlog lines are held back
    (and their warnings counted) for as long as a run lasts; the simulator is a batch tool.
    """
    counter = _WarningCounter()
    configured = structlog.is_configured()
    processors = structlog.get_config()["processors"]
    structlog.configure(processors=[counter.processor, *processors])
    loggers = [logging.getLogger(n) for n in _SCALING_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        # below warning nothing is kept, so let the reconciler skip building its info lines
        lg.setLevel(max(logging.WARNING, lg.getEffectiveLevel()))
        lg.addFilter(counter)
    try:
        yield counter
    finally:
        if configured:
            structlog.configure(processors=processors)
        else:
            structlog.reset_defaults()
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
            lg.removeFilter(counter)


def _target_labels(variant: Variant) -> tuple[str, str]:
    spec = variant.scaler.spec
    return variant.scaler.namespace, spec.target_ref.name


def capacity_replicas(variant: Variant, trace: Trace, model: FleetModel) -> int:
    """The replicas the first row needs at 100 % of a replica's capacity, within the spec's
    bounds: where :func:`steady_replicas` starts looking."""
    spec = variant.scaler.spec
    demand, factor = _demand_at(trace, model, 0)
    needed = math.ceil(demand / model.capacity(factor) - 1e-9) if demand > 0 else 0
    return max(spec.min_replicas, min(spec.max_replicas, max(1, needed)))


def _demand_at(trace: Trace, model: FleetModel, i: int) -> tuple[float, float]:
    """Row ``i`` as (concurrent sequences, KV-per-sequence factor)."""
    prompt = trace.prompt_tokens[i] if trace.prompt_tokens is not None else None
    output = trace.output_tokens[i] if trace.output_tokens is not None else None
    value = trace.demand[i]
    if trace.unit == "rate":
        value = model.concurrency(value, output)
    return value, model.tokens_factor(prompt, output)


class _Sim:
    """One variant's simulated world at the trace's start: the fleet, the series, the real
    reconciler on its ports (see module docstring)."""

    def __init__(
        self,
        variant: Variant,
        trace: Trace,
        model: FleetModel,
        replicas: int,
        app_label: str | None,
    ) -> None:
        self.variant, self.trace, self.model = variant, trace, model
        namespace, target = _target_labels(variant)
        self.clock = clock = VirtualClock(trace.start_epoch)
        self.fleet = Fleet(
            model,
            namespace=namespace,
            name=target,
            app=app_label or target,
            replicas=replicas,
            now=clock.now(),
        )
        world = SimWorld(variant.obj, self.fleet, clock)
        self.latest: list[Sample] = []
        self.evaluator = Evaluator(lambda: self.latest, clock=clock, history_seconds=3600.0)
        self.prometheus = PrometheusProvider(SeriesTransport(self.evaluator, clock), clock)
        steps = attrs.evolve(
            default_steps(clock=clock),
            fetcher=ProviderFetcher(prometheus=self.prometheus, custom=self.prometheus),
            cost_source=self.prometheus,
        )
        self.events = EventCounter()
        self.reconciler = LLMScalerReconciler(
            SimClient(world), SimCache(world), self.events, steps=steps, clock=clock
        )
        self.request = Request(namespace=namespace, name=str(world.scaler["metadata"]["name"]))

    def scrape(self, t: float, row: int) -> ScrapeStats:
        """The fleet scraped at ``t`` under row ``row``'s demand, recorded for range queries."""
        self.clock.set(t)
        demand, factor = _demand_at(self.trace, self.model, row)
        snapshot, stats = self.fleet.scrape(t, demand, factor)
        self.latest[:] = snapshot
        self.evaluator.record()
        return stats

    def first_answer(self) -> int:
        """``spec.replicas`` after one scrape and one sync at the trace's start."""
        self.scrape(self.trace.start_epoch, 0)
        with _quiet_scaling_logs():
            self.reconciler.reconcile(self.request)
        return self.fleet.spec_replicas


def steady_replicas(
    variant: Variant, trace: Trace, model: FleetModel, *, app_label: str | None = None
) -> int:
    """The spec's fixed point at the trace's start: a replica count for which the real
    reconciler's first sync (the spec's metrics, targets, tolerance, caps and guards over the
    first scrape) writes no change.

    Found by asking the reconciler rather than re-deriving its arithmetic: start from
    :func:`capacity_replicas` and replace the count with the first sync's answer until the
    answer is the count. Every answer lies within the spec's bounds, so this ends; should the
    answers cycle (a spec with no fixed point at this demand), the largest of the cycle is
    taken, so the run starts with a scale-down rather than a shortfall.
    """
    n = capacity_replicas(variant, trace, model)
    seen: list[int] = []
    while n not in seen:
        seen.append(n)
        n = _Sim(variant, trace, model, n, app_label).first_answer()
    cycle = seen[seen.index(n) :]
    return max(cycle)


class PreflightError(VariantError):
    """A variant's query the simulator cannot answer on the first scrape."""


def preflight(
    variant: Variant,
    trace: Trace,
    model: FleetModel | None = None,
    *,
    replicas: int | None = None,
    app_label: str | None = None,
) -> None:
    """Ask each of the variant's queries once, through the real Prometheus provider, over the
    first scrape of a fleet of ``replicas`` (at least one; by default
    :func:`capacity_replicas`), and raise :class:`PreflightError` naming the variant and the
    query that errs or selects nothing.

    A query the simulator cannot answer (labels the simulated pods do not carry, a function
    ``promql_lite`` does not have, such as ``histogram_quantile``) would otherwise fail every
    sync of the run and report a fleet that never scaled.
    """
    model = model or FleetModel()
    if replicas is None:
        replicas = capacity_replicas(variant, trace, model)
    sim = _Sim(variant, trace, model, max(1, replicas), app_label)
    sim.scrape(trace.start_epoch, 0)
    scaler = variant.scaler
    for i, reading in enumerate(sim.prometheus.fetch(scaler, 5.0).readings):
        if reading.error is not None:
            raise PreflightError(
                f"variant {variant.name!r}: spec.metrics[{i}] query {reading.query!r} cannot "
                f"be answered over the simulated series: {reading.error}"
            )
    down = scaler.spec.scale_down
    if down.deletion_cost_query and down.behavior == ScaleDownBehavior.CACHE_AWARE:
        query = down.deletion_cost_query
        try:
            costs = sim.prometheus.pod_costs(scaler, 5.0)
        except MetricError as exc:
            raise PreflightError(
                f"variant {variant.name!r}: spec.scaleDown.deletionCostQuery {query!r} cannot "
                f"be answered over the simulated series: {exc}"
            ) from None
        if not costs:
            raise PreflightError(
                f"variant {variant.name!r}: spec.scaleDown.deletionCostQuery {query!r} "
                "selects none of the simulated pods (they carry namespace, app, pod and "
                "model_name labels)"
            )


def simulate(
    variant: Variant,
    trace: Trace,
    model: FleetModel | None = None,
    *,
    initial_replicas: int | None = None,
    app_label: str | None = None,
) -> RunResult:
    """Run one variant over ``trace`` (see module docstring) and return what happened.

    The fleet starts at ``initial_replicas``, by default at the spec's fixed point
    (:func:`steady_replicas`), so no variant begins with a forced scale-up that only its
    starting count caused. The simulated pods carry ``namespace`` (the scaler's) and ``app``
    (``app_label``, by default the target's name, as the chart's ServiceMonitor labels them):
    the spec's queries must select them the way they would select the real fleet.
    """
    model = model or FleetModel()
    started = time.perf_counter()
    if initial_replicas is not None and initial_replicas < 0:
        raise ValueError(f"initial replicas must be >= 0, got {initial_replicas}")
    replicas = (
        initial_replicas
        if initial_replicas is not None
        else steady_replicas(variant, trace, model, app_label=app_label)
    )
    sim = _Sim(variant, trace, model, replicas, app_label)
    fleet, clock, reconciler, request = sim.fleet, sim.clock, sim.reconciler, sim.request

    t0, end = trace.start_epoch, trace.start_epoch + trace.end
    interval = model.scrape_interval
    next_scrape, next_sync = t0, t0
    row = 0
    scrapes: list[ScrapeStats] = []
    decisions: list[Decision] = []
    syncs = 0
    times = trace.times
    with _quiet_scaling_logs() as warnings:
        while True:
            t = min(next_scrape, next_sync)
            if t >= end:
                break
            clock.set(t)
            if next_scrape <= next_sync:
                rel = t - t0
                while row + 1 < len(times) and times[row + 1] <= rel:
                    row += 1
                scrapes.append(sim.scrape(t, row))
                next_scrape = t0 + len(scrapes) * interval
                continue
            before = fleet.spec_replicas
            result = reconciler.reconcile(request)
            syncs += 1
            if fleet.spec_replicas != before:
                decisions.append(Decision(t - t0, before, fleet.spec_replicas))
            delay = result.requeue_after or float(variant.scaler.spec.sync_period_seconds)
            next_sync = t + delay
    return RunResult(
        variant=variant,
        model=model,
        trace_end=trace.end,
        initial_replicas=replicas,
        decisions=tuple(decisions),
        scrapes=tuple(scrapes),
        removals=tuple(fleet.removals),
        cold_starts=fleet.created_pods,
        replica_hours=fleet.pod_hours(end),
        syncs=syncs,
        events=dict(sim.events.counts),
        event_examples=dict(sim.events.first),
        warnings=dict(warnings.counts),
        wall_seconds=time.perf_counter() - started,
    )


def simulate_all(
    variants: Sequence[Variant],
    trace: Trace,
    model: FleetModel | None = None,
    *,
    jobs: int | None = None,
    initial_replicas: int | None = None,
    app_label: str | None = None,
) -> list[RunResult]:
    """:func:`simulate` for each variant, in ``variants``' order, on up to ``jobs`` processes
    (default: one per CPU; 1 runs them in this process).

    Variants share nothing (each run has its own fleet, series, clock and reconciler, and its
    randomness comes from the fleet model's seed), so running them in parallel gives the same
    results as running them one after the other, only sooner; only ``wall_seconds`` differs.
    """
    model = model or FleetModel()
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    run = functools.partial(
        simulate, trace=trace, model=model, initial_replicas=initial_replicas, app_label=app_label
    )
    if jobs == 1 or len(variants) <= 1:
        return [run(v) for v in variants]
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(variants))) as pool:
        return list(pool.map(run, variants))
