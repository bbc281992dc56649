"""The shipped alerts and dashboard: the PrometheusRule passes ``promtool check rules`` and a
unit test per alert (``promtool test rules``), every PromQL expression of the dashboard is valid
and names only metrics the manager exports, and the chart ships the same rules and dashboard."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from llmscaler_runtime.manager.metrics import ControllerMetrics
from llmscaler_runtime.scaling.metrics import PrometheusScalerMetrics

from .helm import Helm

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "prometheus"
RULES = CONFIG / "rules.yaml"
DASHBOARD = CONFIG / "dashboard.json"
ALERT_TESTS = Path(__file__).parent / "prometheus" / "alerts_test.yaml"
CHART = ROOT / "dist" / "chart"
ALERTS = {"LLMScalerFailing", "LLMScalerFallbackActive", "LLMScalerPinnedAtMaxReplicas"}


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not on PATH (hack/ensure-prometheus.sh installs it)")
    return found


def _groups() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    groups: list[dict[str, Any]] = doc["spec"]["groups"]
    return groups


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_the_rules_pass_promtool_check_and_each_alert_has_a_unit_test(tmp_path: Path) -> None:
    promtool = _promtool()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": _groups()}))
    shutil.copy(ALERT_TESTS, tmp_path / "alerts_test.yaml")
    checked = _run([promtool, "check", "rules", "rules.yaml"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _run([promtool, "test", "rules", "alerts_test.yaml"], tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    alerts = {r["alert"] for g in _groups() for r in g["rules"]}
    assert alerts == ALERTS
    cases = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    covered = {t["alertname"] for case in cases for t in case["alert_rule_test"] if t["exp_alerts"]}
    assert covered == alerts, "every alert needs a case in which it fires"


def test_promtool_fails_an_alert_that_does_not_fire_as_its_test_says(tmp_path: Path) -> None:
    """The unit tests can fail: a rule whose `for` is longer than the test allows is caught."""
    promtool = _promtool()
    groups = _groups()
    for rule in groups[0]["rules"]:
        if rule["alert"] == "LLMScalerFailing":
            rule["for"] = "20m"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    shutil.copy(ALERT_TESTS, tmp_path / "alerts_test.yaml")
    tested = _run([promtool, "test", "rules", "alerts_test.yaml"], tmp_path)
    assert tested.returncode != 0 and "LLMScalerFailing" in tested.stdout + tested.stderr


# --- the dashboard -----------------------------------------------------------------------------


def _exported_names() -> set[str]:
    """Every sample name the manager's registry can expose: the framework's collectors and the
    scaling pipeline's, built the way the manager builds them."""
    registry = CollectorRegistry()
    ControllerMetrics(registry)
    PrometheusScalerMetrics(registry)
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "gauge": ("",),
    }
    return {
        family.name + suffix
        for family in registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


def _exprs(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        query = var.get("query")
        if isinstance(query, dict):
            exprs.append(query["query"])
    return exprs


_LABEL_VALUES = re.compile(r"^label_values\((?P<expr>.+),\s*\w+\)$")
_FUNCTIONS_AND_KEYWORDS = {
    *("sum", "max", "min", "avg", "count", "rate", "increase", "histogram_quantile", "vector"),
    *("by", "without", "on", "ignoring", "group_left", "group_right", "bool"),
    *("and", "or", "unless"),
}


def _as_promql(expr: str) -> str:
    """A Grafana query as plain PromQL: label_values() unwrapped, variables given values."""
    match = _LABEL_VALUES.match(expr)
    if match:
        expr = match["expr"]
    return (
        expr.replace("$__rate_interval", "5m").replace("$namespace", ".*").replace("$scaler", ".*")
    )


def metric_names(promql: str) -> set[str]:
    """The metric names in ``promql``: identifiers left once strings, label matchers, ranges,
    grouping clauses, numbers, functions and keywords are taken out."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', promql)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set(re.findall(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*(?![\w(])(?!\s*\()", text))
    return names - _FUNCTIONS_AND_KEYWORDS


def test_metric_names_finds_names_and_only_names() -> None:
    assert metric_names(
        'sum by (namespace, le) (rate(a_b_total{x="y", z=~"w"}[5m])) >= on (n) c'
        " or vector(0) and histogram_quantile(0.99, d_bucket)"
    ) == {"a_b_total", "c", "d_bucket"}


def test_the_dashboard_parses_and_queries_only_metrics_the_manager_exports(
    tmp_path: Path,
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "llmscaler" and dashboard["panels"]
    exprs = [_as_promql(e) for e in _exprs(dashboard)]
    exported = _exported_names()
    for expr in exprs:
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= exported, f"{expr!r} uses {sorted(names - exported)}"
    used = set().union(*(metric_names(e) for e in exprs))
    assert {
        "llmscaler_scaler_desired_replicas",
        "llmscaler_scaler_metric_value",
        "llmscaler_scaler_errors_total",
        "llmscaler_scaler_scale_events_total",
        "llmscaler_scaler_fallback_active",
    } <= used
    # the syntax: promtool checks every expression as a recording rule
    promtool = _promtool()
    rules = [{"record": f"dashboard:expr_{i}", "expr": e} for i, e in enumerate(exprs)]
    (tmp_path / "dash.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    )
    checked = _run([promtool, "check", "rules", "dash.yaml"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_alerts_query_only_metrics_the_manager_exports() -> None:
    exported = _exported_names()
    for group in _groups():
        for rule in group["rules"]:
            names = metric_names(rule["expr"])
            assert names and names <= exported, (rule["alert"], sorted(names - exported))


# --- the chart ----------------------------------------------------------------------------------


@pytest.mark.helm
def test_the_chart_ships_the_same_rules_and_dashboard(helm: Helm) -> None:
    sets = ["prometheusRule.enabled=true,grafanaDashboard.enabled=true"]
    docs = helm.render(CHART, sets=sets)
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    assert rule["spec"] == {"groups": _groups()}
    (configmap,) = [d for d in docs if d["metadata"]["name"].endswith("-grafana-dashboard")]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["llmscaler.json"]) == json.loads(DASHBOARD.read_text())
    elsewhere = helm.render(
        CHART, sets=[*sets, "grafanaDashboard.namespace=monitoring,metrics.enable=false"]
    )
    assert not [d for d in elsewhere if d["kind"] == "PrometheusRule"]  # no metrics, no alerts
    (moved,) = [d for d in elsewhere if d["metadata"]["name"].endswith("-grafana-dashboard")]
    assert moved["metadata"]["namespace"] == "monitoring"
    assert not [d for d in helm.render(CHART) if d["kind"] == "PrometheusRule"]  # off by default


@pytest.mark.helm
def test_the_chart_lints_with_rules_and_dashboard(helm: Helm) -> None:
    monitoring = "serviceMonitor.enabled=true,prometheusRule.enabled=true"
    result = helm.lint(CHART, sets=[monitoring, "grafanaDashboard.enabled=true"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_service_monitors_keep_the_scalers_namespace_label() -> None:
    """Without honorLabels, Prometheus renames the per-scaler ``namespace`` label to
    ``exported_namespace``, and every alert and dashboard query would miss."""
    config = yaml.safe_load((CONFIG / "monitor.yaml").read_text())
    assert all(e.get("honorLabels") is True for e in config["spec"]["endpoints"])
    chart = (CHART / "templates" / "prometheus" / "monitor.yaml").read_text()
    assert "honorLabels: true" in chart
