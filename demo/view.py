"""What the demo shows: a live rich view on a terminal, plain log lines elsewhere."""

from __future__ import annotations

from collections import deque
from types import TracebackType

import attrs
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table


@attrs.frozen
class Frame:
    """One second of the story, as observed through the API server."""

    t: float
    load: float
    avg_kv: float
    spec_replicas: int
    ready_replicas: int
    desired_replicas: int | None
    pods: dict[str, str]
    kv_by_pod: dict[str, float]
    deletion_costs: dict[str, str]
    conditions: dict[str, str]
    new_events: list[str]


class DemoView:
    def __init__(self, *, interactive: bool, console: Console | None = None) -> None:
        self.interactive = interactive
        self.console = console or Console()
        self.events: deque[str] = deque(maxlen=8)
        self._live: Live | None = None
        self._last_line = ""

    def __enter__(self) -> DemoView:
        if self.interactive:
            self._live = Live(console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def update(self, frame: Frame) -> None:
        for ev in frame.new_events:
            self.events.append(f"[{frame.t:5.1f}s] {ev}")
        if self._live is not None:
            self._live.update(self._render(frame))
            return
        line = (
            f"t={frame.t:5.1f}s load={frame.load:5.1f} kv={frame.avg_kv:.2f} "
            f"replicas spec={frame.spec_replicas} ready={frame.ready_replicas} "
            f"desired={frame.desired_replicas}"
        )
        if line != self._last_line:
            print(line, flush=True)
            self._last_line = line
        for ev in frame.new_events:
            print(f"  event: {ev}", flush=True)
        if frame.deletion_costs:
            print(f"  pod-deletion-cost: {frame.deletion_costs}", flush=True)

    def _render(self, frame: Frame) -> Group:
        head = Table.grid(padding=(0, 2))
        head.add_row(
            f"[bold]t[/] {frame.t:5.1f}s",
            f"[bold]load[/] {frame.load:5.1f} req",
            f"[bold]avg KV-cache[/] {frame.avg_kv:.0%}",
            f"[bold]replicas[/] spec {frame.spec_replicas} · ready {frame.ready_replicas} · "
            f"desired {frame.desired_replicas if frame.desired_replicas is not None else '-'}",
        )
        pods = Table(title="pods", expand=True)
        pods.add_column("pod")
        pods.add_column("state")
        pods.add_column("KV-cache", justify="right")
        pods.add_column("pod-deletion-cost", justify="right")
        for name in sorted(frame.pods):
            kv = frame.kv_by_pod.get(name)
            pods.add_row(
                name,
                frame.pods[name],
                f"{kv:.0%}" if kv is not None else "-",
                frame.deletion_costs.get(name, ""),
            )
        conds = " · ".join(f"{k}={v}" for k, v in sorted(frame.conditions.items())) or "-"
        events = "\n".join(self.events) or "(none yet)"
        return Group(
            Panel(head, title="llmscaler demo"),
            pods,
            Panel(conds, title="conditions"),
            Panel(events, title="events"),
        )

    def summary(self, frames: list[Frame], metric_source: str) -> None:
        peak = max(frames, key=lambda f: f.spec_replicas)
        first, last = frames[0], frames[-1]
        print()
        print("demo summary")
        print(f"  metric source:     {metric_source}")
        print(f"  duration:          {last.t:.0f}s, {len(frames)} observations")
        print(
            f"  replicas:          {first.spec_replicas} -> peak {peak.spec_replicas} "
            f"(at {peak.t:.0f}s, load {peak.load:.0f}) -> {last.spec_replicas}"
        )
        print(
            f"  load:              {min(f.load for f in frames):.0f} .. "
            f"{max(f.load for f in frames):.0f} concurrent requests"
        )
        print(f"  events seen:       {sum(len(f.new_events) for f in frames)}")
