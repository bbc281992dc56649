"""test/charts/vllm-mock's sources, checked without rendering: the drain budget rule (so a bad
default cannot ship), the template's own `fail`, replicas left to the operator, the
ServiceMonitor's `app` label, values references on every branch. test_chart_render.py renders
it with the real helm (the `fail` firing, the preStop command run, the LLMScaler accepted)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from .chartlib import block_balance_errors, lookup, template_files, toyaml_errors, values_refs

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "test" / "charts" / "vllm-mock"
TEMPLATES = CHART / "templates"
BUDGET_KEYS = ("endpointSyncSeconds", "drainSeconds", "shutdownTimeout")


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / "values.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def drain_budget_problem(values: dict[str, Any]) -> str | None:
    """The chart's rule, in Python: every shutdown step must fit the grace period."""
    for key in (*BUDGET_KEYS, "terminationGracePeriodSeconds"):
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{key} must be a non-negative integer, got {value!r}"
    total = sum(values[k] for k in BUDGET_KEYS)
    if total > values["terminationGracePeriodSeconds"]:
        return f"{total}s of drain exceeds terminationGracePeriodSeconds"
    return None


def test_default_drain_budget_fits(values: dict[str, Any]) -> None:
    assert drain_budget_problem(values) is None
    assert values["shutdownTimeout"] > 0, "vLLM's default 0 kills running requests on SIGTERM"
    assert values["endpointSyncSeconds"] > 0


def test_budget_rule_rejects_overcommitted_values(values: dict[str, Any]) -> None:
    bad = dict(values, drainSeconds=values["terminationGracePeriodSeconds"])
    assert drain_budget_problem(bad) is not None
    assert drain_budget_problem(dict(values, shutdownTimeout="30")) is not None
    edge = dict(values, terminationGracePeriodSeconds=sum(values[k] for k in BUDGET_KEYS))
    assert drain_budget_problem(edge) is None  # exactly full is allowed


def test_template_fails_on_the_same_rule() -> None:
    helpers = (TEMPLATES / "_helpers.tpl").read_text()
    block = helpers[helpers.index('define "vllm-mock.checkDrainBudget"') :]
    block = block[: block.index("{{- end }}\n{{- end }}")]
    assert re.search(
        r"\$total := add \.Values\.endpointSyncSeconds \.Values\.drainSeconds "
        r"\.Values\.shutdownTimeout",
        block,
    )
    assert "gt (int $total) (int .Values.terminationGracePeriodSeconds)" in block
    assert "{{- fail (printf" in block
    deployment = (TEMPLATES / "deployment.yaml").read_text()
    assert deployment.startswith('{{- include "vllm-mock.checkDrainBudget" . }}\n')


def test_replicas_are_omitted_when_the_scaler_owns_them() -> None:
    deployment = (TEMPLATES / "deployment.yaml").read_text()
    assert re.search(
        r"\{\{- if not \.Values\.llmscaler\.enabled \}\}\n\s+replicas: \{\{ \.Values\.replicaCount"
        r" \}\}\n\s+\{\{- end \}\}",
        deployment,
    ), "spec.replicas must only be rendered while llmscaler.enabled is false"
    assert deployment.count("replicas:") == 1


def test_vllm_gets_shutdown_timeout_and_prestop_runs_the_shipped_script() -> None:
    deployment = (TEMPLATES / "deployment.yaml").read_text()
    assert "- --shutdown-timeout={{ .Values.shutdownTimeout }}" in deployment
    assert "terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}" in (
        deployment
    )
    configmap = (TEMPLATES / "configmap.yaml").read_text()
    assert '.Files.Get "files/drain.py"' in configmap
    assert '.Files.Get "files/metrics_mock.py"' in configmap


def test_servicemonitor_exposes_app(values: dict[str, Any]) -> None:
    monitor = (TEMPLATES / "servicemonitor.yaml").read_text()
    assert re.search(r"podTargetLabels:\n\s+- app\n", monitor)
    helpers = (TEMPLATES / "_helpers.tpl").read_text()
    assert 'app: {{ include "vllm-mock.fullname" . }}' in helpers
    assert values["metricsMock"]["enabled"] is False


def test_templates_reference_existing_values_and_use_idioms(values: dict[str, Any]) -> None:
    problems = []
    for path in template_files(CHART):
        text = path.read_text()
        for line, dotted in values_refs(text):
            if not lookup(values, dotted)[0]:
                problems.append(f"{path.name}:{line}: .Values.{dotted} missing")
        problems += [f"{path.name}: {e}" for e in block_balance_errors(text)]
        problems += [f"{path.name}: {e}" for e in toyaml_errors(text)]
    assert not problems, "\n".join(problems)
