"""Figures per variant, and the three ways they are shown: a terminal table, JSON and an SVG.

Every figure is computed from what the run recorded at each scrape (the fleet as Prometheus
would have seen it) and from the pods' own lifetimes, so each can be checked by hand on a small
trace:

* ``replica_hours``: every pod from creation (the pods present at the start: from the start)
  until its drain ended (cold starts and drains hold a GPU too); ``gpu_hours`` multiplies by
  the fleet model's GPUs per replica.
* ``slo_minutes``: scrape intervals in which the fleet's queue (requests waiting, plus all of
  the demand while no replica is Ready) exceeded ``Slo.max_waiting``, or its average KV-cache
  use exceeded ``Slo.max_kv``.
* ``peak_queue``: the most requests waiting at any scrape.
* ``scale_ups``/``scale_downs``: writes of ``spec.replicas``; ``cold_starts``: pods created.
* ``warm_caches_discarded``: Ready pods removed while their KV-cache use was at least
  ``Slo.warm_kv`` (what cache-aware scale-down exists to avoid); ``removed_kv_mean`` is the
  average KV-cache use of the Ready pods removed, shown beside it in the table.
* ``time_to_capacity``: for each episode in which the replicas needed (demand over per-replica
  capacity, capped at maxReplicas) exceeded the Ready replicas, seconds until enough were Ready;
  the worst and the mean are reported.
* ``failed_syncs``: syncs that could not measure (``FailedGetMetrics`` events);
  ``warnings``: every warning the scaler logged during the run (counted, not printed; the JSON
  has them by message).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import attrs

from llmscaler_sim.output import write_atomically
from llmscaler_sim.run import RunResult

__all__ = [
    "Figures",
    "Slo",
    "figures",
    "render_json",
    "render_svg",
    "render_table",
    "to_json",
    "write_json",
    "write_svg",
]


@attrs.frozen
class Slo:
    """Thresholds the report counts against (see module docstring)."""

    max_waiting: float = 10.0
    max_kv: float = 0.95
    warm_kv: float = 0.3


@attrs.frozen
class Figures:
    replica_hours: float
    gpu_hours: float
    slo_minutes: float
    peak_queue: float
    scale_ups: int
    scale_downs: int
    cold_starts: int
    warm_caches_discarded: int
    removed_kv_mean: float
    capacity_episodes: int
    time_to_capacity_max: float
    time_to_capacity_mean: float
    failed_syncs: int
    warnings: int
    syncs: int


def _capacity_episodes(result: RunResult) -> list[float]:
    cap = result.variant.scaler.spec.max_replicas
    episodes: list[float] = []
    began: float | None = None
    for s in result.scrapes:
        short = min(s.needed, cap) > s.ready
        if short and began is None:
            began = s.time
        elif not short and began is not None:
            episodes.append(s.time - began)
            began = None
    if began is not None and result.scrapes:  # still short at the end: counted as it stands
        episodes.append(result.scrapes[-1].time + result.model.scrape_interval - began)
    return episodes


def figures(result: RunResult, slo: Slo | None = None) -> Figures:
    slo = slo or Slo()
    interval = result.model.scrape_interval
    over = sum(1 for s in result.scrapes if s.waiting > slo.max_waiting or s.kv_avg > slo.max_kv)
    episodes = _capacity_episodes(result)
    ready_removed = [r for r in result.removals if r.was_ready]
    return Figures(
        replica_hours=result.replica_hours,
        gpu_hours=result.replica_hours * result.model.gpus_per_replica,
        slo_minutes=over * interval / 60.0,
        peak_queue=max((s.waiting for s in result.scrapes), default=0.0),
        scale_ups=sum(1 for d in result.decisions if d.replicas > d.previous),
        scale_downs=sum(1 for d in result.decisions if d.replicas < d.previous),
        cold_starts=result.cold_starts,
        warm_caches_discarded=sum(1 for r in ready_removed if r.kv >= slo.warm_kv),
        removed_kv_mean=(
            sum(r.kv for r in ready_removed) / len(ready_removed) if ready_removed else 0.0
        ),
        capacity_episodes=len(episodes),
        time_to_capacity_max=max(episodes, default=0.0),
        time_to_capacity_mean=sum(episodes) / len(episodes) if episodes else 0.0,
        failed_syncs=int(result.events.get("FailedGetMetrics", 0)),
        warnings=sum(result.warnings.values()),
        syncs=result.syncs,
    )


# -- terminal ------------------------------------------------------------------------------------

_COLUMNS = (
    ("variant", "variant"),
    ("GPU-h", "gpu_hours"),
    ("SLO min", "slo_minutes"),
    ("peak queue", "peak_queue"),
    ("ups/downs", None),
    ("cold starts", "cold_starts"),
    ("warm lost (KV)", "warm_caches_discarded"),
    ("to capacity max/mean s", None),
    ("failed syncs", "failed_syncs"),
    ("warnings", "warnings"),
)


def _row(name: str, f: Figures) -> list[str]:
    return [
        name,
        f"{f.gpu_hours:.1f}",
        f"{f.slo_minutes:.1f}",
        f"{f.peak_queue:.0f}",
        f"{f.scale_ups}/{f.scale_downs}",
        str(f.cold_starts),
        f"{f.warm_caches_discarded} ({f.removed_kv_mean:.2f})",
        f"{f.time_to_capacity_max:.0f}/{f.time_to_capacity_mean:.0f}",
        str(f.failed_syncs),
        str(f.warnings),
    ]


def render_table(results: Sequence[RunResult], slo: Slo | None = None, *, width: int = 160) -> str:
    """The side-by-side table as text (rich renders it; baselines are marked with *)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="what-if: one row per variant (* = baseline)")
    for title, _ in _COLUMNS:
        if title == "variant":
            table.add_column(title, justify="left", overflow="fold", min_width=18)
        else:
            table.add_column(title, justify="right")
    for r in results:
        name = r.variant.name + (" *" if r.variant.baseline else "")
        table.add_row(*_row(name, figures(r, slo)))
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    with console.capture() as capture:
        console.print(table)
    return capture.get()


# -- JSON ----------------------------------------------------------------------------------------


def to_json(results: Sequence[RunResult], slo: Slo | None = None, **context: Any) -> dict:
    slo = slo or Slo()
    out: dict[str, Any] = {**context, "slo": attrs.asdict(slo), "variants": []}
    if results:
        out["fleet"] = attrs.asdict(results[0].model)
    for r in results:
        out["variants"].append(
            {
                "name": r.variant.name,
                "baseline": r.variant.baseline,
                "overrides": dict(r.variant.overrides),
                "spec": r.variant.obj.get("spec"),
                "initial_replicas": r.initial_replicas,
                "figures": attrs.asdict(figures(r, slo)),
                "decisions": [[d.time, d.replicas] for d in r.decisions],
                "events": dict(r.events),
                "warnings": dict(r.warnings),
                "wall_seconds": round(r.wall_seconds, 3),
            }
        )
    return out


def render_json(results: Sequence[RunResult], slo: Slo | None = None, **ctx: Any) -> str:
    """The JSON report as text (:func:`to_json`, indented)."""
    return json.dumps(to_json(results, slo, **ctx), indent=2) + "\n"


def write_json(
    path: Path, results: Sequence[RunResult], slo: Slo | None = None, **ctx: Any
) -> None:
    write_atomically({path: render_json(results, slo, **ctx)})


# -- SVG -----------------------------------------------------------------------------------------

_W, _PANEL, _LEFT, _RIGHT, _TOP = 960, 150, 60, 20, 30


def _path(points: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(points))


#: Hour-axis steps; the first that gives at most 12 ticks is used (a year of trace: monthly).
_TICK_HOURS = (0.25, 0.5, 1, 2, 4, 6, 12, 24, 48, 96, 168, 336, 720, 1440, 2160, 4320, 8760)


def _tick_hours(hours: float) -> float:
    step = next((s for s in _TICK_HOURS if hours / s <= 12), None)
    if step is None:  # longer than 12 years: whole years
        return 8760.0 * math.ceil(hours / 8760 / 12)
    return float(step)


def write_svg(path: Path, results: Sequence[RunResult]) -> None:
    """:func:`render_svg` to ``path`` (nothing for no results)."""
    if results:
        write_atomically({path: render_svg(results)})


def render_svg(results: Sequence[RunResult]) -> str:
    """Replicas against demand, one panel per variant: the replicas the demand needs (grey),
    ``spec.replicas`` as written (blue) and the Ready replicas (green), over hours."""
    if not results:
        raise ValueError("no results to plot")
    end = max(r.trace_end for r in results)
    top = max(
        max((max(s.needed, s.spec_replicas, s.ready) for s in r.scrapes), default=1)
        for r in results
    )
    top = max(1, math.ceil(top * 1.1))
    plot_w = _W - _LEFT - _RIGHT
    height = _TOP + len(results) * (_PANEL + 30) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" font-family="sans-serif" font-size="11">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{_LEFT}" y="18" font-size="13">Replicas against demand: needed (grey), '
        "spec.replicas (blue), Ready (green)</text>",
    ]
    for i, r in enumerate(results):
        y0 = _TOP + i * (_PANEL + 30) + 14
        t0 = r.scrapes[0].time if r.scrapes else 0.0

        def x(t: float, t0: float = t0) -> float:
            return _LEFT + (t - t0) / end * plot_w

        def y(v: float, y0: float = y0) -> float:
            return y0 + _PANEL - v / top * _PANEL

        label = escape(r.variant.name + (" (baseline)" if r.variant.baseline else ""))
        parts.append(f'<text x="{_LEFT}" y="{y0 - 3}" font-weight="bold">{label}</text>')
        parts.append(
            f'<rect x="{_LEFT}" y="{y0}" width="{plot_w}" height="{_PANEL}" fill="none" '
            'stroke="#ccc"/>'
        )
        for v in range(0, top + 1, max(1, top // 4)):
            parts.append(
                f'<text x="{_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>'
                f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                'stroke="#eee"/>'
            )
        need: list[tuple[float, float]] = [(x(t0), y(0))]
        spec: list[tuple[float, float]] = []
        ready: list[tuple[float, float]] = []
        for s in r.scrapes:
            for series, value in ((need, s.needed), (spec, s.spec_replicas), (ready, s.ready)):
                if series:
                    series.append((x(s.time), series[-1][1]))
                series.append((x(s.time), y(value)))
        need.append((need[-1][0], y(0)))
        parts.append(f'<path d="{_path(need)} Z" fill="#ddd" stroke="none"/>')
        parts.append(f'<path d="{_path(spec)}" fill="none" stroke="#1f6fd1" stroke-width="1.5"/>')
        parts.append(f'<path d="{_path(ready)}" fill="none" stroke="#2a9d3a" stroke-width="1"/>')
        hours = end / 3600
        tick = _tick_hours(hours)
        h = 0.0
        while h <= hours + 1e-9:
            xx = _LEFT + h * 3600 / end * plot_w
            parts.append(
                f'<text x="{xx:.1f}" y="{y0 + _PANEL + 12}" text-anchor="middle">{h:g}h</text>'
            )
            h += tick
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
