"""Parsing the LLMScaler API: defaults, strict types, cross-field rules, every problem reported."""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest

from llmscaler_runtime.api.v1alpha1 import (
    API_VERSION,
    KIND,
    Condition,
    CustomProvider,
    LLMScaler,
    LLMScalerSpec,
    LLMScalerStatus,
    MetricProvider,
    MetricSpec,
    ScaleDown,
    ScaleDownBehavior,
    SpecError,
    TargetRef,
    parse_target,
)


def minimal_spec(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
        "serverAddress": "http://prometheus:9090",
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [{"name": "kv", "query": "avg(kv)", "target": "0.8"}],
    }
    spec.update(overrides)
    return spec


def scaler_obj(spec: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": "s",
            "namespace": "ns",
            "uid": "u-1",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec if spec is not None else minimal_spec(),
    }
    obj.update(extra)
    return obj


def problems_of(spec: Any) -> tuple[str, ...]:
    with pytest.raises(SpecError) as info:
        LLMScalerSpec.from_dict(spec)
    return info.value.problems


def test_minimal_spec_gets_the_crd_defaults() -> None:
    spec = LLMScalerSpec.from_dict(minimal_spec())
    assert spec.metric_provider is MetricProvider.PROMETHEUS
    assert spec.sync_period_seconds == 15
    assert spec.retry_period_seconds == 10
    assert spec.scale_down == ScaleDown(0, 0, ScaleDownBehavior.CACHE_AWARE, None)
    assert spec.custom_provider is None and spec.preemption is None
    assert dict(spec.server_headers) == {}
    assert spec.metrics == (MetricSpec("kv", "avg(kv)", "0.8"),)
    assert spec.target_ref == TargetRef("apps/v1", "Deployment", "vllm")


def test_custom_provider_defaults_path_and_needs_no_metrics() -> None:
    raw = minimal_spec(metricProvider="Custom", customProvider={"serviceId": "svc"})
    del raw["metrics"]
    spec = LLMScalerSpec.from_dict(raw)
    assert spec.metric_provider is MetricProvider.CUSTOM
    assert spec.custom_provider == CustomProvider("svc", None, "/decisions")
    assert spec.metrics == ()


def test_partial_scale_down_keeps_other_defaults() -> None:
    spec = LLMScalerSpec.from_dict(minimal_spec(scaleDown={"behavior": "None"}))
    assert spec.scale_down == ScaleDown(behavior=ScaleDownBehavior.NONE)


def test_null_is_treated_as_absent_like_the_api_server_pruning_it() -> None:
    spec = LLMScalerSpec.from_dict(minimal_spec(syncPeriodSeconds=None, preemption=None))
    assert spec.sync_period_seconds == 15
    assert spec.preemption is None


def test_every_problem_is_reported_at_once() -> None:
    raw = {
        "minReplicas": 5,
        "maxReplicas": "x",
        "metricProvider": "Custom",
        "serverHeaders": {"Authorization": 1},
        "metrics": [{"target": "80%"}, {"query": "q", "target": "0"}],
        "scaleDown": {"behavior": "Foo", "maxStepReplicas": -1},
    }
    problems = problems_of(raw)
    expected_prefixes = [
        "spec.targetRef: is required",
        "spec.serverAddress: is required",
        "spec.maxReplicas: must be an integer",
        "spec.serverHeaders.Authorization: must be a string",
        "spec.metrics[0].query: is required",
        "spec.metrics[0].target: '80%' has a % sign",
        "spec.metrics[1].target: '0' must be a finite number greater than zero",
        "spec.scaleDown.maxStepReplicas: must be at least 0",
        "spec.scaleDown.behavior: must be one of CacheAware, None",
        "spec.customProvider: customProvider is required when metricProvider is Custom",
    ]
    assert len(problems) == len(expected_prefixes), problems
    for prefix in expected_prefixes:
        assert any(p.startswith(prefix) for p in problems), (prefix, problems)


def test_min_above_max_is_rejected_with_both_numbers() -> None:
    (problem,) = problems_of(minimal_spec(minReplicas=4, maxReplicas=2))
    assert problem.startswith("spec.minReplicas: minReplicas must be less than or equal")
    assert "4 > maxReplicas 2" in problem


def test_zero_bounds_are_allowed_for_a_pinned_fleet() -> None:
    spec = LLMScalerSpec.from_dict(minimal_spec(minReplicas=0, maxReplicas=0))
    assert (spec.min_replicas, spec.max_replicas) == (0, 0)


@pytest.mark.parametrize("metrics", [None, []])
def test_prometheus_needs_at_least_one_metric(metrics: list[Any] | None) -> None:
    raw = minimal_spec()
    if metrics is None:
        del raw["metrics"]
    else:
        raw["metrics"] = metrics
    (problem,) = problems_of(raw)
    assert problem.startswith("spec.metrics: metrics must list at least one metric")


def test_custom_without_custom_provider_is_rejected() -> None:
    (problem,) = problems_of(minimal_spec(metricProvider="Custom"))
    assert problem.startswith("spec.customProvider:")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("minReplicas", True, "must be an integer, got boolean"),
        ("minReplicas", 1.0, "must be an integer, got number"),
        ("maxReplicas", 2**31, "does not fit in int32"),
        ("minReplicas", -1, "must be at least 0"),
        ("syncPeriodSeconds", 0, "must be at least 1"),
        ("retryPeriodSeconds", 0, "must be at least 1"),
        ("serverAddress", "", "must not be empty"),
        ("serverAddress", 5, "must be a string, got integer"),
        ("metricProvider", "prometheus", "must be one of Prometheus, Custom"),
        ("metrics", {"a": 1}, "must be an array, got object"),
        ("targetRef", "apps/v1", "must be an object, got string"),
        ("serverHeaders", ["a"], "must be an object of strings"),
        ("preemption", {"enable": "yes"}, "must be a boolean"),
    ],
)
def test_wrong_types_and_bounds_are_rejected(field: str, value: Any, fragment: str) -> None:
    problems = problems_of(minimal_spec(**{field: value}))
    assert any(fragment in p and p.startswith(f"spec.{field}") for p in problems), problems


def test_too_many_metrics_are_rejected() -> None:
    metric = {"query": "q", "target": "1"}
    problems = problems_of(minimal_spec(metrics=[metric] * 17))
    assert problems == ("spec.metrics: must have at most 16 items, got 17",)


def test_custom_provider_path_must_be_absolute() -> None:
    raw = minimal_spec(metricProvider="Custom", customProvider={"serviceId": "a", "path": "x"})
    (problem,) = problems_of(raw)
    assert problem.startswith("spec.customProvider.path:")


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.8", 0.8), ("80", 80.0), ("1e3", 1000.0), (".5", 0.5), ("+2", 2.0), ("1.", 1.0)],
)
def test_valid_targets(text: str, value: float) -> None:
    assert parse_target(text) == value
    assert MetricSpec("m", "q", text).target_value == value


@pytest.mark.parametrize(
    "text",
    [
        "80%",
        "0",
        "0.0",
        "-1",
        "inf",
        "nan",
        "NaN",
        "1_000",
        " 1",
        "1 ",
        "",
        "0x10",
        "1e999",
        "1e-400",
        "1" * 65,
        "one",
    ],
)
def test_invalid_targets_raise_spec_error(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_target(text)
    assert info.value.problems[0].startswith("spec.metrics[].target: ")
    with pytest.raises(SpecError) as named:
        MetricSpec("m", "q", text).target_value  # noqa: B018
    assert named.value.problems[0].startswith("spec.metrics[name=m].target: ")


def test_round_trip_through_to_dict() -> None:
    raw = minimal_spec(
        metricProvider="Prometheus",
        serverHeaders={"Authorization": "Bearer t"},
        scaleDown={"stabilizationWindowSeconds": 180, "deletionCostQuery": "q"},
        preemption={"enable": True, "priorityClass": "high"},
    )
    spec = LLMScalerSpec.from_dict(raw)
    assert LLMScalerSpec.from_dict(spec.to_dict()) == spec
    encoded = spec.to_dict()
    assert encoded["serverHeaders"] == {"Authorization": "Bearer t"}
    assert encoded["scaleDown"]["deletionCostQuery"] == "q"
    assert "customProvider" not in encoded


def test_unnamed_metric_round_trips_without_a_name() -> None:
    spec = LLMScalerSpec.from_dict(minimal_spec(metrics=[{"query": "q", "target": "2"}]))
    assert spec.metrics[0].name == ""
    assert spec.to_dict()["metrics"] == [{"query": "q", "target": "2"}]


def test_types_are_immutable_and_hashable() -> None:
    spec = LLMScalerSpec.from_dict(minimal_spec(serverHeaders={"a": "b"}))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        spec.min_replicas = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.server_headers["a"] = "c"  # type: ignore[index]
    assert hash(spec) == hash(LLMScalerSpec.from_dict(minimal_spec(serverHeaders={"a": "b"})))
    assert spec.server_headers == {"a": "b"}


def test_input_is_not_mutated() -> None:
    raw = scaler_obj()
    before = copy.deepcopy(raw)
    LLMScaler.from_dict(raw)
    assert raw == before


def test_whole_object_parses_identity_and_status() -> None:
    cond = {
        "type": "Ready",
        "status": "True",
        "reason": "Scaled",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:00:05Z",
        "observedGeneration": 3,
    }
    status = {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "conditions": [cond],
        "observedGeneration": 3,
        "lastScaleTime": "2026-01-01T00:00:05Z",
    }
    scaler = LLMScaler.from_dict(scaler_obj(status=status))
    assert (scaler.namespace, scaler.name, scaler.uid, scaler.generation) == ("ns", "s", "u-1", 3)
    assert scaler.key == "ns/s"
    assert scaler.status.current_replicas == 2
    assert scaler.status.condition("Ready") == Condition(
        "Ready", "True", "Scaled", "ok", "2026-01-01T00:00:05Z", 3
    )
    assert scaler.status.to_dict() == status
    assert LLMScaler.from_dict(scaler.to_dict()) == scaler


def test_manifest_without_server_metadata_parses() -> None:
    obj = scaler_obj()
    obj["metadata"] = {"name": "s"}
    scaler = LLMScaler.from_dict(obj)
    assert (scaler.namespace, scaler.uid, scaler.generation) == ("", "", 0)
    assert scaler.key == "s"


def test_object_level_problems_are_collected_with_spec_problems() -> None:
    obj = scaler_obj(spec=minimal_spec(minReplicas=-2), kind="Pod")
    obj["metadata"] = {"generation": "1"}
    with pytest.raises(SpecError) as info:
        LLMScaler.from_dict(obj)
    paths = [p.split(":", 1)[0] for p in info.value.problems]
    assert paths == ["kind", "metadata.name", "metadata.generation", "spec.minReplicas"]
    assert str(info.value).count(";") == 3


def test_missing_spec_and_non_object_input() -> None:
    obj = scaler_obj()
    del obj["spec"]
    with pytest.raises(SpecError, match="spec: is required"):
        LLMScaler.from_dict(obj)
    with pytest.raises(SpecError, match="must be a JSON object"):
        LLMScaler.from_dict([1])


def test_damaged_status_never_blocks_parsing_the_scaler() -> None:
    good = {
        "type": "Ready",
        "status": "True",
        "reason": "R",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status = {
        "currentReplicas": "2",
        "desiredReplicas": 4,
        "lastScaleTime": "yesterday",
        "conditions": [good, {"type": "X", "status": "Maybe"}, dict(good, message="dup")],
    }
    scaler = LLMScaler.from_dict(scaler_obj(status=status))
    assert scaler.status == LLMScalerStatus(
        desired_replicas=4, conditions=(Condition.from_dict(good),)
    )
    with pytest.raises(SpecError) as info:
        LLMScalerStatus.from_dict(status)
    problems = info.value.problems
    assert any(p.startswith("status.currentReplicas:") for p in problems)
    assert any(p.startswith("status.lastScaleTime:") for p in problems)
    assert any(p.startswith("status.conditions[1].status: must be one of True") for p in problems)


def test_duplicate_condition_types_are_rejected_in_strict_mode() -> None:
    cond = {
        "type": "Ready",
        "status": "True",
        "reason": "R",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    with pytest.raises(SpecError, match=r"status.conditions\[1\]: duplicate entry for Ready"):
        LLMScalerStatus.from_dict({"conditions": [cond, cond]})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reason", "has space"),
        ("reason", ""),
        ("type", "-bad"),
        ("lastTransitionTime", "2026-13-01T00:00:00Z"),
        ("observedGeneration", -1),
    ],
)
def test_condition_fields_follow_metav1(field: str, value: Any) -> None:
    cond = {
        "type": "Ready",
        "status": "False",
        "reason": "R",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        field: value,
    }
    with pytest.raises(SpecError, match=f"status.conditions\\[\\]\\.{field}"):
        Condition.from_dict(cond)


def test_empty_status_encodes_to_empty_dict() -> None:
    assert LLMScalerStatus().to_dict() == {}
    assert LLMScalerStatus.from_dict(None) == LLMScalerStatus()
