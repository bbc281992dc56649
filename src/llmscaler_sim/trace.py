"""Load traces: what the fleet is asked to serve over time, read from CSV/JSON or generated.

A trace is a step function: row *i*'s demand holds from its time until the next row's. Demand is
either ``concurrency`` (sequences in flight, what a replica's capacity is measured in) or
``rate`` (requests per second, turned into concurrency by the fleet model with Little's law).
Optional ``prompt_tokens``/``output_tokens`` columns scale how much KV-cache a request holds and,
for rates, how long it runs.

Input is checked before anything runs, and the first problem is reported as one
:class:`TraceError` naming the line (CSV) or item (JSON) and the field: a time column that does
not increase, a gap between rows far longer than the trace's usual step, an empty cell, a
negative or non-numeric value. A simulation over a trace with holes would report figures for
traffic nobody measured, so holes are refused instead of interpolated.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import attrs

from llmscaler_sim.output import write_atomically

__all__ = [
    "GENERATORS",
    "DemandUnit",
    "Trace",
    "TraceError",
    "bursts",
    "diurnal",
    "generate",
    "load_trace",
    "parse_duration",
    "ramp",
    "spike",
]

DemandUnit = Literal["concurrency", "rate"]
DEFAULT_START = 1_704_067_200.0  # 2024-01-01T00:00:00Z: the wall clock of t=0 for relative traces
OPTIONAL_COLUMNS = ("prompt_tokens", "output_tokens")
DEFAULT_MAX_GAP_FACTOR = 3.0


class TraceError(ValueError):
    """A trace that cannot be simulated; the message names the line or item and the field."""


@attrs.frozen
class Trace:
    """A validated demand step function (see module docstring).

    ``times`` are seconds from the trace's start (the first is 0), strictly increasing;
    ``end`` is when the last row stops holding (its time plus the trace's median step).
    ``start_epoch`` is the wall clock of t=0, used as the simulation's virtual wall clock.
    """

    times: tuple[float, ...]
    demand: tuple[float, ...]
    unit: DemandUnit
    end: float
    start_epoch: float = DEFAULT_START
    prompt_tokens: tuple[float, ...] | None = None
    output_tokens: tuple[float, ...] | None = None
    source: str = "trace"

    @property
    def duration(self) -> float:
        return self.end

    def to_rows(self) -> list[dict[str, float]]:
        """The trace as CSV-ready rows (the inverse of :func:`load_trace`)."""
        rows: list[dict[str, float]] = []
        for i, t in enumerate(self.times):
            row = {"time": t, self.unit: self.demand[i]}
            if self.prompt_tokens is not None:
                row["prompt_tokens"] = self.prompt_tokens[i]
            if self.output_tokens is not None:
                row["output_tokens"] = self.output_tokens[i]
            rows.append(row)
        return rows

    def to_csv(self) -> str:
        """The trace as CSV text, readable by :func:`load_trace`."""
        rows = self.to_rows()
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()

    def write_csv(self, path: Path) -> None:
        """:meth:`to_csv` to ``path``, through a temporary file (never half a trace)."""
        write_atomically({path: self.to_csv()})


def parse_duration(text: str | float) -> float:
    """``"24h"``, ``"1h30m"``, ``"90s"``, ``"2d"`` or plain seconds -> seconds."""
    if isinstance(text, int | float):
        return float(text)
    raw = text.strip()
    try:
        return float(raw)
    except ValueError:
        pass
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    total, number = 0.0, ""
    for ch in raw:
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in units and number:
            total += float(number) * units[ch]
            number = ""
        else:
            raise ValueError(f"invalid duration {text!r} (use e.g. 90s, 15m, 24h, 7d)")
    if number or not raw:
        raise ValueError(f"invalid duration {text!r} (use e.g. 90s, 15m, 24h, 7d)")
    return total


# -- loading -------------------------------------------------------------------------------------


def _number(where: str, field: str, raw: Any) -> float:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise TraceError(f"{where}, field {field!r}: empty; every row needs a value (no gaps)")
    if isinstance(raw, bool):
        raise TraceError(f"{where}, field {field!r}: {raw!r} is not a number")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise TraceError(f"{where}, field {field!r}: {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise TraceError(f"{where}, field {field!r}: {raw!r} is not a finite number")
    if value < 0:
        raise TraceError(f"{where}, field {field!r}: {raw!r} is negative")
    return value


def _time(where: str, raw: Any) -> tuple[float, bool]:
    """Seconds, and whether the cell was an ISO 8601 timestamp (absolute) or a number."""
    if isinstance(raw, str) and raw.strip() and not _looks_numeric(raw):
        try:
            stamp = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            raise TraceError(
                f"{where}, field 'time': {raw!r} is neither seconds nor an ISO 8601 timestamp"
            ) from None
        if stamp.tzinfo is None:
            raise TraceError(f"{where}, field 'time': {raw!r} has no time zone (add Z or +00:00)")
        return stamp.timestamp(), True
    return _number(where, "time", raw), False


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _rows_from_csv(path: Path) -> tuple[list[str], list[tuple[str, Mapping[str, Any]]]]:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        rows: list[tuple[str, Mapping[str, Any]]] = []
        for line_no, row in enumerate(reader, start=2):
            if None in row:
                raise TraceError(f"{path}: line {line_no}: more cells than the header has columns")
            rows.append((f"{path}: line {line_no}", {k.strip(): v for k, v in row.items()}))
    return header, rows


def _rows_from_json(path: Path) -> tuple[list[str], list[tuple[str, Mapping[str, Any]]]]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TraceError(f"{path}: not valid JSON: {exc}") from None
    items = doc.get("points") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise TraceError(f"{path}: expected a list of rows or an object with a 'points' list")
    header: list[str] = []
    rows: list[tuple[str, Mapping[str, Any]]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TraceError(f"{path}: item [{i}]: expected an object, got {type(item).__name__}")
        for key in item:
            if key not in header:
                header.append(str(key))
        rows.append((f"{path}: item [{i}]", item))
    return header, rows


def load_trace(
    path: str | Path, *, max_gap: float | None = None, start_epoch: float | None = None
) -> Trace:
    """Read and validate a CSV or JSON trace (by extension; see module docstring).

    ``max_gap`` is the longest step allowed between two rows, in seconds; by default three
    times the trace's median step. Raises :class:`TraceError` for the first problem found.
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    reader = _rows_from_json if path.suffix.lower() == ".json" else _rows_from_csv
    header, rows = reader(path)
    return trace_from_rows(header, rows, str(path), max_gap=max_gap, start_epoch=start_epoch)


def trace_from_rows(
    header: Sequence[str],
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    source: str,
    *,
    max_gap: float | None = None,
    start_epoch: float | None = None,
) -> Trace:
    """Validate rows (each with where it came from, for messages) into a :class:`Trace`."""
    path = source
    if "time" not in header:
        raise TraceError(f"{path}: no 'time' column (columns: {', '.join(header) or 'none'})")
    units = [u for u in ("concurrency", "rate") if u in header]
    if len(units) != 1:
        raise TraceError(
            f"{path}: needs exactly one demand column, 'concurrency' or 'rate' "
            f"(columns: {', '.join(header)})"
        )
    unit: DemandUnit = "concurrency" if units[0] == "concurrency" else "rate"
    unknown = [h for h in header if h not in ("time", unit, *OPTIONAL_COLUMNS)]
    if unknown:
        raise TraceError(f"{path}: unknown column(s) {', '.join(map(repr, unknown))}")
    if not rows:
        raise TraceError(f"{path}: no rows")
    times: list[float] = []
    demand: list[float] = []
    extra: dict[str, list[float]] = {c: [] for c in OPTIONAL_COLUMNS if c in header}
    absolute: bool | None = None
    for where, row in rows:
        t, is_abs = _time(where, row.get("time"))
        if absolute is not None and is_abs != absolute:
            raise TraceError(f"{where}, field 'time': mixes timestamps and seconds")
        absolute = is_abs
        if times and t <= times[-1]:
            raise TraceError(
                f"{where}, field 'time': {row.get('time')!r} does not come after the previous "
                "row; the time column must be sorted and free of duplicates"
            )
        times.append(t)
        demand.append(_number(where, unit, row.get(unit)))
        for column, values in extra.items():
            values.append(_number(where, column, row.get(column)))
    origin = times[0]
    rel = tuple(t - origin for t in times)
    epoch = start_epoch if start_epoch is not None else (origin if absolute else DEFAULT_START)
    step = _median_step(rel)
    limit = max_gap if max_gap is not None else DEFAULT_MAX_GAP_FACTOR * step
    for i in range(1, len(rel)):
        gap = rel[i] - rel[i - 1]
        if gap > limit + 1e-9:
            raise TraceError(
                f"{rows[i][0]}, field 'time': a gap of {gap:g} s since the previous row, more "
                f"than the {limit:g} s allowed (3x the median step of {step:g} s unless "
                "--max-gap says otherwise); fill the gap rather than let the simulator guess"
            )
    return Trace(
        times=rel,
        demand=tuple(demand),
        unit=unit,
        end=rel[-1] + step,
        start_epoch=epoch,
        prompt_tokens=tuple(extra["prompt_tokens"]) if "prompt_tokens" in extra else None,
        output_tokens=tuple(extra["output_tokens"]) if "output_tokens" in extra else None,
        source=source,
    )


def _median_step(times: Sequence[float]) -> float:
    if len(times) < 2:
        return 60.0
    return float(statistics.median(b - a for a, b in itertools.pairwise(times)))


# -- generators ----------------------------------------------------------------------------------


def _grid(duration: float, step: float) -> list[float]:
    if duration <= 0 or step <= 0:
        raise ValueError("duration and step must be positive")
    return [i * step for i in range(math.ceil(duration / step))]


def _trace(times: list[float], values: list[float], step: float, name: str) -> Trace:
    return Trace(
        times=tuple(times),
        demand=tuple(max(0.0, v) for v in values),
        unit="concurrency",
        end=times[-1] + step,
        source=name,
    )


def diurnal(
    *,
    duration: float = 86400.0,
    step: float = 60.0,
    base: float = 20.0,
    peak: float = 200.0,
    period: float = 86400.0,
    peak_at: float = 14 * 3600.0,
    noise: float = 0.0,
    seed: int = 0,
) -> Trace:
    """A day-shaped cosine between ``base`` and ``peak`` concurrency, highest at ``peak_at``
    seconds into each ``period``; ``noise`` is a relative Gaussian jitter (0.1 = 10 %)."""
    rng = random.Random(seed)
    times = _grid(duration, step)
    values = []
    for t in times:
        phase = 2 * math.pi * (t - peak_at) / period
        v = base + (peak - base) * (1 + math.cos(phase)) / 2
        values.append(v * (1 + rng.gauss(0, noise)) if noise else v)
    return _trace(times, values, step, "diurnal")


def bursts(
    *,
    duration: float = 3 * 3600.0,
    step: float = 15.0,
    base: float = 20.0,
    height: float = 150.0,
    every: float = 1800.0,
    length: float = 300.0,
    jitter: float = 0.0,
    seed: int = 0,
) -> Trace:
    """``base`` concurrency with a burst to ``height`` lasting ``length`` seconds every ``every``
    seconds (the first after one ``every``); ``jitter`` moves each burst start by up to that many
    seconds, at random (seeded)."""
    rng = random.Random(seed)
    starts = []
    t = every
    while t < duration:
        starts.append(t + (rng.uniform(-jitter, jitter) if jitter else 0.0))
        t += every
    times = _grid(duration, step)
    values = [height if any(s <= x < s + length for s in starts) else base for x in times]
    return _trace(times, values, step, "bursts")


def spike(
    *,
    duration: float = 3600.0,
    step: float = 15.0,
    base: float = 20.0,
    height: float = 200.0,
    at: float = 900.0,
    length: float = 300.0,
) -> Trace:
    """``base`` concurrency with one spike to ``height`` from ``at`` for ``length`` seconds."""
    times = _grid(duration, step)
    values = [height if at <= x < at + length else base for x in times]
    return _trace(times, values, step, "spike")


def ramp(
    *,
    duration: float = 3600.0,
    step: float = 15.0,
    start: float = 10.0,
    end: float = 200.0,
    hold: float = 0.0,
) -> Trace:
    """A straight line from ``start`` to ``end`` concurrency over ``duration - hold`` seconds,
    then ``end`` for the last ``hold`` seconds."""
    times = _grid(duration, step)
    span = max(step, duration - hold)
    values = [start + (end - start) * min(1.0, x / span) for x in times]
    return _trace(times, values, step, "ramp")


GENERATORS: Mapping[str, Callable[..., Trace]] = {
    "diurnal": diurnal,
    "bursts": bursts,
    "spike": spike,
    "ramp": ramp,
}
_DURATION_PARAMS = {"duration", "step", "period", "peak_at", "every", "length", "at", "hold"}
_INT_PARAMS = {"seed"}


def generate(text: str) -> Trace:
    """A generated trace from ``name`` or ``name:key=value,key=value`` (see each generator's
    docstring; times take units, e.g. ``bursts:duration=6h,every=30m,height=120``)."""
    name, _, args = text.partition(":")
    fn = GENERATORS.get(name.strip())
    if fn is None:
        raise TraceError(f"unknown generator {name!r}; choose one of {', '.join(GENERATORS)}")
    params: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in args.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq:
            raise TraceError(f"generator {name}: {part!r} is not key=value")
        try:
            if key in _DURATION_PARAMS:
                params[key] = parse_duration(value)
            elif key in _INT_PARAMS:
                params[key] = int(value)
            else:
                params[key] = float(value)
        except ValueError as exc:
            raise TraceError(f"generator {name}, parameter {key!r}: {exc}") from None
    try:
        return fn(**params)
    except TypeError:
        import inspect

        known = ", ".join(inspect.signature(fn).parameters)
        raise TraceError(f"generator {name}: unknown parameter; it takes {known}") from None
    except ValueError as exc:
        raise TraceError(f"generator {name}: {exc}") from None
