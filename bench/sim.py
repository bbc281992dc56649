"""Speed of the what-if simulator (issue 15, part 6): ``python -m bench.sim``.

Two figures, both over a diurnal trace (one row a minute) run through the real reconciler at
the spec's 15 s sync period with 15 s scrapes:

* one spec over 24 hours (5,760 syncs): the goal is under 5 s;
* ten variants over 7 days (eight ``--set`` combinations plus the two baselines, 40,320 syncs
  each): the goal is under a minute. The variants run in ``--jobs`` processes (default: one
  per CPU, as ``llmscaler-sim`` does); ``--jobs 1`` gives the one-process figure.

A benchmark, not a timed test: the figures go to bench/RESULTS.md by hand, with the machine
and its load average (printed before and after, since other work on a shared machine moves
the figures).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from llmscaler_sim import build_variants, generate, load_scaler, simulate_all

SPEC = Path(__file__).resolve().parents[1] / "examples" / "sim" / "scaler.yaml"
TRACE = "diurnal:duration={days}d,step=60,base=40,peak=560,noise=0.05"
SETS = ["scaleDown.stabilizationWindowSeconds=0,60,180,300", "scaleDown.maxStepReplicas=1,2"]


def one(days: float, sets: list[str], baselines: bool, jobs: int) -> tuple[float, int, int]:
    trace = generate(TRACE.format(days=days))
    variants = build_variants([("sim", load_scaler(SPEC))], sets, baselines=baselines)
    started = time.perf_counter()
    syncs = sum(r.syncs for r in simulate_all(variants, trace, jobs=jobs))
    return time.perf_counter() - started, len(variants), syncs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the 24 h figure")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()} jobs={args.jobs} load={os.getloadavg()[0]:.2f}")
    seconds, n, syncs = one(1, [], baselines=False, jobs=1)
    print(f"24 h, {n} spec: {syncs} syncs in {seconds:.2f} s ({seconds / syncs * 1e3:.3f} ms/sync)")
    if args.quick:
        return
    seconds, n, syncs = one(7, SETS, baselines=True, jobs=args.jobs)
    print(
        f"7 d, {n} variants, {args.jobs} jobs: {syncs} syncs in {seconds:.1f} s "
        f"({seconds / syncs * 1e3:.3f} ms/sync)"
    )
    print(f"load={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
