"""The fault campaign's rows, the invariants every row is held to, and the results table.

Each row is one fault. All rows of a kind run at once, each in its own namespace with its own
Deployment (3 replicas, bounds 1..6), LLMScaler (sync every 5 s, retry every 1 s, no
stabilization window, so a wrong scale-down would show at once) and scripted metric source:

1. healthy: the source asks for 3 replicas; the campaign waits until every scaler says so;
2. fault: the source misbehaves (or the address stops resolving) until the manager has
   evaluated every scaler several times;
3. recover: the source turns healthy and asks for 1 replica; the campaign times how long the
   fleet takes to shrink.

Invariants checked for every row (README "Fault campaign"):

* ``no_scale_down``: spec.replicas never went below 3 while the data was bad;
* ``bounds``: spec.replicas stayed within [minReplicas, maxReplicas] throughout;
* ``kept_evaluating``: the manager logged at least ``MIN_FAILED_EVALUATIONS`` failed
  evaluations of the scaler ("metric fetch failed") within ``FAULT_SECONDS``: the retry
  period, not the 5 s sync period, drives re-evaluation. (Counted from the manager's log, not
  from the Event's count: Events are written by a background thread and may lag behind.)
* ``condition``: ``ScalingActive=False`` with the failure's reason was seen during the fault;
* ``aggregated_event``: the failures are one Event object whose ``count`` grows (the Event is
  written by a background thread, so the campaign waits for it after the fault);
* ``recovered``: after the fault cleared the fleet scaled within ``RECOVERY_BOUND`` seconds;
* ``manager_alive``: the manager process never exited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from test.faults import sources as f
from test.integration.e2e.conftest import deployment as e2e_deployment
from test.integration.e2e.harness import PeriodicSampler

LLMSCALER = "autoscaling.modelsphere.dev/v1alpha1"
CAMPAIGN_LABEL = "llmscaler-fault-campaign"
START_REPLICAS, MIN_REPLICAS, MAX_REPLICAS = 3, 1, 6
SYNC_SECONDS, RETRY_SECONDS = 5, 1
#: The manager's --metrics-timeout in the campaign: a slow source fails after this.
METRICS_TIMEOUT = 1.0
#: The longest the fault lasts (it ends earlier once every row has shown its failures). The
#: first evaluation after the fault starts may wait up to a sync period (5 s), and a slow source
#: costs ~5 s per evaluation (below), so two slow failures need up to ~15 s.
FAULT_SECONDS = 20.0
MIN_FAILED_EVALUATIONS = 4
#: After the fault clears: one retry period, plus an attempt still in flight when it cleared
#: (at most the metrics timeout), plus the write and the 0.2 s sampling of the campaign.
RECOVERY_BOUND = RETRY_SECONDS + METRICS_TIMEOUT + 2.0
#: A source that never answers in time costs the manager every attempt of an evaluation:
#: 3 attempts x the 1 s timeout + backoff (0.2 + 0.4 s), all inside the sync period's budget,
#: then the retry period: an evaluation every ~4.6-5.2 s.
SLOW_EVALUATIONS = 2
RESULTS_FILE = Path(__file__).with_name("RESULTS.md")
INVARIANTS = (
    "no_scale_down",
    "bounds",
    "kept_evaluating",
    "condition",
    "aggregated_event",
    "recovered",
    "manager_alive",
)


@attrs.frozen
class Row:
    """One fault: what it is, which provider it hits, and how the source misbehaves."""

    name: str
    kind: str  # "prometheus" or "decision"
    what: str
    fault: f.Fault | None = None
    #: False: the port is closed during the fault (connection refused).
    listening: bool = True
    #: A serverAddress to put in the spec during the fault (e.g. one that does not resolve).
    address_during_fault: str | None = None
    #: Failed evaluations expected within FAULT_SECONDS. Lower where each attempt must first
    #: wait out the metrics timeout, or where every other evaluation succeeds (and the next one
    #: then waits a whole sync period, as it should).
    min_failed_evaluations: int = MIN_FAILED_EVALUATIONS
    #: Seconds within which scaling must resume after the fault clears.
    recovery_bound: float = RECOVERY_BOUND

    @property
    def reason(self) -> str:
        return "FailedGetMetrics" if self.kind == "prometheus" else "FailedGetDecision"


P, D = "prometheus", "decision"
NOT_JSON = b"<html><body>502 Bad Gateway</body></html>"
ROWS: tuple[Row, ...] = (
    Row("prom-down", P, "Prometheus down: the port refuses connections", listening=False),
    Row("prom-reset", P, "accepts, then resets the connection", f.reset),
    Row(
        "prom-slow",
        P,
        "answers after 3 s, past the 1 s timeout",
        f.slow(3.0),
        min_failed_evaluations=SLOW_EVALUATIONS,
    ),
    Row(
        "prom-trickle",
        P,
        "drips one byte every 0.3 s",
        f.trickle(0.3, 6.0),
        min_failed_evaluations=SLOW_EVALUATIONS,
    ),
    Row("prom-close-mid-body", P, "closes halfway through the body", f.close_mid_body),
    Row("prom-html", P, "200 with an HTML error page", f.body(NOT_JSON, "text/html")),
    Row("prom-truncated-json", P, "200 with JSON cut short", f.body(b'{"status":"succ')),
    Row("prom-invalid-json", P, "200 with bytes that are not JSON", f.body(b"\x00\xffnot json")),
    Row("prom-huge-body", P, "200 with a 24 MiB body", f.huge),
    Row(
        "prom-429",
        P,
        "429 Too Many Requests, Retry-After: 1",
        f.status(429, **{"Retry-After": "1"}),
    ),
    Row("prom-500", P, "500 Internal Server Error", f.status(500)),
    Row("prom-503", P, "503 Service Unavailable", f.status(503)),
    Row(
        "prom-status-error",
        P,
        'status "error" (bad PromQL)',
        f.body(b'{"status":"error","errorType":"bad_data","error":"parse error"}'),
    ),
    Row("prom-nan", P, "the value is NaN", f.prom_value("NaN")),
    Row("prom-plus-inf", P, "the value is +Inf", f.prom_value("+Inf")),
    Row("prom-minus-inf", P, "the value is -Inf", f.prom_value("-Inf")),
    Row("prom-not-a-number", P, "the value is not a number", f.prom_value("lots")),
    Row("prom-empty", P, "an empty vector", f.prom_result([])),
    Row(
        "prom-multi-series",
        P,
        "two series",
        f.prom_result(
            [
                {"metric": {"pod": "a"}, "value": [1.0, "1"]},
                {"metric": {"pod": "b"}, "value": [1.0, "1"]},
            ]
        ),
    ),
    Row("prom-matrix", P, "a range-vector result", f.prom_result([], "matrix")),
    Row(
        "prom-flapping",
        P,
        "alternates between a valid answer and 500",
        f.flapping,
        # An evaluation retries a 500 and may get the valid answer next; after a success the
        # next evaluation waits for the sync period, so failures are rarer and recovery can
        # take up to a sync period (the last evaluation before the fault cleared succeeded).
        min_failed_evaluations=1,
        recovery_bound=SYNC_SECONDS + METRICS_TIMEOUT + 2.0,
    ),
    Row(
        "prom-dns",
        P,
        "the server's host name does not resolve",
        address_during_fault="http://llmscaler-fault-campaign.invalid:9090",
    ),
    Row("decision-down", D, "decision server down: connections refused", listening=False),
    Row("decision-500", D, "500 Internal Server Error", f.status(500)),
    Row("decision-html", D, "200 with an HTML page", f.body(NOT_JSON, "text/html")),
    Row(
        "decision-slow",
        D,
        "answers after 3 s, past the 1 s timeout",
        f.slow(3.0),
        min_failed_evaluations=SLOW_EVALUATIONS,
    ),
    Row(
        "decision-other-service",
        D,
        "a decision for another serviceId only",
        f.active(2, service_id="other"),
    ),
    Row(
        "decision-two-matches",
        D,
        "two decisions match the serviceId",
        lambda a: a.send(
            200,
            (
                b'{"apiVersion":"llmscaling.inference.x-k8s.io/v1alpha1","decisions":['
                + (
                    b'{"namespace":"%s","serviceId":"svc","replicas":{"active":2}},'
                    % a.source.namespace.encode()
                )
                * 2
                + b'{"namespace":"x","serviceId":"y","replicas":{"active":1}}]}'
            ),
        ),
    ),
    Row(
        "decision-api-version",
        D,
        "an unknown apiVersion",
        f.decision({"apiVersion": "v9", "decisions": []}),
    ),
    Row("decision-float", D, "replicas.active is 2.5", f.active(2.5)),
    Row("decision-float-integral", D, "replicas.active is 2.0 (a JSON float)", f.active(2.0)),
    Row("decision-string", D, 'replicas.active is "2"', f.active("2")),
    Row("decision-boolean", D, "replicas.active is true", f.active(True)),
    Row("decision-negative", D, "replicas.active is -1", f.active(-1)),
    Row("decision-past-int32", D, "replicas.active is 2^31", f.active(2**31)),
    Row("decision-null", D, "replicas.active is null", f.active(None)),
)


def rows_selected(environ: dict[str, str] | None = None) -> tuple[Row, ...]:
    """Every row, or only those named in ``LLMSCALER_FAULT_ROWS`` (comma-separated)."""
    import os

    wanted = (environ if environ is not None else os.environ).get("LLMSCALER_FAULT_ROWS", "")
    names = {n.strip() for n in wanted.split(",") if n.strip()}
    unknown = names - {r.name for r in ROWS}
    if unknown:
        raise ValueError(f"LLMSCALER_FAULT_ROWS names unknown rows: {sorted(unknown)}")
    return tuple(r for r in ROWS if not names or r.name in names)


@attrs.define
class RowResult:
    """What one row showed; ``invariants`` judges it."""

    row: Row
    backend: str
    min_during_fault: int | None = None
    min_seen: int | None = None
    max_seen: int | None = None
    failed_evaluations: int = 0
    fault_seconds: float = 0.0
    event_objects: int = 0
    event_count: int = 0
    condition: str = ""
    recover_seconds: float | None = None
    manager_alive: bool = True
    notes: list[str] = attrs.Factory(list)

    def invariants(self) -> dict[str, bool]:
        return {
            "no_scale_down": self.min_during_fault is not None
            and self.min_during_fault >= START_REPLICAS,
            "bounds": self.min_seen is not None
            and self.max_seen is not None
            and self.min_seen >= MIN_REPLICAS
            and self.max_seen <= MAX_REPLICAS,
            "kept_evaluating": self.failed_evaluations >= self.row.min_failed_evaluations,
            "condition": self.condition == f"ScalingActive=False/{self.row.reason}",
            "aggregated_event": self.event_objects == 1
            and self.event_count >= min(2, self.failed_evaluations),
            "recovered": self.recover_seconds is not None
            and self.recover_seconds <= self.row.recovery_bound,
            "manager_alive": self.manager_alive,
        }

    @property
    def survived(self) -> bool:
        return all(self.invariants().values())


class Registry:
    """Results of every row run in this session, for the tests and the final table."""

    def __init__(self) -> None:
        self.results: dict[tuple[str, str], RowResult] = {}
        self.lock = threading.Lock()

    def add(self, result: RowResult) -> None:
        with self.lock:
            self.results[(result.backend, result.row.name)] = result

    def table(self) -> str:
        head = (
            "| backend | fault | what | "
            + " | ".join(INVARIANTS)
            + " | failed evaluations / s | recovery s |"
        )
        sep = "|" + "---|" * (len(INVARIANTS) + 5)
        lines = [head, sep]
        for (backend, _), r in sorted(self.results.items()):
            marks = r.invariants()
            cells = " | ".join("ok" if marks[i] else "**FAIL**" for i in INVARIANTS)
            rec = f"{r.recover_seconds:.2f}" if r.recover_seconds is not None else "-"
            evals = f"{r.failed_evaluations} / {r.fault_seconds:.1f}"
            lines.append(f"| {backend} | {r.row.name} | {r.row.what} | {cells} | {evals} | {rec} |")
        return "\n".join(lines)

    def counts(self) -> tuple[int, int]:
        tried = len(self.results)
        return tried, sum(1 for r in self.results.values() if r.survived)


REGISTRY = Registry()


@attrs.define
class ApiOutcome:
    """One API-side or manager-side row: its own named checks, and seconds to recover."""

    name: str
    backend: str
    what: str
    checks: dict[str, bool]
    recover_seconds: float | None

    @property
    def survived(self) -> bool:
        return all(self.checks.values())


class ApiRegistry:
    def __init__(self) -> None:
        self.results: dict[tuple[str, str], ApiOutcome] = {}
        self.lock = threading.Lock()

    def add(self, outcome: ApiOutcome) -> None:
        with self.lock:
            self.results[(outcome.backend, outcome.name)] = outcome

    def table(self) -> str:
        lines = ["| backend | fault | what | checks | recovery s |", "|---|---|---|---|---|"]
        for (backend, _), o in sorted(self.results.items()):
            checks = ", ".join(f"{k} {'ok' if v else '**FAIL**'}" for k, v in o.checks.items())
            rec = f"{o.recover_seconds:.2f}" if o.recover_seconds is not None else "-"
            lines.append(f"| {backend} | {o.name} | {o.what} | {checks} | {rec} |")
        return "\n".join(lines)

    def counts(self) -> tuple[int, int]:
        return len(self.results), sum(1 for o in self.results.values() if o.survived)


API_REGISTRY = ApiRegistry()


def scaler_spec(row: Row, ns: str, address: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": row.name},
        "serverAddress": address,
        "minReplicas": MIN_REPLICAS,
        "maxReplicas": MAX_REPLICAS,
        "syncPeriodSeconds": SYNC_SECONDS,
        "retryPeriodSeconds": RETRY_SECONDS,
        "scaleDown": {"stabilizationWindowSeconds": 0, "behavior": "None"},
    }
    if row.kind == "prometheus":
        spec["metrics"] = [{"name": "load", "query": "fault_campaign_load", "target": "1"}]
    else:
        spec["metricProvider"] = "Custom"
        spec["customProvider"] = {"serviceId": "svc", "namespace": ns}
    return {
        "apiVersion": LLMSCALER,
        "kind": "LLMScaler",
        "metadata": {"name": row.name, "namespace": ns},
        "spec": spec,
    }


def deployment(name: str, ns: str) -> dict[str, Any]:
    """The e2e suite's Deployment at START_REPLICAS, labelled for the campaign's sampler."""
    return e2e_deployment(name, ns, START_REPLICAS, **{CAMPAIGN_LABEL: "yes"})


class Sampler(PeriodicSampler):
    """Reads every campaign Deployment's spec.replicas and scaler's ScalingActive every 0.2 s."""

    def __init__(self, kube: Any) -> None:
        super().__init__()
        self.kube = kube
        self.samples: list[tuple[float, dict[str, int]]] = []
        #: (time, namespace -> "ScalingActive=<status>/<reason>") of every campaign scaler.
        self.conditions: list[tuple[float, dict[str, str]]] = []

    def sample(self) -> None:
        items = self.kube.list(
            "apps/v1", "Deployment", None, label_selector=f"{CAMPAIGN_LABEL}=yes"
        )["items"]
        by_ns = {d["metadata"]["namespace"]: int(d["spec"]["replicas"]) for d in items}
        self.samples.append((time.monotonic(), by_ns))
        scalers = self.kube.list(LLMSCALER, "LLMScaler", None)["items"]
        active: dict[str, str] = {}
        for sc in scalers:
            for c in (sc.get("status") or {}).get("conditions") or []:
                if c.get("type") == "ScalingActive":
                    key = sc["metadata"]["namespace"]
                    active[key] = f"ScalingActive={c.get('status')}/{c.get('reason')}"
        self.conditions.append((time.monotonic(), active))

    def conditions_between(self, ns: str, start: float, end: float) -> list[str]:
        return [c[ns] for t, c in self.conditions if start <= t <= end and ns in c]

    def wait_for_sample_after(self, moment: float, timeout: float = 10.0) -> None:
        """Block until the sampler has read the cluster after ``moment``."""
        if not poll(lambda: bool(self.samples) and self.samples[-1][0] > moment, timeout, 0.05):
            raise AssertionError("the fault campaign's sampler stopped reading the cluster")

    def between(self, ns: str, start: float, end: float) -> list[int]:
        return [s[ns] for t, s in self.samples if start <= t <= end and ns in s]

    def first_below(self, ns: str, value: int, after: float) -> float | None:
        for t, s in self.samples:
            if t >= after and ns in s and s[ns] < value:
                return t
        return None


def failure_events(kube: Any, ns: str, name: str, reason: str) -> tuple[int, int]:
    """(number of Event objects, summed count) of ``reason`` about the scaler ``name``."""
    items = kube.list("v1", "Event", ns)["items"]
    mine = [
        e
        for e in items
        if (e.get("involvedObject") or {}).get("name") == name and e.get("reason") == reason
    ]
    return len(mine), sum(int(e.get("count") or 1) for e in mine)


def condition(kube: Any, ns: str, name: str, ctype: str) -> dict[str, Any] | None:
    obj = kube.get(LLMSCALER, "LLMScaler", name, ns)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c  # type: ignore[no-any-return]
    return None


def failed_evaluations(log: Path, scaler: str, start: float, end: float) -> int:
    """Failed evaluations of ``scaler`` ("ns/name") the manager logged between two wall times."""
    import datetime as dt
    import json

    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return 0
    count = 0
    for line in lines:
        if scaler not in line or "metric fetch failed" not in line:
            continue
        try:
            entry = json.loads(line)
            at = dt.datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError):
            continue
        if entry.get("scaler") == scaler and start <= at <= end:
            count += 1
    return count


def poll(until: Callable[[], bool], timeout: float, interval: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if until():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def run_rows(
    rows: Iterable[Row],
    *,
    kube: Any,
    namespaces: dict[str, str],
    backend: str,
    manager_alive: Callable[[], bool],
    manager_log: Path,
) -> dict[str, RowResult]:
    """Run ``rows`` at once through the three phases; returns one result per row name."""
    rows = list(rows)
    srcs: dict[str, f.ScriptedSource] = {}
    results = {r.name: RowResult(r, backend) for r in rows}
    try:
        for r in rows:
            ns = namespaces[r.name]
            good, recover = (1.0, 0.2) if r.kind == "prometheus" else (3, 1)
            src = f.ScriptedSource(
                r.kind, r.fault, good_value=good, recover_value=recover, namespace=ns
            )
            src.start()
            srcs[r.name] = src
            kube.create(deployment(r.name, ns))
            kube.create(scaler_spec(r, ns, src.url))

        def healthy(r: Row) -> bool:
            c = condition(kube, namespaces[r.name], r.name, "ScalingActive")
            return bool(c and c.get("status") == "True")

        poll(lambda: all(healthy(r) for r in rows), timeout=90)
        for r in rows:
            if not healthy(r):
                results[r.name].notes.append("never healthy before the fault")
        with Sampler(kube) as sampler:
            sampler.wait_for_sample_after(time.monotonic())  # the healthy state, on record
            fault_start, fault_wall = time.monotonic(), time.time()
            for r in rows:
                srcs[r.name].set_phase("fault", listening=r.listening)
                if r.address_during_fault:
                    _set_address(kube, r, namespaces[r.name], r.address_during_fault)

            def failed(r: Row) -> int:
                scaler = f"{namespaces[r.name]}/{r.name}"
                return failed_evaluations(manager_log, scaler, fault_wall, time.time())

            poll(
                lambda: all(failed(r) >= r.min_failed_evaluations for r in rows),
                timeout=FAULT_SECONDS,
                interval=0.5,
            )
            fault_end, fault_wall_end = time.monotonic(), time.time()
            for r in rows:
                ns = namespaces[r.name]
                res = results[r.name]
                res.failed_evaluations = failed_evaluations(
                    manager_log, f"{ns}/{r.name}", fault_wall, fault_wall_end
                )
                res.fault_seconds = fault_end - fault_start
                failing = [
                    c
                    for c in sampler.conditions_between(ns, fault_start, fault_end)
                    if c.startswith("ScalingActive=False")
                ]
                res.condition = failing[-1] if failing else ""
            for r in rows:
                srcs[r.name].set_phase("recover")
                if r.address_during_fault:
                    _set_address(kube, r, namespaces[r.name], srcs[r.name].url)
            cleared = time.monotonic()
            poll(
                lambda: all(
                    sampler.first_below(namespaces[r.name], START_REPLICAS, cleared) is not None
                    for r in rows
                ),
                timeout=RECOVERY_BOUND + 10,
            )
            sampler.wait_for_sample_after(time.monotonic())

        # The failures' Event: written by the manager's background writer, so wait for it.
        def aggregated(r: Row) -> bool:
            want = min(2, results[r.name].failed_evaluations)
            return failure_events(kube, namespaces[r.name], r.name, r.reason)[1] >= want

        poll(lambda: all(aggregated(r) for r in rows), timeout=20, interval=0.5)
        for r in rows:
            ns, res = namespaces[r.name], results[r.name]
            res.event_objects, res.event_count = failure_events(kube, ns, r.name, r.reason)
            during = sampler.between(ns, fault_start, fault_end)
            everything = sampler.between(ns, 0, time.monotonic())
            res.min_during_fault = min(during) if during else None
            res.min_seen = min(everything) if everything else None
            res.max_seen = max(everything) if everything else None
            shrunk = sampler.first_below(ns, START_REPLICAS, cleared)
            res.recover_seconds = None if shrunk is None else shrunk - cleared
            res.manager_alive = manager_alive()
            REGISTRY.add(res)
    finally:
        for src in srcs.values():
            src.stop()
    return results


def _set_address(kube: Any, row: Row, ns: str, address: str) -> None:
    kube.patch(LLMSCALER, "LLMScaler", row.name, {"spec": {"serverAddress": address}}, ns)


def counts() -> tuple[int, int]:
    """(fault runs tried, survived) over both tables."""
    a, b = REGISTRY.counts(), API_REGISTRY.counts()
    return a[0] + b[0], a[1] + b[1]


def write_results(path: Path = RESULTS_FILE) -> None:
    tried, survived = counts()
    metric_tried, metric_survived = REGISTRY.counts()
    api_tried, api_survived = API_REGISTRY.counts()
    text = (
        "# Fault campaign results\n\n"
        "Written by `make test` (test/faults). Each row is one fault run against the real manager\n"
        "process, on the embedded API server and on the real control plane; the invariants are\n"
        "explained in `test/faults/campaign.py`. Regenerate with\n"
        "`.venv/bin/python -m pytest test/faults` (`LLMSCALER_FAULT_ROWS=a,b` runs some metric\n"
        "rows only, and then writes only those).\n\n"
        f"**{tried} fault runs, {survived} survived.**\n\n"
        f"## Metric side: {metric_tried} runs, {metric_survived} survived\n\n"
        f"Recovery bound {RECOVERY_BOUND:.1f} s unless a row says otherwise: retry period "
        f"{RETRY_SECONDS} s + metrics timeout {METRICS_TIMEOUT:.0f} s + 2 s.\n\n"
        + REGISTRY.table()
        + f"\n\n## API and manager side: {api_tried} runs, {api_survived} survived\n\n"
        + API_REGISTRY.table()
        + "\n"
    )
    path.write_text(text, encoding="utf-8")
