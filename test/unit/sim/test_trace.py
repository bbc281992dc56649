"""Trace loading: every bad input is one TraceError naming the line or item and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmscaler_sim.trace import TraceError, bursts, diurnal, generate, load_trace, ramp, spike

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sim" / "sample-trace.csv"


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_shipped_sample_loads() -> None:
    trace = load_trace(SAMPLE)
    assert trace.unit == "concurrency"
    assert trace.end == 6 * 3600
    assert trace.prompt_tokens is not None and trace.output_tokens is not None


def test_csv_with_iso_times_keeps_the_wall_clock(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "time,rate\n2024-05-01T00:00:00Z,1\n2024-05-01T00:01:00Z,2\n2024-05-01T00:02:00Z,3\n",
    )
    trace = load_trace(path)
    assert trace.times == (0.0, 60.0, 120.0)
    assert trace.start_epoch == 1714521600.0
    assert trace.end == 180.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("time,concurrency\n0,1\n60,-2\n", "line 3, field 'concurrency': '-2' is negative"),
        ("time,concurrency\n0,1\n60,lots\n", "line 3, field 'concurrency': 'lots' is not a number"),
        ("time,concurrency\n0,1\n60,\n", "line 3, field 'concurrency': empty"),
        ("time,concurrency\n0,1\n120,1\n60,1\n", "line 4, field 'time'"),
        ("time,concurrency\n0,1\n0,1\n", "line 3, field 'time'"),
        ("time,concurrency\n0,1\n60,1\n120,1\n900,1\n", "line 5, field 'time': a gap of 780 s"),
        ("time,qps\n0,1\n", "exactly one demand column"),
        ("time,concurrency,colour\n0,1,red\n", "unknown column(s) 'colour'"),
        ("when,concurrency\n0,1\n", "no 'time' column"),
        ("time,concurrency\n0,1\n60,nan\n", "is not a finite number"),
    ],
)
def test_bad_csv_names_the_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(TraceError) as err:
        load_trace(write(tmp_path, text))
    assert expected in str(err.value)


def test_bad_json_names_the_item(tmp_path: Path) -> None:
    doc = {"points": [{"time": 0, "rate": 1}, {"time": 15, "rate": "x"}]}
    with pytest.raises(TraceError, match=r"item \[1\], field 'rate': 'x' is not a number"):
        load_trace(write(tmp_path, json.dumps(doc), "t.json"))


def test_max_gap_can_be_widened(tmp_path: Path) -> None:
    path = write(tmp_path, "time,concurrency\n0,1\n60,1\n120,1\n900,1\n")
    assert load_trace(path, max_gap=1000).times[-1] == 900


def test_generators_follow_their_parameters() -> None:
    d = diurnal(duration=86400, step=3600, base=10, peak=110, peak_at=12 * 3600)
    assert d.demand[12] == pytest.approx(110) and d.demand[0] == pytest.approx(10)
    b = bursts(duration=3600, step=60, base=5, height=50, every=1200, length=120)
    assert [t for t, v in zip(b.times, b.demand) if v == 50] == [1200, 1260, 2400, 2460]
    s = spike(duration=600, step=60, base=1, height=9, at=120, length=60)
    assert s.demand == (1, 1, 9, 1, 1, 1, 1, 1, 1, 1)
    r = ramp(duration=400, step=100, start=0, end=40)
    assert r.demand == (0, 10, 20, 30)


def test_generate_parses_durations_and_refuses_unknown_input() -> None:
    t = generate("spike:duration=1h,at=10m,length=5m,height=99,step=60")
    assert t.end == 3600 and t.demand[10] == 99 and t.demand[15] != 99
    with pytest.raises(TraceError, match="unknown generator 'tide'"):
        generate("tide")
    with pytest.raises(TraceError, match="unknown parameter"):
        generate("ramp:slope=3")
