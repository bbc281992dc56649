"""The generated CRD: in sync with the types, structural, documented, and its CEL rules agree
with the Python parser on the same objects."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import celpy
import kubernetes_validate
import pytest
import yaml
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from llmscaler_runtime.api.v1alpha1 import (
    LLMScalerSpec,
    LLMScalerStatus,
    ScaleDown,
    SpecError,
    parse_activation_threshold,
    parse_target,
    parse_tolerance,
)
from llmscaler_runtime.api.v1alpha1._meta import NO_VALUE, Rule, field_metas, type_meta
from llmscaler_runtime.api.v1alpha1.codec import (
    _decode_value,
    _Problems,
    api_types,
    decode_object,
    type_hints,
)
from llmscaler_runtime.api.v1alpha1.crd import crd_manifest, iter_rules, render_crd_yaml

ROOT = Path(__file__).resolve().parents[3]
CRD_PATH = ROOT / "config/crd/bases/autoscaling.modelsphere.dev_llmscalers.yaml"
GEN = ROOT / "hack/gen_crd.py"


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _walk(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]")


def test_committed_crd_matches_the_types() -> None:
    assert CRD_PATH.read_text() == render_crd_yaml(), "run `make manifests`"


def test_check_mode_detects_a_stale_file(tmp_path: Path) -> None:
    out = tmp_path / "crd.yaml"
    run = [sys.executable, str(GEN), "--output", str(out)]
    stale = subprocess.run([*run, "--check"], capture_output=True, text=True, check=False)
    assert stale.returncode == 1 and "stale" in stale.stderr
    subprocess.run(run, check=True)
    fresh = subprocess.run([*run, "--check"], capture_output=True, text=True, check=False)
    assert fresh.returncode == 0, fresh.stderr
    out.write_text(out.read_text().replace("default: 15", "default: 16"))
    edited = subprocess.run([*run, "--check"], capture_output=True, text=True, check=False)
    assert edited.returncode == 1 and "+                default: 15" in edited.stderr


def test_crd_is_a_valid_apiextensions_v1_object() -> None:
    (doc,) = list(yaml.safe_load_all(CRD_PATH.read_text()))
    kubernetes_validate.validate(doc, "1.32", strict=True)


def test_schema_is_structural_and_documented() -> None:
    for path, node in _walk(_schema()):
        assert "type" in node, f"{path or '<root>'} has no type"
        if path and path != ".metadata":
            assert node.get("description"), f"{path} has no description for kubectl explain"


def test_names_columns_and_subresources() -> None:
    spec = crd_manifest()["spec"]
    assert spec["names"]["shortNames"] == ["llms"]
    assert spec["scope"] == "Namespaced"
    version = spec["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"] if not c.get("priority")]
    assert columns == [
        "MinReplicas",
        "MaxReplicas",
        "CurrentReplicas",
        "DesiredReplicas",
        "LastScale",
        "Age",
    ]


def test_schema_defaults_bounds_and_status_shape() -> None:
    props = _schema()["properties"]
    spec = props["spec"]["properties"]
    assert spec["metricProvider"]["default"] == "Prometheus"
    assert (spec["syncPeriodSeconds"]["default"], spec["syncPeriodSeconds"]["minimum"]) == (15, 1)
    assert (spec["retryPeriodSeconds"]["default"], spec["retryPeriodSeconds"]["minimum"]) == (10, 1)
    assert spec["minReplicas"]["minimum"] == 0 and spec["minReplicas"]["format"] == "int32"
    assert spec["scaleDown"]["default"] == {}
    scale_down = spec["scaleDown"]["properties"]
    assert scale_down["behavior"]["enum"] == ["CacheAware", "None"]
    assert scale_down["behavior"]["default"] == "CacheAware"
    assert spec["customProvider"]["properties"]["path"]["default"] == "/decisions"
    assert spec["serverHeaders"]["additionalProperties"] == {"type": "string"}
    assert props["spec"]["required"] == ["targetRef", "serverAddress", "minReplicas", "maxReplicas"]
    status = props["status"]["properties"]
    conditions = status["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["required"] == [
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
    ]
    assert status["lastScaleTime"]["format"] == "date-time"


API_TYPES = api_types(LLMScalerSpec, LLMScalerStatus)


def test_every_field_has_metadata_and_defaults_match_the_attrs_defaults() -> None:
    for cls in API_TYPES:
        metas = field_metas(cls)  # raises TypeError for a field declared without schema()
        assert set(metas) == {f.name for f in attrs.fields(cls)}, cls
        type_meta(cls)  # raises TypeError for a type without @api_type
        for field in attrs.fields(cls):
            meta = metas[field.name]
            if meta.default is NO_VALUE or field.default is attrs.NOTHING:
                continue
            factory = getattr(field.default, "factory", None)
            attrs_default = factory() if factory is not None else field.default
            problems = _Problems()
            decoded = _decode_value(type_hints(cls)[field.name], meta, meta.default, "x", problems)
            assert not problems and decoded == attrs_default, (cls, field.name)


# --- CEL -------------------------------------------------------------------------------------

_ENV = celpy.Environment()


def _cel(rule: str, value: Any) -> bool:
    program = _ENV.program(_ENV.compile(rule))
    result = program.evaluate({"self": json_to_cel(value)})
    if isinstance(result, CELEvalError):
        raise result
    return bool(result)


def _rules_by_path() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for path, rule in iter_rules(_schema()):
        out.setdefault(path, []).append(rule)
    return out


def test_cel_rules_compile_and_sit_where_expected() -> None:
    rules = _rules_by_path()
    assert sorted(rules) == [
        ".spec",
        ".spec.metrics[].activationThreshold",
        ".spec.metrics[].target",
        ".spec.scaleDown.tolerance",
        ".spec.scaleUp.tolerance",
        ".spec.schedules[]",
        ".spec.schedules[].timeZone",
        ".spec.serverHeadersFrom[]",
    ]
    assert len(rules[".spec"]) == 6
    for entries in rules.values():
        for entry in entries:
            _ENV.compile(entry["rule"])
            assert entry["message"]


TARGETS = [
    "0.8",
    "80",
    "1e3",
    ".5",
    "+2",
    "1.",
    "80%",
    "0",
    "0.0",
    "-1",
    "inf",
    "nan",
    "1_000",
    " 1",
    "0x10",
    "1e999",
    "1e-400",
    "abc",
    "1e5%",
    "00.10",
    "3.40e+01",
]


@pytest.mark.parametrize("target", TARGETS)
def test_target_rule_agrees_with_the_parser(target: str) -> None:
    (rule,) = _rules_by_path()[".spec.metrics[].target"]
    python_ok = _rule_for(rule).check(target) is None
    assert _cel(rule["rule"], target) == python_ok


def test_target_rule_and_parser_agree_on_random_strings() -> None:
    """Fuzz the two implementations against each other: the API server's CEL rule and the
    Python parser must accept exactly the same targets, and every accepted one is usable."""
    (rule,) = _rules_by_path()[".spec.metrics[].target"]
    program = _ENV.program(_ENV.compile(rule["rule"]))
    rng = random.Random(1234)
    alphabet = "0123456789" * 3 + ".eE+-% x"
    accepted = 0
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        cel_ok = bool(program.evaluate({"self": json_to_cel(text)}))
        try:
            value = parse_target(text)
        except SpecError:
            assert not cel_ok, f"CEL accepts {text!r}, the parser does not"
            continue
        assert cel_ok, f"the parser accepts {text!r}, CEL does not"
        assert math.isfinite(value) and value > 0
        accepted += 1
    assert accepted > 20, "the fuzz never produced a valid target"


TOLERANCES = ["0", "0.1", "0.0", ".5", "+0.25", "0.999", "1", "1.0", "1e-1", "1e0", "-0.1",
              "10%", "2", "abc", " 0.1", "0.10", "9e-99"]  # fmt: skip


@pytest.mark.parametrize("path", [".spec.scaleUp.tolerance", ".spec.scaleDown.tolerance"])
@pytest.mark.parametrize("text", TOLERANCES)
def test_tolerance_rule_agrees_with_the_parser(path: str, text: str) -> None:
    """The CEL rule and its Python twin accept exactly [0, 1), written as a plain decimal."""
    (rule,) = _rules_by_path()[path]
    python_ok = _rule_for(rule).check(text) is None
    assert _cel(rule["rule"], text) == python_ok
    if python_ok:
        assert 0.0 <= parse_tolerance(text) < 1.0
    assert python_ok == (text in {"0", "0.1", "0.0", ".5", "+0.25", "0.999", "1e-1", "0.10",
                                  "9e-99"})  # fmt: skip


THRESHOLDS = ["0", "0.5", "3", "+1", ".25", "1e2", "1e99", "-1", "-0", "10%", "inf", "1e100",
              "nan", " 1", "0x1"]  # fmt: skip


@pytest.mark.parametrize("text", THRESHOLDS)
def test_activation_threshold_rule_agrees_with_the_parser(text: str) -> None:
    (rule,) = _rules_by_path()[".spec.metrics[].activationThreshold"]
    python_ok = _rule_for(rule).check(text) is None
    assert _cel(rule["rule"], text) == python_ok
    assert python_ok == (text in {"0", "0.5", "3", "+1", ".25", "1e2", "1e99"})
    if python_ok:
        value = parse_activation_threshold(text)
        assert math.isfinite(value) and value >= 0


def _rule_for(entry: dict[str, Any]) -> Rule:
    rules = [r for cls in API_TYPES for r in type_meta(cls).rules]
    rules += [r for cls in API_TYPES for m in field_metas(cls).values() for r in m.rules]
    return next(r for r in rules if r.rule == entry["rule"])


def _spec(**over: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
        "serverAddress": "http://p:9090",
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [{"query": "q", "target": "1"}],
    }
    spec.update(over)
    return {k: v for k, v in spec.items() if v is not None}


def _window(**over: Any) -> dict[str, Any]:
    window = {"name": "w", "timeZone": "Europe/Paris", "start": "08:00", "end": "18:00"}
    return {"minReplicas": 2, **window, **over}


SPECS = {
    "ok": (_spec(), True),
    "ok-explicit-prometheus": (_spec(metricProvider="Prometheus"), True),
    "min-equals-max": (_spec(minReplicas=3), True),
    "min-above-max": (_spec(minReplicas=4), False),
    "zero-zero": (_spec(minReplicas=0, maxReplicas=0), True),
    "prometheus-no-metrics": (_spec(metrics=None), False),
    "prometheus-empty-metrics": (_spec(metrics=[]), False),
    "custom-ok": (
        _spec(metricProvider="Custom", metrics=None, customProvider={"serviceId": "s"}),
        True,
    ),
    "custom-no-provider": (_spec(metricProvider="Custom", metrics=None), False),
    "custom-no-provider-with-metrics": (_spec(metricProvider="Custom"), False),
    "headers-from-distinct": (
        _spec(serverHeaders={"X-A": "1"}, serverHeadersFrom=[{"name": "X-B", "value": "2"}]),
        True,
    ),
    "headers-from-only": (_spec(serverHeadersFrom=[{"name": "X-B", "value": "2"}]), True),
    "headers-from-repeats-server-headers": (
        _spec(serverHeaders={"X-A": "1"}, serverHeadersFrom=[{"name": "X-A", "value": "2"}]),
        False,
    ),
    "fallback-at-min": (_spec(fallback={"failureThreshold": 1, "replicas": 1}), True),
    "fallback-at-max": (_spec(fallback={"failureThreshold": 3, "replicas": 3}), True),
    "fallback-below-min": (_spec(fallback={"failureThreshold": 3, "replicas": 0}), False),
    "fallback-above-max": (_spec(fallback={"failureThreshold": 3, "replicas": 4}), False),
    "schedule-raises-min-to-max": (_spec(schedules=[_window(minReplicas=3)]), True),
    "schedule-min-above-spec-max": (_spec(schedules=[_window(minReplicas=4)]), False),
    "schedule-max-below-spec-min": (_spec(schedules=[_window(maxReplicas=0)]), False),
    "schedule-both-bounds": (_spec(schedules=[_window(minReplicas=5, maxReplicas=8)]), True),
    "schedule-min-above-own-max": (_spec(schedules=[_window(minReplicas=3, maxReplicas=2)]), False),
}

ZONES = {
    "Europe/Paris": True,
    "America/Argentina/Buenos_Aires": True,
    "Etc/GMT+5": True,
    "UTC": True,
    "US/Pacific": True,
    "Mars/Olympus": False,
    "Europe": False,  # a directory of the zone database, not a zone
    "europe/paris": False,
    "Local": False,
}


@pytest.mark.parametrize("zone", sorted(ZONES))
def test_time_zone_rule_agrees_with_the_parser(zone: str) -> None:
    """A zone the API server's CEL cannot load errors (which rejects the object, see
    test_config_apply); one it can load passes. The parser agrees."""
    (rule,) = _rules_by_path()[".spec.schedules[].timeZone"]
    try:
        cel_ok = _cel(rule["rule"], zone)
    except (CELEvalError, OSError):  # celpy lets zoneinfo's IsADirectoryError through
        cel_ok = False
    assert cel_ok == (_rule_for(rule).check(zone) is None) == ZONES[zone]


WINDOWS = {
    "day": (_window(), True),
    "to-midnight": (_window(start="22:00", end="24:00"), True),
    "across-midnight": (_window(start="22:00", end="06:00"), False),
    "empty": (_window(start="08:00", end="08:00"), False),
    "no-bounds": ({k: v for k, v in _window().items() if k != "minReplicas"}, False),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_schedule_rules_agree_with_the_parser(name: str) -> None:
    entry, valid = WINDOWS[name]
    rules = _rules_by_path()[".spec.schedules[]"]
    assert all(_cel(r["rule"], entry) for r in rules) == valid
    assert all(_rule_for(r).check(entry) is None for r in rules) == valid


_REF = {"secretKeyRef": {"name": "auth", "key": "token"}}
HEADER_ENTRIES = {
    "value": ({"name": "X", "value": "v"}, True),
    "empty-value": ({"name": "X", "value": ""}, True),
    "value-from": ({"name": "X", "valueFrom": _REF}, True),
    "neither": ({"name": "X"}, False),
    "both": ({"name": "X", "value": "v", "valueFrom": _REF}, False),
}


@pytest.mark.parametrize("name", sorted(HEADER_ENTRIES))
def test_header_entry_rule_agrees_with_the_parser(name: str) -> None:
    entry, valid = HEADER_ENTRIES[name]
    (rule,) = _rules_by_path()[".spec.serverHeadersFrom[]"]
    assert rule["message"].startswith("exactly one of value and valueFrom")
    assert _cel(rule["rule"], entry) == (_rule_for(rule).check(entry) is None) == valid
    spec = _spec(serverHeadersFrom=[entry])
    if valid:
        LLMScalerSpec.from_dict(spec)
    else:
        with pytest.raises(SpecError, match="exactly one of value and valueFrom"):
            LLMScalerSpec.from_dict(spec)


def test_server_headers_from_schema() -> None:
    node = _schema()["properties"]["spec"]["properties"]["serverHeadersFrom"]
    assert node["x-kubernetes-list-type"] == "map"
    assert node["x-kubernetes-list-map-keys"] == ["name"]
    assert node["maxItems"] == 16
    item = node["items"]
    assert item["required"] == ["name"]
    ref = item["properties"]["valueFrom"]["properties"]["secretKeyRef"]
    assert ref["required"] == ["name", "key"]
    assert set(ref["properties"]) == {"name", "key"}  # no namespace: always the scaler's own


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_rules_agree_with_the_parser(name: str) -> None:
    spec, valid = SPECS[name]
    cel_ok = all(_cel(entry["rule"], spec) for entry in _rules_by_path()[".spec"])
    python_ok = all(_rule_for(entry).check(spec) is None for entry in _rules_by_path()[".spec"])
    assert cel_ok == python_ok == valid
    if valid:
        LLMScalerSpec.from_dict(spec)
    else:
        with pytest.raises(SpecError):
            LLMScalerSpec.from_dict(spec)


def test_decoding_the_crd_defaults_gives_a_valid_object() -> None:
    problems = _Problems()
    assert decode_object(ScaleDown, {}, "spec.scaleDown", problems) == ScaleDown()
    assert not problems
