"""dist/chart's sources, checked without rendering: values references on every branch (a key
that does not exist renders as nothing, and `helm lint --strict` does not report it), versions,
CRD/RBAC parity with config/, and Helm idioms. test_chart_render.py renders and lints the chart
with the real helm."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import chart_sync

from .chartlib import block_balance_errors, lookup, template_files, toyaml_errors, values_refs

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "dist" / "chart"
TEMPLATES = CHART / "templates"
CRD_NAME = "autoscaling.modelsphere.dev_llmscalers.yaml"


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / "values.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_chart_metadata_and_versions(values: dict[str, Any]) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "llmscaler"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    package = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert isinstance(chart["appVersion"], str), "quote appVersion so YAML keeps it a string"
    assert chart["appVersion"] == package, "appVersion must equal the Python package version"
    image = values["manager"]["image"]
    assert image["repository"] == "4pdosc/llm-operator"
    assert image["tag"] == "", "an empty tag follows appVersion"
    helpers = (TEMPLATES / "_helpers.tpl").read_text()
    assert "default .Chart.AppVersion .Values.manager.image.tag" in helpers


def test_every_values_reference_exists(values: dict[str, Any]) -> None:
    missing = []
    seen = set()
    for path in template_files(CHART):
        for line, dotted in values_refs(path.read_text()):
            seen.add(dotted)
            if not lookup(values, dotted)[0]:
                missing.append(f"{path.relative_to(CHART)}:{line}: .Values.{dotted}")
    assert not missing, "templates reference values that do not exist:\n" + "\n".join(missing)
    assert "manager.image.repository" in seen and "crd.enable" in seen  # the scan works


def test_values_reference_check_can_fail() -> None:
    refs = dict(
        (dotted, lookup({"a": {"b": 1}}, dotted)[0])
        for _, dotted in values_refs("{{ .Values.a.b }} {{ $.Values.a.c }}")
    )
    assert refs == {"a.b": True, "a.c": False}


def test_defaults_are_restrictive_and_ha(values: dict[str, Any]) -> None:
    manager = values["manager"]
    pod, container = manager["podSecurityContext"], manager["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 65532
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert container["capabilities"]["drop"] == ["ALL"]
    assert manager["resources"]["requests"] and manager["resources"]["limits"]
    assert values["leaderElection"]["enabled"] is True
    assert manager["replicaCount"] >= 1
    assert manager["terminationGracePeriodSeconds"] > manager["args"]["gracefulShutdownTimeout"]
    assert values["crd"]["enable"] is True and values["rbac"]["enable"] is True


def test_crd_template_is_config_crd_verbatim() -> None:
    config_crd = ROOT / "config" / "crd" / "bases" / CRD_NAME
    if not config_crd.is_file():
        pytest.skip("config/crd/bases has no CRD yet (make manifests)")
    assert chart_sync.main(["--check"]) == 0, "chart is stale: run 'make chart-sync'"
    template = (TEMPLATES / "crd" / CRD_NAME).read_text()
    assert template.startswith("{{- if .Values.crd.enable }}\n")
    assert chart_sync.unwrap_crd_template(template) == config_crd.read_text()


def test_chart_sync_check_detects_stale_and_missing(tmp_path: Path) -> None:
    crd = tmp_path / "config" / "crd" / "bases" / CRD_NAME
    assert chart_sync.main(["--check", "--root", str(tmp_path)]) == 2  # no CRD: clear error
    crd.parent.mkdir(parents=True)
    head = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    crd.write_text(head)
    assert chart_sync.main(["--root", str(tmp_path)]) == 2  # nowhere to put the keep annotation
    crd.write_text(head + "metadata:\n  name: x\n")
    assert chart_sync.main(["--check", "--root", str(tmp_path)]) == 1  # chart file missing
    assert chart_sync.main(["--root", str(tmp_path)]) == 0  # writes it
    assert chart_sync.main(["--check", "--root", str(tmp_path)]) == 0
    template = (tmp_path / "dist" / "chart" / "templates" / "crd" / CRD_NAME).read_text()
    assert chart_sync.unwrap_crd_template(template) == crd.read_text()
    assert "helm.sh/resource-policy: keep" in template
    crd.write_text(head + "metadata:\n  name: changed\n")
    assert chart_sync.main(["--check", "--root", str(tmp_path)]) == 1
    crd.write_text(head + "metadata:\n  annotations: {a: b}\n  name: x\n")
    assert chart_sync.main(["--root", str(tmp_path)]) == 2  # would need a merge by hand
    crd.write_text("description: '{{ oops }}'\n")
    assert chart_sync.main(["--root", str(tmp_path)]) == 2


def _atomic_rules(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups", [""])
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _template_rules(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    body = text[text.index("\nrules:") + 1 : text.rindex("{{- end }}")]
    assert "{{" not in body, f"{path.name}: rules must be plain YAML"
    rules = yaml.safe_load(body)["rules"]
    assert isinstance(rules, list)
    return rules


@pytest.mark.parametrize("spec", chart_sync.ROLES, ids=lambda s: s.name_suffix)
def test_rbac_rules_equal_config(spec: Any) -> None:
    found = chart_sync.find_role(ROOT / "config" / "rbac", spec)
    if found is None:
        pytest.skip(f"config/rbac has no {spec.kind} *{spec.name_suffix} yet")
    _, doc = found
    chart_rules = _template_rules(TEMPLATES / spec.template)
    assert _atomic_rules(chart_rules) == _atomic_rules(doc["rules"])


def test_manager_rbac_is_least_privilege() -> None:
    rules = _atomic_rules(_template_rules(TEMPLATES / "rbac" / "role.yaml"))
    assert ("autoscaling.modelsphere.dev", "llmscalers", "update") not in rules
    assert ("autoscaling.modelsphere.dev", "llmscalers/status", "patch") in rules
    assert ("", "pods", "delete") not in rules
    assert ("apps", "deployments", "patch") in rules
    assert not any("*" in atom for rule in rules for atom in rule)
    leases = _atomic_rules(_template_rules(TEMPLATES / "rbac" / "leader_election_role.yaml"))
    assert ("coordination.k8s.io", "leases", "update") in leases
    assert "kind: Role\n" in (TEMPLATES / "rbac" / "leader_election_role.yaml").read_text()
    assert ("coordination.k8s.io", "leases", "update") not in rules, "leases: namespaced only"


def test_templates_use_helm_idioms() -> None:
    problems = []
    for path in template_files(CHART):
        text = path.read_text()
        name = path.relative_to(CHART)
        problems += [f"{name}: {e}" for e in block_balance_errors(text)]
        problems += [f"{name}: {e}" for e in toyaml_errors(text)]
        if path.suffix != ".yaml" or path.parent.name == "crd":
            continue
        if "\nkind:" in text or text.startswith("kind:"):
            if 'include "llmscaler.labels"' not in text:
                problems.append(f"{name}: metadata.labels must come from llmscaler.labels")
            meta_name = re.search(r"^  name: (.*)$", text, re.M)
            if not meta_name or 'include "llmscaler.' not in meta_name.group(1):
                problems.append(f"{name}: metadata.name must use a _helpers.tpl name")
    assert not problems, "\n".join(problems)
    assert block_balance_errors("{{- if .a }}x") and toyaml_errors("{{ toYaml .x | indent 2 }}")
