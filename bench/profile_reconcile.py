"""Where a steady-state reconcile's CPU goes: the real pipeline in-process, under cProfile.

The capacity benchmark measures CPU per reconcile from outside; this breaks it down. It builds
the same reconciler the manager builds (real informer cache, real HTTP metric client, the
manager's JSON logging into /dev/null) against the bench API server and fake Prometheus, lets
every scaler do its first (writing) sync, then times and profiles further passes, in which
nothing is written. cProfile sees only this thread, so reconciles run here, serially.

Run: ``python -m bench.profile_reconcile [--n 200] [--passes 5] [--out bench/profile.txt]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from pathlib import Path
from typing import Any

from bench import harness as h
from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND
from llmscaler_runtime.cache import InformerCache
from llmscaler_runtime.clock import SystemClock
from llmscaler_runtime.controller.types import Request
from llmscaler_runtime.kube import Client
from llmscaler_runtime.log import configure_logging
from llmscaler_runtime.scaling import LLMScalerReconciler, default_steps
from llmscaler_runtime.scaling.conflicts import TARGET_INDEX, target_index
from llmscaler_runtime.scaling.http import HttpOptions, MetricHttpClient


class _ShiftedClock(SystemClock):
    """Real time, with the wall clock moved ahead by ``shift`` seconds (a period per pass)."""

    def __init__(self) -> None:
        self.shift = 0.0

    def now(self) -> float:
        return time.time() + self.shift


class _NoEvents:
    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        raise AssertionError(f"unexpected event in steady state: {reason}: {message}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile_reconcile", description=__doc__)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--out", default=None, help="also write the report here")
    args = p.parse_args(argv)
    s = h.Scenario(n=args.n, sync_period=15)
    lines: list[str] = []
    with h.scratch() as wd, h.Cluster(wd) as cluster:
        h.populate(cluster, s, progress=lambda _: None)
        client = Client.from_kubeconfig(cluster.kubeconfig)
        cache = InformerCache(client)
        cache.add_indexers(API_VERSION, KIND, {TARGET_INDEX: target_index})  # as setup() does
        cache.start()
        for api_version, kind in ((API_VERSION, KIND), ("apps/v1", "Deployment")):
            cache.get_informer(api_version, kind)
        assert cache.wait_for_cache_sync(60), "informer cache did not sync"
        devnull = open(os.devnull, "w")  # noqa: SIM115 - lives for the whole run
        # Each pass stands for one sync period: the one clock's wall time moves a period per
        # pass, so every reconcile fetches (as in the capacity benchmark, one query per
        # scaler) instead of reusing the answer of the previous pass's tick.
        clock = _ShiftedClock()
        http = MetricHttpClient(HttpOptions(), clock=clock)
        steps = default_steps(http, clock=clock)
        rec = LLMScalerReconciler(client, cache, _NoEvents(), steps=steps, clock=clock)
        requests = [Request(s.namespace(i), s.name(i)) for i in range(s.n)]

        def one_period() -> None:
            clock.shift += s.sync_period
            for r in requests:
                rec.reconcile(r)

        configure_logging("info", "json", stream=devnull)
        for r in requests:  # first syncs: status writes
            rec.reconcile(r)
        api0 = int(cluster.api_counts(10**12)["next"])
        for level in ("info", "warning"):
            configure_logging(level, "json", stream=devnull)
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.passes):
                one_period()
            wall = (time.perf_counter() - t0) / (args.passes * s.n)
            cpu = (time.process_time() - c0) / (args.passes * s.n)
            lines.append(
                f"log level {level}: {cpu * 1e3:.2f} ms CPU, {wall * 1e3:.2f} ms wall per "
                "reconcile (whole process CPU: includes informer threads)"
            )
        api = h._api_summary(cluster.api_counts(api0))
        lines.append(f"API requests during the timed passes: {api or 'none'}")
        configure_logging("info", "json", stream=devnull)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.passes):
            one_period()
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.sort_stats("cumulative").print_stats(40)
        lines.append(buf.getvalue())
        cache.stop()
        http.close()
        client.close()
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
