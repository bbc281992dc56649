"""``llmscaler-sim``: what would these specs have done to this traffic?

    llmscaler-sim examples/sim/scaler.yaml --trace examples/sim/sample-trace.csv \\
        --set scaleDown.stabilizationWindowSeconds=0,180,300

Every input is read and checked before the first variant runs (each variant's queries are
asked once over the first scrape: one the simulated series cannot answer is an error naming
the variant and the query). The JSON, the SVG and the ``--save-trace`` CSV are rendered once
every run finished and then written all or none (:mod:`llmscaler_sim.output`), so bad input
gives one error naming the row or field and leaves nothing half-written. Exit status 2 means
bad input, or outputs that could not be written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from llmscaler_sim.fleet import ColdStart, FleetModel
from llmscaler_sim.history import HistoryError, HistoryQuery, demand_from_history
from llmscaler_sim.output import write_atomically
from llmscaler_sim.report import Slo, render_json, render_svg, render_table
from llmscaler_sim.run import RunResult, preflight, simulate_all
from llmscaler_sim.trace import Trace, TraceError, generate, load_trace, parse_duration
from llmscaler_sim.variants import VariantError, build_variants, load_scaler

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="llmscaler-sim",
        description="Replay a load trace, or a scaler's Prometheus history, through the real "
        "llmscaler pipeline on a virtual clock, for each variant of a spec.",
    )
    p.add_argument("specs", nargs="+", type=Path, help="LLMScaler YAML file(s)")
    src = p.add_argument_group("demand (one of)")
    src.add_argument("--trace", type=Path, help="CSV or JSON trace (time, concurrency|rate, ...)")
    src.add_argument(
        "--generate",
        metavar="NAME[:k=v,...]",
        help="built-in trace: diurnal, bursts, spike, ramp (e.g. bursts:duration=6h,every=30m)",
    )
    src.add_argument("--prometheus", metavar="URL", help="replay this scaler's history")
    hist = p.add_argument_group("history replay (with --prometheus)")
    hist.add_argument("--start", help="range start: ISO 8601 or epoch seconds")
    hist.add_argument("--end", help="range end: ISO 8601 or epoch seconds (default: now)")
    hist.add_argument("--step", default="60s", help="query_range step (default 60s)")
    hist.add_argument("--ready-query", help="ready replicas (default: kube-state-metrics)")
    hist.add_argument("--demand-query", help="a query whose value is the concurrency")
    hist.add_argument("--save-trace", type=Path, help="also write the rebuilt demand as CSV")
    var = p.add_argument_group("variants")
    var.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=V[,V...]",
        help="override a spec field (camelCase path); lists give the cross product",
    )
    var.add_argument("--no-baselines", action="store_true", help="skip the HPA/None baselines")
    var.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="run variants in N processes (default: one per CPU; 1: in this process)",
    )
    fl = p.add_argument_group("fleet model")
    d = FleetModel()
    fl.add_argument("--max-sequences", type=int, default=d.max_sequences)
    fl.add_argument("--kv-per-sequence", type=float, default=d.kv_per_sequence)
    fl.add_argument("--reference-tokens", type=float, default=d.reference_tokens)
    fl.add_argument("--seconds-per-request", type=float, default=d.seconds_per_request)
    fl.add_argument(
        "--cold-start",
        default="fixed:120",
        help="fixed:S, uniform:S,SPREAD, lognormal:MEDIAN,SIGMA (default fixed:120)",
    )
    fl.add_argument("--drain", default="30s", help="drain time on removal (default 30s)")
    fl.add_argument("--scrape-interval", default="15s")
    fl.add_argument("--gpus-per-replica", type=float, default=d.gpus_per_replica)
    fl.add_argument("--load-skew", type=float, default=d.load_skew)
    fl.add_argument("--warmup", default="60s", help="a new pod's traffic ramp (default 60s)")
    fl.add_argument("--seed", type=int, default=0)
    fl.add_argument(
        "--initial-replicas",
        type=int,
        help="replicas at the start, >= 0 (default: the spec's fixed point for the first row)",
    )
    fl.add_argument("--app-label", help="the pods' app label (default: the target's name)")
    fl.add_argument("--max-gap", help="longest step allowed between trace rows")
    rep = p.add_argument_group("report")
    rep.add_argument(
        "--slo-waiting",
        type=float,
        default=Slo().max_waiting,
        help="queue above which a scrape counts against the SLO",
    )
    rep.add_argument("--slo-kv", type=float, default=Slo().max_kv)
    rep.add_argument(
        "--warm-kv",
        type=float,
        default=Slo().warm_kv,
        help="KV-cache use at which a removed pod counts as a warm cache lost",
    )
    rep.add_argument(
        "--out",
        type=Path,
        default=Path("whatif"),
        help="output prefix: writes PREFIX.json and PREFIX.svg (default whatif)",
    )
    return p


def _when(text: str | None, default: float) -> float:
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise VariantError(f"{text!r} is neither epoch seconds nor an ISO 8601 time") from None
    if stamp.tzinfo is None:
        raise VariantError(f"{text!r} has no time zone (add Z or +00:00)")
    return stamp.timestamp()


def _model(args: argparse.Namespace) -> FleetModel:
    try:
        return FleetModel(
            max_sequences=args.max_sequences,
            kv_per_sequence=args.kv_per_sequence,
            reference_tokens=args.reference_tokens,
            seconds_per_request=args.seconds_per_request,
            cold_start=ColdStart.parse(args.cold_start),
            drain_seconds=parse_duration(args.drain),
            scrape_interval=parse_duration(args.scrape_interval),
            gpus_per_replica=args.gpus_per_replica,
            load_skew=args.load_skew,
            warmup_seconds=parse_duration(args.warmup),
            seed=args.seed,
        )
    except ValueError as exc:
        raise VariantError(f"fleet model: {exc}") from None


def _trace(args: argparse.Namespace, first_scaler: object, model: FleetModel) -> Trace:
    chosen = [a for a in ("trace", "generate", "prometheus") if getattr(args, a)]
    if len(chosen) != 1:
        raise VariantError("give exactly one of --trace, --generate or --prometheus")
    if args.trace:
        gap = parse_duration(args.max_gap) if args.max_gap else None
        return load_trace(args.trace, max_gap=gap)
    if args.generate:
        return generate(args.generate)
    from llmscaler_runtime.api.v1alpha1 import LLMScaler

    assert isinstance(first_scaler, LLMScaler)
    q = HistoryQuery(
        url=args.prometheus,
        start=_when(args.start, float("nan")),
        end=_when(args.end, time.time()),
        step=parse_duration(args.step),
    )
    if q.start != q.start:
        raise VariantError("--prometheus needs --start")
    trace = demand_from_history(
        q, first_scaler, model, ready_query=args.ready_query, demand_query=args.demand_query
    )
    return trace


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        scalers = [(path.stem, load_scaler(path)) for path in args.specs]
        variants = build_variants(scalers, args.set, baselines=not args.no_baselines)
        model = _model(args)
        trace = _trace(args, variants[0].scaler, model)
        if args.jobs < 1:
            raise VariantError(f"--jobs must be >= 1, got {args.jobs}")
        if args.initial_replicas is not None and args.initial_replicas < 0:
            raise VariantError(f"--initial-replicas must be >= 0, got {args.initial_replicas}")
        for v in variants:
            preflight(v, trace, model, replicas=args.initial_replicas, app_label=args.app_label)
    except (VariantError, TraceError, HistoryError, ValueError) as exc:
        print(f"llmscaler-sim: error: {exc}", file=sys.stderr)
        return 2
    slo = Slo(args.slo_waiting, args.slo_kv, args.warm_kv)
    started = time.perf_counter()
    results: list[RunResult] = simulate_all(
        variants,
        trace,
        model,
        jobs=args.jobs,
        initial_replicas=args.initial_replicas,
        app_label=args.app_label,
    )
    elapsed = time.perf_counter() - started
    json_path, svg_path = args.out.with_suffix(".json"), args.out.with_suffix(".svg")
    # everything rendered before anything is written, then all files or none (see output.py)
    files = {
        json_path: render_json(results, slo, trace=trace.source, trace_seconds=trace.end),
        svg_path: render_svg(results),
    }
    if args.save_trace:
        files[args.save_trace] = trace.to_csv()
    table = render_table(results, slo)
    try:
        write_atomically(files)
    except OSError as exc:
        print(f"llmscaler-sim: error: cannot write the outputs: {exc}", file=sys.stderr)
        return 2
    print(table, end="")
    syncs = sum(r.syncs for r in results)
    print(
        f"{len(results)} variants, {trace.end / 3600:.1f} h of trace, {syncs} syncs in "
        f"{elapsed:.1f} s; wrote {', '.join(map(str, files))}"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
