"""Variants from --set, the CLI end to end on the shipped sample, and history replay.

History replay is tested against a local HTTP server answering ``/api/v1/query_range`` with
Prometheus's JSON shapes (matrix results, error objects): a fake of the HTTP contract, not a
real Prometheus.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from llmscaler_runtime.api.v1alpha1 import LLMScalerSpec
from llmscaler_runtime.api.v1alpha1._meta import field_metas
from llmscaler_sim import cli
from llmscaler_sim.cli import main
from llmscaler_sim.history import (
    HistoryError,
    HistoryQuery,
    demand_from_history,
    raw_gauge_query,
)
from llmscaler_sim.output import write_atomically
from llmscaler_sim.variants import VariantError, build_variants, load_scaler, resolve_path

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "examples" / "sim" / "scaler.yaml"
SAMPLE = ROOT / "examples" / "sim" / "sample-trace.csv"


def test_set_gives_the_cross_product_plus_the_baselines() -> None:
    base = load_scaler(SPEC)
    variants = build_variants(
        [("s", base)],
        ["scaleDown.stabilizationWindowSeconds=0,300", "scaleDown.maxStepReplicas=1,2"],
    )
    names = [v.name for v in variants]
    assert names[:4] == [
        "window=0, maxStep=1",
        "window=0, maxStep=2",
        "window=300, maxStep=1",
        "window=300, maxStep=2",
    ]
    assert names[4:] == ["hpa-defaults", "cache-aware-off"]
    assert variants[3].scaler.spec.scale_down.max_step_replicas == 2
    assert variants[-1].scaler.spec.scale_down.behavior.value == "None"
    assert base["spec"]["scaleDown"]["maxStepReplicas"] == 1  # the input is not modified


def test_set_takes_quoted_number_fields_unquoted_and_keeps_their_text() -> None:
    base = load_scaler(SPEC)
    variants = build_variants(
        [("s", base)], ["scaleUp.tolerance=0,0.10", "metrics[0].target=0.5"], baselines=False
    )
    assert [v.name for v in variants] == ["tol=0, target=0.5", "tol=0.10, target=0.5"]
    assert [v.scaler.spec.scale_up.tolerance for v in variants] == ["0", "0.10"]
    assert variants[0].scaler.spec.metrics[0].target == "0.5"
    # a number field still reads the YAML number
    (v,) = build_variants([("s", base)], ["scaleUp.maxStepReplicas=4"], baselines=False)
    assert v.scaler.spec.scale_up.max_step_replicas == 4


def test_the_hpa_baseline_has_the_hpas_ten_percent_dead_band() -> None:
    variants = build_variants([("s", load_scaler(SPEC))])
    hpa = next(v for v in variants if v.name == "hpa-defaults").scaler.spec
    assert (hpa.scale_up.tolerance, hpa.scale_down.tolerance) == ("0.1", "0.1")
    assert hpa.scale_down.stabilization_window_seconds == 300
    assert hpa.scale_up.stabilization_window_seconds == 0 == hpa.scale_up.max_step_replicas


def test_cli_compares_scale_up_tolerances(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``llmscaler-sim --set scaleUp.tolerance=0,0.1`` runs both variants and the baselines."""
    out = tmp_path / "run"
    code = main(
        [str(SPEC), "--trace", str(SAMPLE), "--set", "scaleUp.tolerance=0,0.1", "--out", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    doc = json.loads(out.with_suffix(".json").read_text())
    names = [v["name"] for v in doc["variants"]]
    assert names == ["tol=0", "tol=0.1", "hpa-defaults", "cache-aware-off"]
    assert all(v["figures"]["syncs"] > 1000 for v in doc["variants"])


def test_set_on_a_list_item_and_a_query_with_commas() -> None:
    base = load_scaler(SPEC)
    q = 'avg(vllm:num_requests_waiting{namespace="default", app="vllm-opt-125m"})'
    (v,) = build_variants([("s", base)], [f"metrics[0].query={q}"], baselines=False)
    assert v.scaler.spec.metrics[0].query == q


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("scaleDown.maxStepReplicas=-1", "spec.scaleDown.maxStepReplicas"),
        ("scaleDown.behavior=Sometimes", "spec.scaleDown.behavior"),
        ("metrics[0].target=80%", "spec.metrics[0].target"),
        ("metrics[3].target=1", "no item [3]"),
    ],
)
def test_a_spec_the_crd_would_reject_is_an_error_naming_the_field(
    override: str, expected: str
) -> None:
    with pytest.raises(VariantError) as err:
        build_variants([("s", load_scaler(SPEC))], [override])
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("override", "named", "suggested"),
    [
        ("scaleDwn.x=0", "no field 'scaleDwn'", "'scaleDown'"),
        (
            "scaleDown.stabilizationWindow=0",
            "spec.scaleDown has no field",
            "'stabilizationWindowSeconds'",
        ),
        ("metrics[0].querry=x", "spec.metrics[0] has no field 'querry'", "'query'"),
        ("metrics[0].target.value=1", "spec.metrics[0].target is a string", ""),
    ],
)
def test_a_set_path_the_api_does_not_have_is_refused(
    override: str, named: str, suggested: str
) -> None:
    with pytest.raises(VariantError) as err:
        build_variants([("s", load_scaler(SPEC))], [override])
    assert named in str(err.value) and suggested in str(err.value)


def test_every_spec_field_of_the_api_types_is_a_valid_set_path() -> None:
    # read from the types, not a list: a field added to the API is accepted at once
    for meta in field_metas(LLMScalerSpec).values():
        resolve_path(meta.json)
    resolve_path("serverHeaders.X-Tenant")  # a map takes any key


def test_a_spec_file_with_an_unknown_field_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = SPEC.read_text().replace("  minReplicas: 1\n", "  minReplicas: 1\n  bogusField: 3\n")
    bad.write_text(text.replace("    behavior: CacheAware", "    behaviour: CacheAware"))
    with pytest.raises(VariantError) as err:
        load_scaler(bad)
    message = str(err.value)
    assert 'unknown field "spec.bogusField"' in message
    assert 'unknown field "spec.scaleDown.behaviour"' in message and "'behavior'" in message
    obj = load_scaler(SPEC)  # an object given to the library is checked as well
    obj["spec"]["metrics"][0]["tagret"] = "0.5"
    with pytest.raises(VariantError, match=r'"spec.metrics\[0\].tagret"'):
        build_variants([("s", obj)], baselines=False)
    assert main([str(bad), "--generate", "ramp", "--out", str(tmp_path / "o")]) == 2
    assert list(tmp_path.iterdir()) == [bad]


def test_a_set_value_takes_the_fields_declared_type() -> None:
    # target is a string field: 0.5 is the text "0.5", not the number YAML would make of it
    variants = build_variants(
        [("s", load_scaler(SPEC))],
        ["metrics[0].target=0.5,'0.7'", "scaleDown.maxStepReplicas=2"],
        baselines=False,
    )
    assert [v.scaler.spec.metrics[0].target for v in variants] == ["0.5", "0.7"]
    assert variants[0].obj["spec"]["metrics"][0]["target"] == "0.5"
    assert variants[0].scaler.spec.scale_down.max_step_replicas == 2
    with pytest.raises(VariantError, match=r"spec\.scaleDown\.maxStepReplicas: must be an integer"):
        build_variants([("s", load_scaler(SPEC))], ["scaleDown.maxStepReplicas=two"])


def test_cli_runs_the_sample_and_writes_table_json_and_svg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = main(
        [
            str(SPEC),
            "--trace",
            str(SAMPLE),
            "--set",
            "scaleDown.stabilizationWindowSeconds=0,180",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    for name in ("window=0", "window=180", "hpa-defaults", "cache-aware-off"):
        assert name in text
    doc = json.loads(out.with_suffix(".json").read_text())
    assert [v["name"] for v in doc["variants"]][:2] == ["window=0", "window=180"]
    assert all(v["figures"]["syncs"] > 1000 for v in doc["variants"])
    svg = out.with_suffix(".svg").read_text()
    assert svg.startswith("<svg") and svg.count("<path") == 3 * 4
    umask = os.umask(0)
    os.umask(umask)
    for suffix in (".json", ".svg"):  # ordinary files, not mkstemp's 0600
        assert out.with_suffix(suffix).stat().st_mode & 0o777 == 0o666 & ~umask


def test_cli_bad_input_is_one_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,concurrency\n0,5\n60,-1\n")
    out = tmp_path / "run"
    assert main([str(SPEC), "--trace", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 3, field 'concurrency'" in err and err.count("\n") == 1
    assert (
        main([str(SPEC), "--generate", "ramp", "--set", "minReplicas=-3", "--out", str(out)]) == 2
    )
    assert "spec.minReplicas" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [bad]


def test_cli_refuses_a_query_the_simulator_cannot_answer_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    bad = 'avg(vllm:kv_cache_usage_perc{namespace="default", app="typo"})'
    argv = [str(SPEC), "--generate", "ramp", "--out", str(out)]
    assert main([*argv, "--set", f"metrics[0].query={bad}"]) == 2
    err = capsys.readouterr().err
    assert f"variant 'query={bad}'" in err and "no series" in err and err.count("\n") == 1
    assert main([*argv, "--initial-replicas", "-1"]) == 2
    assert "--initial-replicas must be >= 0" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_outputs_are_written_all_or_none(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(OSError):
        write_atomically({tmp_path / "good.json": "{}", blocker / "bad.svg": "<svg/>"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no temp file either
    write_atomically({tmp_path / "good.json": "{}", tmp_path / "d" / "x.svg": "<svg/>"})
    assert (tmp_path / "good.json").read_text() == "{}"


def test_cli_that_cannot_write_says_so_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    argv = [str(SPEC), "--generate", "spike:duration=10m", "--no-baselines"]
    assert main([*argv, "--out", str(blocker / "run")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("llmscaler-sim: error: cannot write the outputs:") and err.count("\n") == 1
    )
    assert list(tmp_path.iterdir()) == [blocker]


def test_cli_renders_everything_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(results: object) -> str:
        raise RuntimeError("the plot cannot be drawn")

    monkeypatch.setattr(cli, "render_svg", broken)
    with pytest.raises(RuntimeError):
        main([str(SPEC), "--generate", "spike:duration=10m", "--out", str(tmp_path / "run")])
    assert list(tmp_path.iterdir()) == []  # the JSON, rendered first, was not written alone


# -- history -------------------------------------------------------------------------------------

Answer = Callable[[str, float, float, float], dict[str, Any]]


@pytest.fixture
def prometheus_api() -> Iterator[tuple[str, dict[str, Answer]]]:
    answers: dict[str, Answer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path != "/api/v1/query_range":
                self.send_response(404)
                self.end_headers()
                return
            answer = answers.get(q["query"])
            if answer is None:
                doc: dict[str, Any] = {
                    "status": "success",
                    "data": {"resultType": "matrix", "result": []},
                }
            else:
                doc = answer(q["query"], float(q["start"]), float(q["end"]), float(q["step"]))
            body = json.dumps(doc).encode()
            self.send_response(200 if doc["status"] == "success" else 400)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answers
    finally:
        server.shutdown()
        server.server_close()


def matrix(fn: Callable[[float], float]) -> Answer:
    def answer(_q: str, start: float, end: float, step: float) -> dict[str, Any]:
        values = []
        t = start
        while t <= end:
            values.append([t, repr(fn(t))])
            t += step
        return {
            "status": "success",
            "data": {"resultType": "matrix", "result": [{"metric": {}, "values": values}]},
        }

    return answer


def test_history_rebuilds_demand_as_average_times_ready(
    prometheus_api: tuple[str, dict[str, Answer]],
) -> None:
    url, answers = prometheus_api
    scaler = build_variants([("s", load_scaler(SPEC))], baselines=False)[0].scaler
    smoothed = scaler.spec.metrics[0].query
    assert smoothed.startswith("avg(avg_over_time(")
    # the history is read from the raw gauge; the spec's own average over time is applied by
    # the replay, so reading the smoothed series (0.3 here) would smooth every burst twice
    answers[raw_gauge_query(smoothed)] = matrix(lambda t: 0.6)
    answers[smoothed] = matrix(lambda t: 0.3)
    ready_q = "sum(ready)"
    answers[ready_q] = matrix(lambda t: 2.0 if t < 1_000_300 else 4.0)
    trace = demand_from_history(
        HistoryQuery(url, 1_000_000, 1_000_600, 60), scaler, ready_query=ready_q
    )
    # 0.6 KV per replica x ready / 0.015 KV per sequence
    assert trace.demand[0] == pytest.approx(0.6 * 2 / 0.015)
    assert trace.demand[-1] == pytest.approx(0.6 * 4 / 0.015)
    assert trace.start_epoch == 1_000_000 and trace.times[1] == 60


def test_history_that_returns_nothing_is_an_error_naming_the_query(
    prometheus_api: tuple[str, dict[str, Answer]], tmp_path: Path
) -> None:
    url, _answers = prometheus_api
    scaler = build_variants([("s", load_scaler(SPEC))], baselines=False)[0].scaler
    with pytest.raises(HistoryError, match="returned no series between"):
        demand_from_history(HistoryQuery(url, 1_000_000, 1_000_600, 60), scaler)
    out = tmp_path / "run"
    code = main(
        [
            str(SPEC),
            "--prometheus",
            url,
            "--start",
            "1000000",
            "--end",
            "1000600",
            "--out",
            str(out),
        ]
    )
    assert code == 2 and not list(tmp_path.iterdir())


def test_history_refuses_a_query_it_cannot_map_to_concurrency(
    prometheus_api: tuple[str, dict[str, Answer]],
) -> None:
    url, answers = prometheus_api
    obj = load_scaler(SPEC)
    obj["spec"]["metrics"][0]["query"] = "avg(gpu_util)"
    scaler = build_variants([("s", obj)], baselines=False)[0].scaler
    with pytest.raises(HistoryError, match="demand query"):
        demand_from_history(HistoryQuery(url, 1_000_000, 1_000_600, 60), scaler)
    answers["sum(inflight)"] = matrix(lambda t: 42.0)
    trace = demand_from_history(
        HistoryQuery(url, 1_000_000, 1_000_600, 60), scaler, demand_query="sum(inflight)"
    )
    assert set(trace.demand) == {42.0}


def test_save_trace_is_written_with_the_report_only_after_the_runs(
    prometheus_api: tuple[str, dict[str, Answer]], tmp_path: Path
) -> None:
    url, answers = prometheus_api
    answers["sum(demand)"] = matrix(lambda t: 90.0)
    saved, out = tmp_path / "rebuilt.csv", tmp_path / "run"
    argv = [str(SPEC), "--prometheus", url, "--start", "1000000", "--end", "1003600"]
    argv += ["--demand-query", "sum(demand)", "--save-trace", str(saved), "--out", str(out)]
    # the trace is rebuilt, then a variant fails its preflight: nothing at all is written
    assert main([*argv, "--app-label", "typo"]) == 2
    assert list(tmp_path.iterdir()) == []
    assert main(argv) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rebuilt.csv", "run.json", "run.svg"]
    assert saved.read_text().splitlines()[:2] == ["time,concurrency", "0.0,90.0"]


@pytest.mark.parametrize(
    ("query", "raw"),
    [
        ('avg(avg_over_time(g{a="b"}[2m]))', 'avg(g{a="b"})'),
        ("avg( avg_over_time( g [5m] ) )", "avg(g)"),
        ("avg_over_time(g[2m])", "g"),
        ("max(avg_over_time(g[2m]))", "max(avg_over_time(g[2m]))"),  # not an average of it
        ("avg(avg_over_time(g[2m])) * 2", "avg(avg_over_time(g[2m])) * 2"),
        ("avg(g)", "avg(g)"),
    ],
)
def test_raw_gauge_query_undoes_only_an_average_over_time(query: str, raw: str) -> None:
    assert raw_gauge_query(query) == raw


def test_load_skew_must_be_below_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = [str(SPEC), "--generate", "ramp", "--out", str(tmp_path / "o")]
    for bad in ("1", "1.5", "-0.1"):
        assert main([*argv, "--load-skew", bad]) == 2
        assert "load_skew" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
