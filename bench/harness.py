"""Capacity, reaction-time and coalescing harness: real processes, measured from outside.

Layout of one run (every box is its own OS process, so the CPU and memory figures of the
controller under test are its own):

    bench.apiserver (embedded API server + request counts)   bench.fakeprom (query log)
                 ^                                                 ^
                 +----------- controller under test ---------------+
                 (python -m llmscaler_manager, or the kopf peer in bench/peers)

The harness creates N Deployments (status set so ready == spec: a steady state with
simulation off) and N LLMScalers, starts the controller, waits until every scaler has been
evaluated and one more period has passed (start-up writes such as first status patches are
over), then measures a window of whole sync periods:

* evaluations come from the fake Prometheus log: each scaler has its own query, so the time
  of its query is the time of its sync. Lateness = interval between two evaluations of one
  scaler - syncPeriodSeconds.
* reconciles: ``controller_runtime_reconcile_total`` from the manager's /metrics; for the kopf
  peer (no such metric, no coalescing) one timer run = one query.
* CPU: psutil user+system seconds of the controller process over the window.
* RSS: peak of the process's VmHWM (kernel high-water mark) and psutil samples.
* API requests: the server's recorder, split by verb, every client except the harness's own.

Reaction time: after the window, K scalers get their metric stepped at random instants spread
over one period; a watch on Deployments records when each replicas write lands.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import psutil

from llmscaler_runtime.kube import Client, load_config

__all__ = [
    "BENCH_USER_AGENT",
    "Cluster",
    "ControllerRun",
    "Scenario",
    "percentile",
    "populate",
    "run_controller",
]

REPO = Path(__file__).resolve().parent.parent
CRD = REPO / "config/crd/bases/autoscaling.modelsphere.dev_llmscalers.yaml"
BENCH_USER_AGENT = "llmscaler-bench"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
LABEL = "bench.llmscaler/scaler"


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@attrs.frozen
class Scenario:
    """What to create: N scalers, their period, how they spread and what they query."""

    n: int
    sync_period: int = 15
    per_namespace: int = 100
    distinct_queries: int | None = None  # None: one unique query per scaler
    replicas: int = 2
    target: float = 0.5
    value: float = 0.5  # == target: the recommendation equals the current size (steady state)
    step_value: float = 1.0  # reaction phase: doubles the recommendation

    def namespace(self, i: int) -> str:
        return f"bench-{i // self.per_namespace:04d}"

    def name(self, i: int) -> str:
        return f"s-{i:05d}"

    def query(self, i: int) -> str:
        if self.distinct_queries is None:
            return f'bench_load{{scaler="{self.name(i)}"}}'
        return f'bench_load{{group="g{i % self.distinct_queries}"}}'

    def stepped_replicas(self) -> int:
        return math.ceil(self.replicas * self.step_value / self.target - 1e-9)


def _wait_file(path: Path, proc: subprocess.Popen[bytes], what: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text(encoding="utf-8")
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it was ready")
        time.sleep(0.05)
    raise TimeoutError(f"{what} not ready after {timeout:g}s")


def _http_json(url: str, body: Any = None, timeout: float = 30.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def _stop(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


class Cluster:
    """The API server and the fake Prometheus, each in its own process (context manager)."""

    def __init__(self, workdir: Path, *, default_value: float = 0.5) -> None:
        self.workdir = workdir
        self.default_value = default_value
        self.kubeconfig = str(workdir / "kubeconfig")
        self._procs: list[subprocess.Popen[bytes]] = []
        self.stats_url = ""
        self.prom_url = ""
        self._client: Client | None = None

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, args: list[str], log_name: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / log_name, "wb")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(
            [sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, cwd=REPO
        )
        log.close()  # the child holds its own descriptor
        self._procs.append(proc)
        return proc

    def start(self) -> None:
        stats_file = self.workdir / "stats.port"
        prom_file = self.workdir / "prom.port"
        api = self._spawn(
            [
                "-m",
                "bench.apiserver",
                "--kubeconfig-out",
                self.kubeconfig,
                "--stats-port-file",
                str(stats_file),
                "--crd",
                str(CRD),
            ],
            "apiserver.log",
        )
        prom = self._spawn(
            [
                "-m",
                "bench.fakeprom",
                "--port-file",
                str(prom_file),
                "--value",
                repr(self.default_value),
            ],
            "fakeprom.log",
        )
        self.prom_url = f"http://127.0.0.1:{_wait_file(prom_file, prom, 'fake Prometheus', 30)}"
        self.stats_url = f"http://127.0.0.1:{_wait_file(stats_file, api, 'API server', 60)}"
        _wait_file(Path(self.kubeconfig), api, "API server kubeconfig", 30)
        self.api_pid = api.pid
        self.prom_pid = prom.pid

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        for proc in reversed(self._procs):
            _stop(proc)
        self._procs.clear()

    @property
    def client(self) -> Client:
        """The harness's own client; its user agent keeps it out of the controller's counts."""
        if self._client is None:
            self._client = Client(load_config(self.kubeconfig), user_agent=BENCH_USER_AGENT)
        return self._client

    # -- observation ----------------------------------------------------------------------

    def api_counts(self, since: int = 0) -> dict[str, Any]:
        return dict(_http_json(f"{self.stats_url}/counts?since={since}"))

    def prom_log(self, since: int = 0) -> tuple[int, list[tuple[float, str]]]:
        doc = _http_json(f"{self.prom_url}/bench/log?since={since}")
        return int(doc["next"]), [(float(t), str(q)) for t, q in doc["entries"]]

    def set_values(self, values: dict[str, float]) -> float:
        return float(_http_json(f"{self.prom_url}/bench/set", {"values": values})["t"])


# -- populating ---------------------------------------------------------------------------


def _deployment(s: Scenario, i: int) -> dict[str, Any]:
    name = s.name(i)
    labels = {"app": name, LABEL: "true"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": s.namespace(i), "labels": labels},
        "spec": {
            "replicas": s.replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:latest"}]},
            },
        },
    }


def _ready_status(s: Scenario, generation: int) -> dict[str, Any]:
    return {
        "status": {
            "observedGeneration": generation,
            "replicas": s.replicas,
            "updatedReplicas": s.replicas,
            "readyReplicas": s.replicas,
            "availableReplicas": s.replicas,
        }
    }


def _scaler(s: Scenario, i: int, prom_url: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
        "kind": "LLMScaler",
        "metadata": {"name": s.name(i), "namespace": s.namespace(i), "labels": {LABEL: "true"}},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": s.name(i)},
            "serverAddress": prom_url,
            "minReplicas": 1,
            "maxReplicas": 20,
            "syncPeriodSeconds": s.sync_period,
            "metrics": [{"name": "load", "query": s.query(i), "target": repr(s.target)}],
        },
    }


def populate(
    cluster: Cluster,
    s: Scenario,
    *,
    threads: int = 8,
    progress: Callable[[str], None] = print,
) -> float:
    """Create namespaces, ready Deployments and LLMScalers; return the seconds it took."""
    client = cluster.client
    started = time.monotonic()
    namespaces = sorted({s.namespace(i) for i in range(s.n)})
    for ns in namespaces:
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def one(i: int) -> None:
        dep = client.create(_deployment(s, i))
        client.patch(
            "apps/v1",
            "Deployment",
            s.name(i),
            _ready_status(s, int(dep["metadata"].get("generation", 1))),
            s.namespace(i),
            subresource="status",
        )
        client.create(_scaler(s, i, cluster.prom_url))

    done = 0
    step = max(1, s.n // 10)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(one, i) for i in range(s.n)]):
            fut.result()
            done += 1
            if done % step == 0 or done == s.n:
                elapsed = time.monotonic() - started
                progress(
                    f"  created {done}/{s.n} scaler+deployment pairs in {elapsed:.1f}s "
                    f"({done / elapsed:.0f}/s)"
                )
    return time.monotonic() - started


def reset_deployments(cluster: Cluster, s: Scenario, indices: Sequence[int]) -> None:
    """Put stepped Deployments back to the steady state (run with no controller running)."""
    client = cluster.client
    for i in indices:
        dep = client.patch(
            "apps/v1", "Deployment", s.name(i), {"spec": {"replicas": s.replicas}}, s.namespace(i)
        )
        client.patch(
            "apps/v1",
            "Deployment",
            s.name(i),
            _ready_status(s, int(dep["metadata"].get("generation", 1))),
            s.namespace(i),
            subresource="status",
        )


# -- controllers under test ---------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@attrs.define
class ControllerRun:
    """A started controller process and how to ask it for its reconcile count."""

    name: str
    proc: subprocess.Popen[bytes]
    ready: Callable[[], bool]
    reconciles: Callable[[], float | None]  # None: count evaluations from the query log
    log_path: Path


def _probe(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


_RECONCILE_RE = re.compile(
    r'^controller_runtime_reconcile_total\{[^}]*result="(\w+)"[^}]*\} (\S+)$'
)


def _scrape_reconciles(url: str) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    total = 0.0
    for line in text.splitlines():
        m = _RECONCILE_RE.match(line)
        if m:
            total += float(m.group(2))
    return total


def start_manager(
    cluster: Cluster,
    workdir: Path,
    extra: Sequence[str] = (),
    name: str = "llmscaler",
    *,
    cpus: frozenset[int] | None = None,
) -> ControllerRun:
    """``python -m llmscaler_manager`` with its defaults (plus ``extra`` flags), probes and
    metrics on free ports; ``name`` labels the figures. ``cpus`` confines the process to those
    CPUs (set before the interpreter has started any thread, so every thread inherits it)."""
    probe, metrics = _free_port(), _free_port()
    log_path = workdir / f"{name}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llmscaler_manager",
            "--kubeconfig",
            cluster.kubeconfig,
            "--health-probe-bind-address",
            f"127.0.0.1:{probe}",
            "--metrics-bind-address",
            f"127.0.0.1:{metrics}",
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    log.close()
    if cpus is not None:
        os.sched_setaffinity(proc.pid, cpus)
    return ControllerRun(
        name,
        proc,
        lambda: _probe(f"http://127.0.0.1:{probe}/readyz"),
        lambda: _scrape_reconciles(f"http://127.0.0.1:{metrics}/metrics"),
        log_path,
    )


def start_kopf_peer(cluster: Cluster, workdir: Path, sync_period: int) -> ControllerRun:
    """The kopf peer (bench/peers/kopf_scaler.py) via ``kopf run --standalone -A``."""
    port = _free_port()
    log_path = workdir / "kopf.log"
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, BENCH_SYNC_PERIOD=str(sync_period))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "--all-namespaces",
            "--quiet",
            f"--liveness=http://127.0.0.1:{port}/healthz",
            str(REPO / "bench/peers/kopf_scaler.py"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env=env,
    )
    log.close()
    return ControllerRun(
        "kopf",
        proc,
        lambda: _probe(f"http://127.0.0.1:{port}/healthz"),
        lambda: None,
        log_path,
    )


# -- measuring ----------------------------------------------------------------------------


class _Sampler:
    """Samples the controller's RSS every 0.25 s for the peak (next to the kernel's VmHWM)."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, int(self.proc.memory_info().rss))

    def hwm(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return self.peak

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


def _lateness(
    entries: Sequence[tuple[float, str]], period: float, t0: float, t1: float, tracked: set[str]
) -> list[float]:
    """Interval between consecutive evaluations of one query minus the period, for the
    evaluations that fall in [t0, t1] (the first of a pair may be earlier)."""
    by_query: dict[str, list[float]] = defaultdict(list)
    for t, q in entries:
        if q in tracked:
            by_query[q].append(t)
    out: list[float] = []
    for times in by_query.values():
        times.sort()
        for a, b in itertools.pairwise(times):
            if t0 <= b <= t1:
                out.append(b - a - period)
    return out


def _wait(
    cond: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the controller exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g}s")
        time.sleep(0.2)


def _api_summary(counts: dict[str, Any]) -> dict[str, int]:
    by_verb: dict[str, int] = defaultdict(int)
    for row in counts["counts"]:
        if row["user_agent"] == BENCH_USER_AGENT:
            continue
        key = row["verb"] + (f"/{row['subresource']}" if row["subresource"] else "")
        by_verb[f"{key} {row['resource']}"] += int(row["count"])
    return dict(sorted(by_verb.items()))


@attrs.frozen
class Measured:
    """Figures of one controller over one scenario (see module docstring)."""

    controller: str
    n: int
    sync_period: int
    startup_seconds: float
    window_seconds: float
    reconciles: float
    reconciles_per_second: float
    cpu_seconds: float
    cpu_ms_per_reconcile: float
    cpu_cores: float
    lateness_p50: float
    lateness_p99: float
    lateness_max: float
    lateness_samples: int
    lateness_p90: float
    lateness_over_1s: float  # fraction of intervals more than 1 s late
    peak_rss_mib: float
    api_requests: dict[str, int]
    api_per_reconcile: dict[str, float]
    api_writes_per_reconcile: float
    prom_requests: int
    prom_per_reconcile: float
    prom_per_period: float
    prom_distinct_queries: int
    reaction: dict[str, float] | None
    reconcile_source: str


def run_controller(
    cluster: Cluster,
    s: Scenario,
    start: Callable[[], ControllerRun],
    *,
    periods: int = 3,
    reaction_sample: int = 0,
    progress: Callable[[str], None] = print,
    warmup_timeout: float | None = None,
) -> Measured:
    """Start a controller, warm up, measure ``periods`` whole periods, optionally the reaction
    time of ``reaction_sample`` scalers, stop it. Leaves the cluster in the steady state."""
    queries = {s.query(i) for i in range(s.n)}
    per_scaler = s.distinct_queries is None
    log_start, _ = cluster.prom_log(10**12)  # index of the first entry of this run
    t_spawn = time.monotonic()
    run = start()
    sampler = _Sampler(run.proc.pid)
    ps = psutil.Process(run.proc.pid)
    stepped: list[int] = []
    try:
        _wait(run.ready, 300, f"{run.name} readiness", run.proc)
        startup = time.monotonic() - t_spawn
        progress(f"  {run.name}: ready after {startup:.1f}s")
        # Warm-up: every query seen once (all scalers evaluated), then one more period so
        # start-up writes (first status, finalizers) are behind us.
        seen: set[str] = set()
        cursor = log_start

        def all_seen() -> bool:
            nonlocal cursor
            cursor, entries = cluster.prom_log(cursor)
            seen.update(q for _, q in entries)
            return queries <= seen

        warm = warmup_timeout or max(120.0, s.n / 20)
        _wait(all_seen, warm, f"{run.name} first syncs", run.proc)
        first = time.monotonic() - t_spawn
        progress(f"  {run.name}: every scaler evaluated {first:.1f}s after start")
        time.sleep(s.sync_period)  # a fixed warm-up period, not a wait for a condition
        api0 = int(cluster.api_counts(10**12)["next"])
        prom0, _ = cluster.prom_log(10**12)
        rec0 = run.reconciles()
        cpu0 = _cpu_seconds(ps)
        t0_wall, t0 = time.time(), time.monotonic()
        time.sleep(periods * s.sync_period)  # the measurement window itself
        t1_wall, t1 = time.time(), time.monotonic()
        cpu1 = _cpu_seconds(ps)
        rec1 = run.reconciles()
        api = cluster.api_counts(api0)
        _, window_entries = cluster.prom_log(prom0)
        window = t1 - t0
        _, all_entries = cluster.prom_log(log_start)
        window_entries = [e for e in window_entries if e[0] <= t1_wall]
        if rec0 is not None and rec1 is not None:
            reconciles, source = rec1 - rec0, "controller_runtime_reconcile_total"
        else:
            reconciles, source = float(len(window_entries)), "fake Prometheus queries"
        late = (
            _lateness(all_entries, s.sync_period, t0_wall, t1_wall, queries) if per_scaler else []
        )
        api_req = _api_summary(api)
        writes = sum(n for k, n in api_req.items() if k.split("/")[0].split(" ")[0] in WRITE_VERBS)
        denom = max(reconciles, 1.0)
        reaction = None
        if reaction_sample:
            stepped = random.Random(7).sample(range(s.n), min(reaction_sample, s.n))
            reaction = _reaction(cluster, s, stepped, progress)
        peak = max(sampler.hwm(), sampler.peak)
        cpu = cpu1 - cpu0
        return Measured(
            controller=run.name,
            n=s.n,
            sync_period=s.sync_period,
            startup_seconds=round(startup, 2),
            window_seconds=round(window, 2),
            reconciles=reconciles,
            reconciles_per_second=reconciles / window,
            cpu_seconds=cpu,
            cpu_ms_per_reconcile=1000.0 * cpu / denom,
            cpu_cores=cpu / window,
            lateness_p50=percentile(late, 50),
            lateness_p99=percentile(late, 99),
            lateness_max=max(late) if late else math.nan,
            lateness_samples=len(late),
            lateness_p90=percentile(late, 90),
            lateness_over_1s=sum(1 for x in late if x > 1.0) / len(late) if late else math.nan,
            peak_rss_mib=peak / 2**20,
            api_requests=api_req,
            api_per_reconcile={k: v / denom for k, v in api_req.items()},
            api_writes_per_reconcile=writes / denom,
            prom_requests=len(window_entries),
            prom_per_reconcile=len(window_entries) / denom,
            prom_per_period=len(window_entries) / window * s.sync_period,
            prom_distinct_queries=len({q for _, q in window_entries}),
            reaction=reaction,
            reconcile_source=source,
        )
    finally:
        sampler.stop()
        _stop(run.proc)
        if stepped:
            cluster.set_values({s.query(i): s.value for i in stepped})
            reset_deployments(cluster, s, stepped)


def _reaction(
    cluster: Cluster, s: Scenario, indices: Sequence[int], progress: Callable[[str], None]
) -> dict[str, float]:
    """Step each scaler's metric at a random instant within one period; time the write."""
    client = cluster.client
    want = s.stepped_replicas()
    by_key = {f"{s.namespace(i)}/{s.name(i)}": i for i in indices}
    seen_at: dict[int, float] = {}
    stepped_at: dict[int, float] = {}
    lock = threading.Lock()
    _, rv = client.list_all("apps/v1", "Deployment", label_selector=f"{LABEL}=true", limit=500)
    stream = client.watch(
        "apps/v1", "Deployment", resource_version=rv, label_selector=f"{LABEL}=true"
    )

    def watch() -> None:
        with contextlib.suppress(Exception):  # closed by the harness: the stream ends
            for ev in stream:
                obj = ev.get("object") or {}
                meta = obj.get("metadata") or {}
                i = by_key.get(f"{meta.get('namespace')}/{meta.get('name')}")
                if i is None or ev.get("type") != "MODIFIED":
                    continue
                if (obj.get("spec") or {}).get("replicas") == want:
                    with lock:
                        seen_at.setdefault(i, time.time())

    watcher = threading.Thread(target=watch, name="deployment-watch", daemon=True)
    watcher.start()
    rng = random.Random(11)
    offsets = sorted((rng.uniform(0, s.sync_period), i) for i in indices)
    base = time.monotonic()
    for offset, i in offsets:
        delay = base + offset - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # the step schedule itself
        stepped_at[i] = cluster.set_values({s.query(i): s.step_value})
    deadline = time.monotonic() + 2 * s.sync_period + 10
    while time.monotonic() < deadline:
        with lock:
            if len(seen_at) == len(indices):
                break
        time.sleep(0.1)
    stream.close()
    watcher.join(5)
    with lock:
        delays = [seen_at[i] - stepped_at[i] for i in indices if i in seen_at]
    missed = len(indices) - len(delays)
    progress(f"  reaction: {len(delays)}/{len(indices)} writes observed")
    return {
        "samples": float(len(delays)),
        "missed": float(missed),
        "p50": percentile(delays, 50),
        "p99": percentile(delays, 99),
        "max": max(delays) if delays else math.nan,
    }


@contextlib.contextmanager
def scratch(prefix: str = "llmscaler-bench-") -> Iterator[Path]:
    """A temporary working directory for process logs and kubeconfigs."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)
