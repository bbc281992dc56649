"""The README must stay true to the code it documents.

Documentation rots silently: a renamed flag, a new CRD field or an invented condition reason is
not caught by any other test. These checks read the real sources (the argparse parser, the
generated CRD, the reconciler's AST, the Makefile, the charts' values) and compare them with the
README, so a change on either side that makes them disagree fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmscaler_manager.cli import build_parser
from llmscaler_runtime.scaling.metrics import FAILED_UPDATE_STATUS
from llmscaler_runtime.scaling.reasons import ConditionReason, EventReason

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
CRD = ROOT / "config" / "crd" / "bases" / "autoscaling.modelsphere.dev_llmscalers.yaml"
SCALING = ROOT / "src" / "llmscaler_runtime" / "scaling"
STATUS = ROOT / "src" / "llmscaler_runtime" / "scaling" / "status.py"

MERMAID_KINDS = ("flowchart", "graph", "sequenceDiagram", "stateDiagram", "stateDiagram-v2")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body under ``heading`` (an exact line) up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        raise AssertionError(f"README has no heading {heading!r}") from None
    body: list[str] = []
    in_code = False
    for line in lines[start + 1 :]:
        if line.startswith("```"):
            in_code = not in_code
        if not in_code and line.startswith("#"):
            hashes = len(line) - len(line.lstrip("#"))
            if hashes <= level and line[hashes : hashes + 1] == " ":
                break
        body.append(line)
    return "\n".join(body)


def table_rows(text: str) -> list[list[str]]:
    """Cells of every markdown table row in ``text`` (header and separator rows excluded)."""
    rows: list[list[str]] = []
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        if i + 1 < len(lines) and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            continue  # header row
        rows.append(cells)
    return rows


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# -- the two commands first --------------------------------------------------------------------


def test_readme_leads_with_make_demo_and_make_test() -> None:
    text = readme()
    install = text.index("## Install into a cluster")
    for command in ("make demo", "make test"):
        position = text.find(command)
        assert 0 <= position < install, f"{command!r} must be shown before installing"
    assert "--plot out.png" in text and "--duration" in text and "DEMO_ARGS" in text


def test_every_make_target_mentioned_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-zA-Z][a-zA-Z0-9_-]*):", makefile, re.M))
    docs = readme() + (CONTRIBUTING.read_text(encoding="utf-8") if CONTRIBUTING.exists() else "")
    mentioned = set(re.findall(r"`make ([a-z][a-z0-9-]*)", docs))
    mentioned |= set(re.findall(r"^make ([a-z][a-z0-9-]*)", docs, re.M))
    assert mentioned, "the docs mention no make targets"
    assert mentioned <= targets, f"unknown make targets in the docs: {sorted(mentioned - targets)}"


# -- manager flags -----------------------------------------------------------------------------


def _flags() -> Iterator[tuple[str, Any]]:
    for action in build_parser()._actions:
        for option in action.option_strings:
            if option.startswith("--") and option != "--help":
                yield option, action.default


def test_every_manager_flag_is_in_the_flags_table_with_its_default() -> None:
    rows = table_rows(section(readme(), "### Manager flags"))
    by_flag = {ticked(r[0])[0]: r for r in rows if ticked(r[0])}
    flags = dict(_flags())
    assert len(flags) >= 10, "parser introspection found too few flags"
    missing = sorted(set(flags) - set(by_flag))
    assert not missing, f"flags missing from the README table: {missing}"
    unknown = sorted(set(by_flag) - set(flags))
    assert not unknown, f"README documents flags the manager does not have: {unknown}"
    for flag, default in flags.items():
        if default is None or isinstance(default, bool):
            continue
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        assert f"`{shown}`" in by_flag[flag][1], f"{flag}: default {shown!r} not in the table"


# -- CRD reference -----------------------------------------------------------------------------


def _crd_schema() -> dict[str, Any]:
    doc = next(d for d in yaml.safe_load_all(CRD.read_text(encoding="utf-8")) if d)
    version = doc["spec"]["versions"][0]
    return dict(version["schema"]["openAPIV3Schema"])


def _nodes(schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property below ``schema`` as (dotted path, schema node); list items add ``[]``."""
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}{name}"
        yield path, sub
        if sub.get("type") == "array":
            yield from _nodes(sub.get("items") or {}, path + "[].")
        else:
            yield from _nodes(sub, path + ".")


def _paths(schema: dict[str, Any]) -> list[str]:
    return [path for path, _ in _nodes(schema)]


@pytest.mark.parametrize(
    ("part", "heading"), [("spec", "### Spec fields"), ("status", "### Status fields")]
)
def test_every_crd_field_is_in_the_reference(part: str, heading: str) -> None:
    schema = _crd_schema()["properties"][part]
    paths = list(_paths(schema))
    assert len(paths) > 5
    documented = {t for row in table_rows(section(readme(), heading)) for t in ticked(row[0])}
    missing = sorted(set(paths) - documented)
    assert not missing, f"{part} fields missing from {heading}: {missing}"
    stale = sorted(documented - set(paths))
    assert not stale, f"{heading} documents fields the CRD does not have: {stale}"


def test_spec_defaults_in_the_reference_match_the_crd() -> None:
    spec = _crd_schema()["properties"]["spec"]
    rows = {ticked(r[0])[0]: r for r in table_rows(section(readme(), "### Spec fields"))}
    checked = 0
    for path, node in _nodes(spec):
        if "default" not in node:
            continue
        default = node["default"]
        if isinstance(default, bool):
            shown = str(default).lower()
        elif default == {}:
            shown = "{}"
        else:
            shown = str(default)
        assert f"`{shown}`" in rows[path][2], f"{path}: default {shown!r} not in the table"
        checked += 1
    assert checked >= 6


def test_cel_rule_messages_are_quoted() -> None:
    schema = _crd_schema()
    messages: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or []:
                messages.append(rule["message"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert len(messages) >= 4
    text = readme()
    for message in messages:
        # long messages are shortened with an ellipsis; their opening words must be there
        assert message[:40] in text, f"CEL message not documented: {message!r}"


# -- conditions and events ---------------------------------------------------------------------


def _source_reasons() -> tuple[set[str], set[str]]:
    """(condition reasons, event reasons) the pipeline can actually produce.

    The reasons are the members of ``scaling.reasons``; each must also be used by the scaling
    code (an unused member would be documented but never seen)."""
    used: dict[str, set[str]] = {"condition": set(), "event": set()}
    aliases = {"R": "condition", "ConditionReason": "condition", "EventReason": "event"}
    for path in SCALING.glob("*.py"):
        if path.name == "reasons.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.isupper()
            ):
                used[aliases[node.value.id]].add(node.attr)
    conditions = {m.name for m in ConditionReason}
    events = {m.name for m in EventReason}
    assert conditions <= used["condition"], f"unused: {sorted(conditions - used['condition'])}"
    assert events <= used["event"], f"unused: {sorted(events - used['event'])}"
    return {m.value for m in ConditionReason}, {m.value for m in EventReason}


def _condition_types() -> set[str]:
    tree = ast.parse(STATUS.read_text(encoding="utf-8"))
    names = {
        "ABLE_TO_SCALE",
        "SCALING_ACTIVE",
        "SCALING_LIMITED",
        "READY",
        "ADVISORY",
        "PREEMPTION",
    }
    found: set[str] = set()
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and any(isinstance(t, ast.Name) and t.id in names for t in node.targets)
        ):
            found.add(str(node.value.value))
    return found


def test_condition_reasons_match_the_source_both_ways() -> None:
    source, _ = _source_reasons()
    assert {"ReadyForNewScale", "TargetOwnedByAnotherScaler", "FailedGetMetrics"} <= source
    rows = table_rows(section(readme(), "### Conditions"))
    documented = {ticked(r[2])[0] for r in rows}
    invented = sorted(documented - source)
    assert not invented, f"README lists condition reasons the code never sets: {invented}"
    undocumented = sorted(source - documented)
    assert not undocumented, f"condition reasons missing from the README: {undocumented}"
    types = {ticked(r[0])[0] for r in rows}
    assert types == _condition_types()
    for row in rows:
        assert row[1] in {"True", "False", "Unknown"}, row


def test_event_reasons_match_the_source_both_ways() -> None:
    _, source = _source_reasons()
    assert {"SuccessfulRescale", "FailedRescale"} <= source
    rows = table_rows(section(readme(), "### Events"))
    documented = {ticked(r[1])[0] for r in rows}
    assert documented == source, (
        f"invented: {sorted(documented - source)}; undocumented: {sorted(source - documented)}"
    )


def test_every_reason_named_anywhere_in_the_readme_exists() -> None:
    """Prose and the troubleshooting table may only name reasons the code produces."""
    conditions, events = _source_reasons()
    # the example scaler's own event; the sync metric's reason for a failed status write
    known = conditions | events | {"BadAnnotation", FAILED_UPDATE_STATUS}
    text = readme()
    named = set(re.findall(r"reason `([A-Z][A-Za-z]+)`", text))
    named |= set(re.findall(r"`((?:Failed|Successful|Succeeded)[A-Za-z]+)`", text))
    assert named, "the pattern found nothing; the README wording changed"
    assert named <= known, f"unknown reasons: {sorted(named - known)}"


# -- diagrams, links, example ------------------------------------------------------------------


def test_mermaid_diagrams_are_present_and_well_formed() -> None:
    text = readme()
    assert text.count("```") % 2 == 0, "unbalanced code fences"
    blocks = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    assert len(blocks) >= 2, "expected a reconcile diagram and a drain timeline"
    for block in blocks:
        first = block.strip().splitlines()[0].split()[0]
        assert first in MERMAID_KINDS, f"unknown mermaid diagram type {first!r}"
        assert block.count("[") == block.count("]"), "unbalanced brackets in a mermaid block"


def _slug(heading: str) -> str:
    text = re.sub(r"[`*]", "", heading.strip("# ").strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def test_internal_links_point_at_headings() -> None:
    text = readme()
    slugs = {_slug(line) for line in text.splitlines() if re.match(r"#{1,6} ", line)}
    links = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert links, "no internal links found"
    assert links <= slugs, f"dangling links: {sorted(links - slugs)}"


def test_readme_examples_are_the_tested_example_files() -> None:
    blocks = re.findall(r"<!-- example:(\w+) -->\n```python\n(.*?)```", readme(), re.S)
    names = {name for name, _ in blocks}
    assert {"annotation_scaler", "headroom"} <= names, "README lost an example block"
    for name, shown in blocks:
        source = ROOT / "examples" / f"{name}.py"
        assert source.is_file(), f"README shows examples/{name}.py, which does not exist"
        assert len(shown.splitlines()) > 10
        assert shown in source.read_text(encoding="utf-8"), (
            f"the README's example differs from examples/{name}.py; copy it again"
        )


# -- chart values ------------------------------------------------------------------------------


def _lookup(values: dict[str, Any], dotted: str) -> Any:
    node: Any = values
    for part in dotted.split("."):
        assert isinstance(node, dict) and part in node, f"{dotted} is not in values.yaml"
        node = node[part]
    return node


def _shown(value: Any) -> str:
    if value == "":
        return '""'
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


@pytest.mark.parametrize(
    ("heading", "values_file"),
    [
        ("### With Helm", ROOT / "dist" / "chart" / "values.yaml"),
        ("### 2. Draining the chosen pod", ROOT / "test" / "charts" / "vllm-mock" / "values.yaml"),
    ],
)
def test_chart_values_tables_match_values_yaml(heading: str, values_file: Path) -> None:
    values = yaml.safe_load(values_file.read_text(encoding="utf-8"))
    rows = table_rows(section(readme(), heading))
    assert rows
    for row in rows:
        key = ticked(row[0])[0]
        default = _lookup(values, key)
        assert f"`{_shown(default)}`" in row[1], f"{key}: values.yaml says {default!r}"


def test_drain_budget_rule_holds_for_the_documented_defaults() -> None:
    values = yaml.safe_load(
        (ROOT / "test" / "charts" / "vllm-mock" / "values.yaml").read_text(encoding="utf-8")
    )
    spent = values["endpointSyncSeconds"] + values["drainSeconds"] + values["shutdownTimeout"]
    assert spent <= values["terminationGracePeriodSeconds"]
    assert "endpointSyncSeconds + drainSeconds + shutdownTimeout" in readme()
