"""``python -m bench.run``: run the benchmarks and refresh bench/results.json, RESULTS.md, plots.

Each size runs in a fresh API server + fake Prometheus pair; our manager and the kopf peer
run one after the other against the same objects and servers. Results merge into an existing
``results.json`` by (scenario, controller, N), so sizes can be run in separate invocations;
``RESULTS.md`` is rewritten between its ``bench:begin``/``bench:end`` markers only, so the
hand-written analysis around them survives a re-run.

Examples::

    python -m bench.run                          # 100, 1,000, 5,000, 10,000 + coalescing + micro
    python -m bench.run --sizes 100,1000 --no-micro
    python -m bench.run --micro-only
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from bench import harness as h
from llmscaler_runtime.kube.times import rfc3339

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_JSON = BENCH_DIR / "results.json"
RESULTS_MD = BENCH_DIR / "RESULTS.md"
CONTROLLERS = ("llmscaler", "kopf", "llmscaler-lean", "llmscaler-1cpu")
# The manager with one worker thread and warning-level logs: isolates what GIL contention
# between workers and per-sync info logging cost (see RESULTS.md).
LEAN = "llmscaler-lean"
LEAN_FLAGS = ("--max-concurrent-reconciles", "1", "--log-level", "warning")
# The manager with default flags, its process confined to one CPU (sched_setaffinity): the
# capacity target says "on one core", and this makes it literal rather than an average.
ONE_CPU = "llmscaler-1cpu"
ONE_CPU_SET = frozenset({0})
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--sizes wants comma-separated integers: {text!r}"
        ) from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"--sizes wants positive integers: {text!r}")
    return sizes


def machine() -> dict[str, Any]:
    """What the figures were measured on (they mean little without it)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import kopf

        kopf_version = str(getattr(kopf, "__version__", "?"))
    except ImportError:
        kopf_version = "not installed"
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "ram_gib": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "kopf": kopf_version,
    }


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _record(m: h.Measured, scenario: str, extra: dict[str, Any]) -> dict[str, Any]:
    doc = attrs.asdict(m)
    doc.update(extra)
    doc["scenario"] = scenario
    doc["measured_at"] = rfc3339(time.time())
    return doc


def run_capacity(args: argparse.Namespace, say: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in args.sizes:
        s = h.Scenario(n=n, sync_period=args.sync_period, per_namespace=args.per_namespace)
        say(f"== capacity N={n} (syncPeriodSeconds {s.sync_period}, {args.periods} periods)")
        with h.scratch() as wd, h.Cluster(wd) as cluster:
            created = h.populate(cluster, s, progress=say)
            extra = {"populate_seconds": round(created, 1), "per_namespace": s.per_namespace}
            controllers: list[tuple[str, Callable[[], h.ControllerRun]]] = [
                ("llmscaler", functools.partial(h.start_manager, cluster, wd))
            ]
            if not args.no_peer and n <= args.peer_max:
                controllers.append(
                    ("kopf", functools.partial(h.start_kopf_peer, cluster, wd, s.sync_period))
                )
            if args.lean:
                controllers.append(
                    (
                        LEAN,
                        functools.partial(h.start_manager, cluster, wd, LEAN_FLAGS, LEAN),
                    )
                )
            if args.one_cpu:
                controllers.append(
                    (
                        ONE_CPU,
                        functools.partial(
                            h.start_manager, cluster, wd, (), ONE_CPU, cpus=ONE_CPU_SET
                        ),
                    )
                )
            if args.only:
                controllers = [c for c in controllers if c[0] in args.only]
            for name, start in controllers:
                load = _load()
                try:
                    m = h.run_controller(
                        cluster,
                        s,
                        start,
                        periods=args.periods,
                        reaction_sample=min(args.reaction_sample, n),
                        progress=say,
                        warmup_timeout=args.warmup_timeout,
                    )
                except (TimeoutError, RuntimeError) as exc:
                    say(f"  {name} at N={n} failed: {exc}")
                    out.append(
                        {
                            "scenario": "capacity",
                            "controller": name,
                            "n": n,
                            "error": str(exc),
                            "load_before": load,
                        }
                    )
                    continue
                pinned = {"cpu_affinity": sorted(ONE_CPU_SET)} if name == ONE_CPU else {}
                rec = _record(m, "capacity", {**extra, **pinned, "load_before": load})
                out.append(rec)
                say(_one_line(rec))
    return out


def run_coalescing(args: argparse.Namespace, say: Any) -> list[dict[str, Any]]:
    n, q = args.coalesce
    s = h.Scenario(
        n=n, sync_period=args.sync_period, per_namespace=args.per_namespace, distinct_queries=q
    )
    say(f"== coalescing: {n} scalers sharing {q} queries")
    with h.scratch() as wd, h.Cluster(wd) as cluster:
        h.populate(cluster, s, progress=say)
        load = _load()
        m = h.run_controller(
            cluster, s, lambda: h.start_manager(cluster, wd), periods=args.periods, progress=say
        )
    rec = _record(m, "coalescing", {"distinct_queries": q, "load_before": load})
    say(
        f"  coalescing: {m.prom_per_period:.1f} Prometheus queries per sync period "
        f"({m.prom_distinct_queries} distinct) for {m.reconciles / args.periods:.0f} "
        "reconciles per period"
    )
    return [rec]


def run_micro(say: Any) -> dict[str, Any]:
    say("== micro-benchmarks (pytest-benchmark)")
    out = BENCH_DIR / ".micro.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(BENCH_DIR / "micro"),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--benchmark-json={out}",
    ]
    proc = subprocess.run(cmd, cwd=BENCH_DIR.parent, check=False)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"micro-benchmarks failed (exit {proc.returncode})")
    doc = json.loads(out.read_text())
    out.unlink()
    results: dict[str, Any] = {}
    for b in doc["benchmarks"]:
        results[b["name"]] = {
            "mean_s": b["stats"]["mean"],
            "ops_per_s": b["stats"]["ops"],
            "rounds": b["stats"]["rounds"],
            **b.get("extra_info", {}),
        }
    return results


def _one_line(r: dict[str, Any]) -> str:
    return (
        f"  {r['controller']:>9} N={r['n']}: {r['reconciles_per_second']:.1f} reconciles/s, "
        f"lateness p50/p99/max {r['lateness_p50']:.3f}/{r['lateness_p99']:.3f}/"
        f"{r['lateness_max']:.3f} s, CPU {r['cpu_ms_per_reconcile']:.2f} ms/reconcile "
        f"({r['cpu_cores']:.2f} cores), peak RSS {r['peak_rss_mib']:.0f} MiB, "
        f"API writes/reconcile {r['api_writes_per_reconcile']:.3f}"
    )


def _no_nan(value: Any) -> Any:
    """NaN (a figure that does not exist, e.g. lateness with shared queries) as JSON null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


def merge(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """New records replace old ones of the same (scenario, controller, N)."""

    def key(r: dict[str, Any]) -> tuple[str, str, int]:
        return (str(r.get("scenario")), str(r.get("controller")), int(r.get("n", 0)))

    fresh = {key(r) for r in new}
    merged = [r for r in old if key(r) not in fresh] + new
    return sorted(merged, key=lambda r: (key(r)[0], key(r)[2], key(r)[1]))


def contributing_commands(records: list[dict[str, Any]], micro_command: str | None) -> list[str]:
    """Each command that produced a record still in ``records`` (or the micro-benchmarks),
    once, in first-seen order; a command whose records were all replaced is dropped."""
    seen = [str(r["command"]) for r in records if r.get("command")]
    if micro_command:
        seen.append(micro_command)
    return list(dict.fromkeys(seen))


# -- reporting ----------------------------------------------------------------------------


def _f(x: Any, fmt: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return format(x, fmt)


def render(doc: dict[str, Any]) -> str:
    """The generated part of RESULTS.md."""
    m = doc["machine"]
    lines = [
        BEGIN,
        "",
        f"Machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['ram_gib']} GiB RAM, "
        f"Python {m['python']}, kopf {m['kopf']}, {m['platform']}.",
        "",
        "Reproduce (each command merges its records into results.json): "
        + "; ".join(f"`{c}`" for c in doc["commands"]),
        "",
        "### Capacity (syncPeriodSeconds as listed; window = whole periods after warm-up)",
        "",
        "| controller | N | reconciles/s | lateness p50 / p99 / max (s) | CPU ms/reconcile "
        "| CPU cores | peak RSS MiB | API req/reconcile (by verb) | API writes/reconcile "
        "| Prom req/reconcile | reaction p50 / p99 (s) | load avg before |",
        "|---|---:|---:|---|---:|---:|---:|---|---:|---:|---|---:|",
    ]
    for r in doc["records"]:
        if r.get("scenario") != "capacity":
            continue
        if "error" in r:
            lines.append(
                f"| {r['controller']} | {r['n']} | failed: {r['error']} |  |  |  |  |  |  |  |  "
                f"| {r.get('load_before', '')} |"
            )
            continue
        verbs = ", ".join(f"{k} {v:.4f}" for k, v in r["api_per_reconcile"].items()) or "0"
        react = r.get("reaction") or {}
        lines.append(
            f"| {r['controller']} | {r['n']:,} | {r['reconciles_per_second']:.1f} "
            f"| {_f(r['lateness_p50'])} / {_f(r['lateness_p99'])} / {_f(r['lateness_max'])} "
            f"| {r['cpu_ms_per_reconcile']:.2f} | {r['cpu_cores']:.2f} "
            f"| {r['peak_rss_mib']:.0f} | {verbs} | {r['api_writes_per_reconcile']:.4f} "
            f"| {r['prom_per_reconcile']:.3f} "
            f"| {_f(react.get('p50'))} / {_f(react.get('p99'))} "
            f"({int(react.get('samples', 0))} of "
            f"{int(react.get('samples', 0) + react.get('missed', 0))}) "
            f"| {r.get('load_before', '')} |"
        )
    ratios = _ratios(doc["records"])
    if ratios:
        lines += [
            "",
            "### kopf peer / llmscaler (above 1 = llmscaler ahead)",
            "",
            "| N | CPU per reconcile | p99 lateness | peak RSS | reaction p99 |",
            "|---:|---:|---:|---:|---:|",
        ]
        for n, rr in ratios:
            lines.append(
                f"| {n:,} | {_f(rr['cpu'], '.2f')} | {_f(rr['p99'], '.2f')} "
                f"| {_f(rr['rss'], '.2f')} | {_f(rr['reaction'], '.2f')} |"
            )
    co = [r for r in doc["records"] if r.get("scenario") == "coalescing" and "error" not in r]
    if co:
        lines += [
            "",
            "### Query coalescing (llmscaler)",
            "",
            "| scalers | distinct queries | reconciles per period | Prometheus queries per "
            "period | distinct queries seen |",
            "|---:|---:|---:|---:|---:|",
        ]
        for r in co:
            per_period = r["reconciles_per_second"] * r["sync_period"]
            lines.append(
                f"| {r['n']:,} | {r['distinct_queries']} | {per_period:.0f} "
                f"| {r['prom_per_period']:.1f} | {r['prom_distinct_queries']} |"
            )
    micro = doc.get("micro") or {}
    if micro:
        lines += ["", "### Micro-benchmarks (pytest-benchmark, bench/micro)", ""]
        lines += ["| benchmark | mean per round | figure |", "|---|---:|---|"]
        for name, b in sorted(micro.items()):
            figure = b.get("figure", "")
            lines.append(f"| {name} | {b['mean_s'] * 1e3:.3f} ms | {figure} |")
    lines += ["", f"Sizes in results.json: {_sizes_run(doc['records'])}.", "", END]
    return "\n".join(lines)


def _sizes_run(records: Sequence[dict[str, Any]]) -> str:
    parts = []
    for ctl in CONTROLLERS:
        ns = sorted({r["n"] for r in records if r.get("controller") == ctl and "error" not in r})
        if ns:
            parts.append(f"{ctl}: " + ", ".join(f"{n:,}" for n in ns))
    return "; ".join(parts) or "none"


def _ratios(records: Sequence[dict[str, Any]]) -> list[tuple[int, dict[str, float]]]:
    ours = {
        r["n"]: r
        for r in records
        if r.get("scenario") == "capacity" and r["controller"] == "llmscaler" and "error" not in r
    }
    out = []
    for r in records:
        if r.get("scenario") != "capacity" or r["controller"] != "kopf" or "error" in r:
            continue
        o = ours.get(r["n"])
        if o is None:
            continue

        def ratio(a: float | None, b: float | None) -> float:
            if a is None or b is None or math.isnan(a) or math.isnan(b) or not b:
                return math.nan
            return a / b

        out.append(
            (
                r["n"],
                {
                    "cpu": ratio(r["cpu_ms_per_reconcile"], o["cpu_ms_per_reconcile"]),
                    "p99": ratio(r["lateness_p99"], o["lateness_p99"]),
                    "rss": ratio(r["peak_rss_mib"], o["peak_rss_mib"]),
                    "reaction": ratio(
                        (r.get("reaction") or {}).get("p99", math.nan),
                        (o.get("reaction") or {}).get("p99", math.nan),
                    ),
                },
            )
        )
    return sorted(out)


def plot(records: Sequence[dict[str, Any]]) -> list[Path]:
    """lateness.png (p50/p99 against N) and cpu.png (ms per reconcile, cores busy)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cap = [r for r in records if r.get("scenario") == "capacity" and "error" not in r]
    if not cap:
        return []
    colors = {"llmscaler": "tab:blue", "kopf": "tab:orange", LEAN: "tab:green", ONE_CPU: "tab:red"}

    def rows(ctl: str) -> list[dict[str, Any]]:
        return sorted((r for r in cap if r["controller"] == ctl), key=lambda r: r["n"])

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for ctl, color in colors.items():
        rs = rows(ctl)
        if rs:
            ns = [r["n"] for r in rs]
            ax.plot(ns, [r["lateness_p50"] for r in rs], "o-", color=color, label=f"{ctl} p50")
            ax.plot(ns, [r["lateness_p99"] for r in rs], "s--", color=color, label=f"{ctl} p99")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="target p99 <= 1 s")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_xlabel("LLMScalers (N)")
    ax.set_ylabel("seconds (interval - syncPeriodSeconds)")
    ax.set_title("Sync lateness")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    lateness = BENCH_DIR / "lateness.png"
    fig.savefig(lateness, dpi=110)
    plt.close(fig)

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    for ctl, color in colors.items():
        rs = rows(ctl)
        if rs:
            ns = [r["n"] for r in rs]
            left.plot(ns, [r["cpu_ms_per_reconcile"] for r in rs], "o-", color=color, label=ctl)
            right.plot(ns, [r["cpu_cores"] for r in rs], "o-", color=color, label=ctl)
    left.set_title("CPU per reconcile")
    left.set_ylabel("ms")
    left.set_ylim(bottom=0)
    right.set_title("Cores busy (controller process)")
    right.set_ylabel("CPU seconds per second")
    right.axhline(1.0, color="grey", lw=0.8, ls=":", label="one core")
    for a in (left, right):
        a.set_xscale("log")
        a.set_xlabel("LLMScalers (N)")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    cpu = BENCH_DIR / "cpu.png"
    fig.savefig(cpu, dpi=110)
    plt.close(fig)
    return [lateness, cpu]


def write_markdown(doc: dict[str, Any]) -> None:
    generated = render(doc)
    if RESULTS_MD.exists():
        text = RESULTS_MD.read_text(encoding="utf-8")
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            RESULTS_MD.write_text(head + generated + tail, encoding="utf-8")
            return
    RESULTS_MD.write_text("# llmscaler benchmarks\n\n" + generated + "\n", encoding="utf-8")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    p.add_argument("--sizes", type=_sizes, default=[100, 1000, 5000, 10000])
    p.add_argument("--sync-period", type=int, default=15)
    p.add_argument("--periods", type=int, default=3, help="measured periods after warm-up")
    p.add_argument("--per-namespace", type=int, default=100, help="scalers per namespace")
    p.add_argument(
        "--warmup-timeout",
        type=float,
        default=None,
        help="seconds a controller may take to evaluate every scaler once (default max(120, N/20))",
    )
    p.add_argument("--reaction-sample", type=int, default=100, help="scalers stepped per size")
    p.add_argument("--no-peer", action="store_true", help="skip the kopf peer")
    p.add_argument(
        "--lean",
        action="store_true",
        help=f"also run the manager with {' '.join(LEAN_FLAGS)} ({LEAN})",
    )
    p.add_argument(
        "--one-cpu",
        action="store_true",
        help=f"also run the manager confined to CPU {min(ONE_CPU_SET)} ({ONE_CPU})",
    )
    p.add_argument(
        "--only",
        type=lambda t: set(t.split(",")),
        default=None,
        metavar="NAMES",
        help=f"run only these controllers (of {', '.join(CONTROLLERS)})",
    )
    p.add_argument(
        "--peer-max",
        type=int,
        default=1000,
        help="largest N the kopf peer runs at (default 1000: on the 2-core reference machine "
        "kopf did not get through its start-up at 5,000 within 900 s, see RESULTS.md)",
    )
    p.add_argument(
        "--coalesce",
        type=lambda t: tuple(int(x) for x in t.split(",")),
        default=(1000, 10),
        metavar="SCALERS,QUERIES",
    )
    p.add_argument("--no-coalesce", action="store_true")
    p.add_argument("--no-capacity", action="store_true")
    p.add_argument("--micro", action="store_true", help="also run the micro-benchmarks")
    p.add_argument("--micro-only", action="store_true", help="only the micro-benchmarks")
    p.add_argument("--no-write", action="store_true", help="print only; leave results alone")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {msg}", flush=True)

    records: list[dict[str, Any]] = []
    micro: dict[str, Any] = {}
    if not args.micro_only:
        if not args.no_capacity:
            records += run_capacity(args, say)
        if not args.no_coalesce:
            records += run_coalescing(args, say)
    if args.micro or args.micro_only:
        micro = run_micro(say)
    if args.no_write:
        return 0
    old: dict[str, Any] = {}
    if RESULTS_JSON.exists():
        old = json.loads(RESULTS_JSON.read_text())
    flags = " ".join(argv if argv is not None else sys.argv[1:])
    command = f"make bench BENCH_ARGS='{flags}'" if flags else "make bench"
    for record in records:
        record["command"] = command
    merged = merge(old.get("records", []), records)
    micro_command = command if micro else old.get("micro_command")
    doc: dict[str, Any] = {
        "machine": machine(),
        # results merge across invocations: list the commands whose figures are still shown
        "commands": contributing_commands(merged, micro_command),
        "records": merged,
        "micro": {**old.get("micro", {}), **micro},
        "micro_command": micro_command,
    }
    RESULTS_JSON.write_text(json.dumps(_no_nan(doc), indent=1, allow_nan=False) + "\n")
    write_markdown(doc)
    for path in plot(doc["records"]):
        say(f"wrote {path.relative_to(BENCH_DIR.parent)}")
    say(f"wrote {RESULTS_JSON.relative_to(BENCH_DIR.parent)} and RESULTS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
