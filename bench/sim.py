"""Speed of the what-if simulator (issue 15, part 6): ``python -m bench.sim``.

Two figures, both over a diurnal trace (one row a minute) run through the real reconciler at
the spec's 15 s sync period with 15 s scrapes:

* one spec over 24 hours (5,760 syncs): the goal is under 5 s;
* ten variants over 7 days (eight ``--set`` combinations plus the two baselines, 40,320 syncs
  each): the goal is under a minute.

A benchmark, not a timed test: the figures go to bench/RESULTS.md by hand, with the machine.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from llmscaler_sim import build_variants, generate, load_scaler, simulate

SPEC = Path(__file__).resolve().parents[1] / "examples" / "sim" / "scaler.yaml"
TRACE = "diurnal:duration={days}d,step=60,base=40,peak=560,noise=0.05"
SETS = ["scaleDown.stabilizationWindowSeconds=0,60,180,300", "scaleDown.maxStepReplicas=1,2"]


def one(days: float, sets: list[str], baselines: bool) -> tuple[float, int, int]:
    trace = generate(TRACE.format(days=days))
    variants = build_variants([("sim", load_scaler(SPEC))], sets, baselines=baselines)
    started = time.perf_counter()
    syncs = sum(simulate(v, trace).syncs for v in variants)
    return time.perf_counter() - started, len(variants), syncs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the 24 h figure")
    args = parser.parse_args()
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f}")
    seconds, n, syncs = one(1, [], baselines=False)
    print(f"24 h, {n} spec: {syncs} syncs in {seconds:.2f} s ({seconds / syncs * 1e3:.3f} ms/sync)")
    if args.quick:
        return
    seconds, n, syncs = one(7, SETS, baselines=True)
    print(
        f"7 d, {n} variants: {syncs} syncs in {seconds:.1f} s ({seconds / syncs * 1e3:.3f} ms/sync)"
    )


if __name__ == "__main__":
    main()
