"""The generated Prometheus config and the test kit's input checks (no process started)."""

from __future__ import annotations

import pytest

from llmscaler_runtime.testkit.prometheus import PrometheusError, PrometheusServer, build_config


def test_targets_grouped_by_scheme_and_path_with_labels() -> None:
    config = build_config(
        ["127.0.0.1:9000", "http://127.0.0.1:9001/custom", "127.0.0.1:9002"],
        "1s",
        target_labels={"127.0.0.1:9002": {"namespace": "team-a"}},
    )
    jobs = {job["metrics_path"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"/metrics", "/custom"}
    assert all(job["honor_labels"] for job in jobs.values())
    assert jobs["/metrics"]["static_configs"] == [
        {"targets": ["127.0.0.1:9000"]},
        {"targets": ["127.0.0.1:9002"], "labels": {"namespace": "team-a"}},
    ]
    assert jobs["/custom"]["scrape_interval"] == jobs["/custom"]["scrape_timeout"] == "1s"


@pytest.mark.parametrize(
    ("targets", "interval", "labels"),
    [
        (["localhost"], "1s", None),
        (["ftp://x:1/metrics"], "1s", None),
        (["127.0.0.1:1"], "fast", None),
        (["127.0.0.1:1"], "1s", {"127.0.0.1:2": {"a": "b"}}),
    ],
)
def test_bad_input_is_refused_early(
    targets: list[str], interval: str, labels: dict[str, dict[str, str]] | None
) -> None:
    with pytest.raises(ValueError):
        PrometheusServer(targets, interval, target_labels=labels)


def test_missing_binary_is_a_clear_error(tmp_path: object) -> None:
    server = PrometheusServer(["127.0.0.1:1"], binary="/nonexistent/prometheus")
    with pytest.raises((PrometheusError, OSError)):
        server.start()
    server.close()
