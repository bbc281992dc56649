"""The three parsers that read what others wrote, under fuzzing (issue 12, part 3).

* ``parse_query_response`` and the readers built on it (a Prometheus ``/api/v1/query`` reply),
* ``parse_decision`` (a decision server's reply),
* ``LLMScaler.from_dict`` (an object from the API server, or a manifest).

For any input each yields a value of its declared type or raises its typed error
(``MetricError`` for the replies, ``SpecError`` for the spec), never another exception, within
a per-example deadline, and the error text stays short whatever the input holds (it ends up
in Events and status conditions, which the API server caps). Inputs are arbitrary JSON-like
values, mutations of valid documents (a subtree replaced, bytes cut or inserted), NaN/Inf and
huge numbers, unicode, very long strings and nesting 10,000 deep.
"""

from __future__ import annotations

import copy
import json
import math
import typing
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmscaler_runtime.api.v1alpha1 import LLMScaler, LLMScalerSpec, LLMScalerStatus, SpecError
from llmscaler_runtime.api.v1alpha1._meta import field_metas
from llmscaler_runtime.api.v1alpha1.codec import api_types, type_hints, unwrap_optional
from llmscaler_runtime.scaling.http import HttpResponse
from llmscaler_runtime.scaling.providers.base import MetricError
from llmscaler_runtime.scaling.providers.decision import DECISION_API_VERSION, parse_decision
from llmscaler_runtime.scaling.providers.prometheus import (
    _pod_costs,
    _single_value,
    parse_query_response,
)
from llmscaler_runtime.scaling.types import INT32_MAX

from ._tally import count, examples

#: The longest error text a parser may produce, whatever it was given.
MAX_MESSAGE = 2048

# --- JSON-like values --------------------------------------------------------------------------

_AWKWARD_TEXT = st.sampled_from(
    [
        "",
        "NaN",
        "nan",
        "+Inf",
        "-Inf",
        "Infinity",
        "1e999",
        "-1e999",
        "0x10",
        " 1 ",
        "1_000",
        "١٢",
        "80%",
        "0.8",
        "3",
        "-3",
        "\x00",
        "\ud7ff\U0010ffff",
        "Prometheus",
        "Custom",
        "Deployment",
        "apps/v1",
        "success",
        "vector",
        "scalar",
        "matrix",
        DECISION_API_VERSION,
        "svc",
    ]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([0, 1, -1, INT32_MAX, INT32_MAX + 1, -(2**31) - 1, 2**63, 10**4000])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | _AWKWARD_TEXT
)
_KEYS = st.text(max_size=12) | st.sampled_from(
    ["status", "data", "result", "resultType", "metric", "value", "pod", "error", "errorType"]
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=25,
)
SMALL_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=5,
)


def nested(depth: int, leaf: Any = 0) -> Any:
    """A list ``depth`` levels deep, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@st.composite
def mutated(draw: st.DrawFn, valid: Any) -> Any:
    """``valid`` with one to three subtrees replaced by arbitrary values (or deleted)."""
    doc = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        if path and draw(st.booleans()) and isinstance(doc, dict | list):
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict) and draw(st.booleans()):
                del parent[path[-1]]
                continue
        doc = _replace(doc, path, draw(JSON))
    return doc


def _encode(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


@st.composite
def byte_mutations(draw: st.DrawFn, body: bytes) -> bytes:
    """``body`` cut short, with bytes inserted or overwritten, or repeated."""
    kind = draw(st.sampled_from(["cut", "insert", "overwrite", "repeat", "prefix"]))
    at = draw(st.integers(0, len(body)))
    junk = draw(st.binary(min_size=1, max_size=8))
    if kind == "cut":
        return body[:at]
    if kind == "insert":
        return body[:at] + junk + body[at:]
    if kind == "overwrite":
        return body[:at] + junk + body[at + len(junk) :]
    if kind == "repeat":
        return body + body[at:]
    return junk + body


def bodies(valid_docs: list[Any]) -> st.SearchStrategy[bytes]:
    """Reply bodies: valid documents mutated as JSON or as bytes, arbitrary JSON, raw bytes."""
    docs = st.sampled_from(valid_docs)
    as_json = docs.flatmap(mutated).map(_encode)
    return st.one_of(
        docs.map(_encode),
        as_json,
        as_json.flatmap(byte_mutations),
        docs.map(_encode).flatmap(byte_mutations),
        JSON.map(_encode),
        st.binary(max_size=64),
        st.text(max_size=64).map(lambda s: s.encode("utf-8", "surrogatepass")),
    )


STATUSES = st.sampled_from([200, 200, 200, 204, 301, 400, 404, 422, 429, 500, 503, 0, 999])
CONTENT_TYPES = st.sampled_from(
    ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/html", ""]
) | st.text(max_size=30)


def _check_error(exc: BaseException, allowed: type[BaseException], target: str) -> None:
    if not isinstance(exc, allowed):
        count(f"crash:{target}")
        raise AssertionError(f"{target}: {type(exc).__name__} escaped: {exc!r}"[:2000]) from exc
    # a SpecError lists every problem of the object, each bounded
    parts = exc.problems if isinstance(exc, SpecError) else (str(exc),)
    longest = max(map(len, parts), default=0)
    assert longest <= MAX_MESSAGE, f"{target}: {longest}-character error text"


# --- Prometheus ------------------------------------------------------------------------------

PROM_VALID = [
    {"status": "success", "data": {"resultType": "vector", "result": []}},
    {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": {"pod": "a", "app": "x"}, "value": [1.5, "0.75"]}],
        },
    },
    {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"pod": "a"}, "value": [1, "1"]},
                {"metric": {"pod": "b"}, "value": [1, "NaN"]},
            ],
        },
    },
    {"status": "success", "data": {"resultType": "scalar", "result": [1, "+Inf"]}},
    {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"},
]


def _prometheus(status: int, content_type: str, body: bytes) -> None:
    count("fuzz:prometheus")
    try:
        samples = parse_query_response(status, content_type, body)
    except Exception as exc:
        _check_error(exc, MetricError, "prometheus")
        return
    assert status == 200
    for sample in samples:
        assert isinstance(sample.value, float)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in sample.labels.items())
    resp = HttpResponse(status, content_type, body, "http://p/api/v1/query")
    try:
        value = _single_value(resp)
    except Exception as exc:
        _check_error(exc, MetricError, "prometheus")
    else:
        assert len(samples) == 1 and math.isfinite(value)
    try:
        costs = _pod_costs(resp)
    except Exception as exc:
        _check_error(exc, MetricError, "prometheus")
    else:
        assert costs and all(-(2**31) <= c <= INT32_MAX for c in costs.values())


@settings(max_examples=examples(600))
@given(STATUSES, CONTENT_TYPES, bodies(PROM_VALID))
def test_prometheus_reply_parses_or_is_a_metric_error(
    status: int, content_type: str, body: bytes
) -> None:
    _prometheus(status, content_type, body)


@pytest.mark.parametrize("depth", [10, 990, 10_000, 100_000])
@pytest.mark.parametrize("where", ["top", "result", "labels", "value"])
def test_prometheus_deep_nesting_is_a_metric_error(depth: int, where: str) -> None:
    deep = nested(depth)
    docs = {
        "top": deep,
        "result": {"status": "success", "data": {"resultType": "vector", "result": deep}},
        "labels": {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": {"a": deep}, "value": [1, "1"]}],
            },
        },
        "value": {"status": "success", "data": {"resultType": "scalar", "result": deep}},
    }
    # json.dumps of 100,000 levels would recurse too: build the text by hand
    text = json.dumps(docs[where], default=str) if depth < 500 else _deep_text(where, depth)
    _prometheus(200, "application/json", text.encode())


def _deep_text(where: str, depth: int) -> str:
    deep = "[" * depth + "0" + "]" * depth
    hole = {
        "top": "HOLE",
        "result": {"status": "success", "data": {"resultType": "vector", "result": "HOLE"}},
        "labels": {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": {"a": "HOLE"}, "value": [1, "1"]}],
            },
        },
        "value": {"status": "success", "data": {"resultType": "scalar", "result": "HOLE"}},
    }[where]
    return json.dumps(hole).replace('"HOLE"', deep)


def test_prometheus_huge_strings_give_short_errors() -> None:
    long = "x" * 1_000_000
    for doc in (
        {"status": "error", "errorType": long, "error": long},
        {"status": "success", "data": {"resultType": long, "result": []}},
        {"status": "success", "data": {"resultType": "scalar", "result": [1, long]}},
        {"status": "success", "data": {"resultType": "vector", "result": [long]}},
        {"status": "success", "data": {"resultType": "vector", "result": [{"value": long}]}},
    ):
        _prometheus(200, "application/json", _encode(doc))


# --- decision server -----------------------------------------------------------------------

DECISION_VALID = [
    {
        "apiVersion": DECISION_API_VERSION,
        "decisions": [{"namespace": "ns", "serviceId": "svc", "replicas": {"active": 15}}],
    },
    {
        "apiVersion": DECISION_API_VERSION,
        "decisions": [
            {"namespace": "a", "serviceId": "svc", "replicas": {"active": 1}},
            {"namespace": "b", "serviceId": "svc", "replicas": {"active": 2}},
            {"serviceId": "other", "replicas": {"active": 3}},
        ],
    },
    {"apiVersion": DECISION_API_VERSION, "decisions": []},
]


def _decision(status: int, content_type: str, body: bytes, namespace: str | None) -> None:
    count("fuzz:decision")
    try:
        active = parse_decision(status, content_type, body, service_id="svc", namespace=namespace)
    except Exception as exc:
        _check_error(exc, MetricError, "decision")
        return
    assert type(active) is int and 0 <= active <= INT32_MAX
    assert status == 200


@settings(max_examples=examples(600))
@given(
    STATUSES,
    CONTENT_TYPES,
    bodies(DECISION_VALID),
    st.sampled_from([None, "", "ns", "a"]),
)
def test_decision_reply_parses_or_is_a_metric_error(
    status: int, content_type: str, body: bytes, namespace: str | None
) -> None:
    _decision(status, content_type, body, namespace)


@pytest.mark.parametrize("depth", [10, 990, 10_000, 100_000])
@pytest.mark.parametrize("where", ["top", "decisions", "active", "object"])
def test_decision_deep_nesting_is_a_metric_error(depth: int, where: str) -> None:
    deep = "[" * depth + "0" + "]" * depth
    if where == "object":
        deep = '{"a":' * depth + "0" + "}" * depth
    hole = {
        "top": "HOLE",
        "object": "HOLE",
        "decisions": {"apiVersion": DECISION_API_VERSION, "decisions": "HOLE"},
        "active": {
            "apiVersion": DECISION_API_VERSION,
            "decisions": [{"serviceId": "svc", "replicas": {"active": "HOLE"}}],
        },
    }[where]
    text = json.dumps(hole).replace('"HOLE"', deep)
    _decision(200, "application/json", text.encode(), None)


def test_decision_huge_values_give_short_errors() -> None:
    long = "x" * 1_000_000
    for doc in (
        {"apiVersion": long},
        {"apiVersion": DECISION_API_VERSION, "decisions": [long]},
        {"apiVersion": DECISION_API_VERSION, "decisions": [{"serviceId": "svc", "replicas": long}]},
        {
            "apiVersion": DECISION_API_VERSION,
            "decisions": [{"serviceId": "svc", "replicas": {"active": long}}],
        },
        {
            "apiVersion": DECISION_API_VERSION,
            "decisions": [{"serviceId": "svc", "replicas": {"active": 10**4000}}],
        },
    ):
        _decision(200, "application/json", json.dumps(doc).encode(), None)
    _decision(200, "application/json", b'{"a": ' + b"1" * 5000 + b"}", None)


# --- LLMScaler spec ---------------------------------------------------------------------------

SCALER_VALID: list[dict[str, Any]] = [
    {
        "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
        "kind": "LLMScaler",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u", "generation": 3},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "serverAddress": "http://prometheus:9090",
            "serverHeaders": {"Authorization": "Bearer t"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "syncPeriodSeconds": 15,
            "retryPeriodSeconds": 10,
            "metrics": [{"name": "kv", "query": "avg(x)", "target": "0.8"}],
            "scaleDown": {
                "stabilizationWindowSeconds": 180,
                "maxStepReplicas": 1,
                "behavior": "CacheAware",
                "deletionCostQuery": "x * 100",
            },
            "preemption": {"enable": True, "priorityClass": "high"},
        },
        "status": {
            "currentReplicas": 2,
            "desiredReplicas": 3,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Scaling",
                    "message": "m",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    },
    {
        "apiVersion": "autoscaling.modelsphere.dev/v1alpha1",
        "kind": "LLMScaler",
        "metadata": {"name": "c"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
            "metricProvider": "Custom",
            "customProvider": {"serviceId": "svc", "namespace": "ns", "path": "/decisions"},
            "serverAddress": "http://decisions",
            "minReplicas": 0,
            "maxReplicas": 0,
        },
    },
]
# Every JSON field name the parser knows (the field metadata also drives the CRD), so a field
# added to the API is fuzzed without touching this file.
SPEC_KEYS = sorted(
    {
        meta.json
        for cls in api_types(LLMScalerSpec, LLMScalerStatus)
        for meta in field_metas(cls).values()
    }
)


def shaped(hint: Any) -> st.SearchStrategy[Any]:
    """Values of the API type ``hint``'s shape (its field names, lists where it has lists),
    each leaf and any field possibly replaced by an arbitrary value."""
    hint = unwrap_optional(hint)
    if attrs.has(hint):
        hints = type_hints(hint)
        fields = {meta.json: shaped(hints[name]) for name, meta in field_metas(hint).items()}
        return st.fixed_dictionaries({}, optional=fields) | SMALL_JSON
    if typing.get_origin(hint) is tuple:
        return st.lists(shaped(typing.get_args(hint)[0]), max_size=3) | SMALL_JSON
    return SMALL_JSON


@st.composite
def scaler_objects(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(SCALER_VALID)))
    choice = draw(st.integers(0, 5))
    if choice >= 4:
        # the spec's own shape, every field and list element possibly wrong
        shape = draw(shaped(LLMScalerSpec))
        doc["spec"] = {**doc["spec"], **shape} if isinstance(shape, dict) else shape
        return doc
    if choice == 0:
        return draw(mutated(doc))
    if choice == 1:
        # a known field name anywhere in the spec, holding anything
        spec = doc["spec"]
        for _ in range(draw(st.integers(1, 4))):
            spec[draw(st.sampled_from(SPEC_KEYS))] = draw(JSON)
        return doc
    if choice == 2:
        # a list of objects of known fields (metrics, serverHeadersFrom, conditions, ...)
        key = draw(st.sampled_from(SPEC_KEYS))
        item = st.dictionaries(st.sampled_from(SPEC_KEYS), JSON, max_size=4)
        doc["spec"][key] = draw(st.lists(item, max_size=3) | item)
        return doc
    return draw(JSON)


def _spec(obj: Any) -> None:
    count("fuzz:spec")
    try:
        scaler = LLMScaler.from_dict(obj)
    except Exception as exc:
        _check_error(exc, SpecError, "spec")
        return
    assert isinstance(scaler, LLMScaler)
    assert 0 <= scaler.spec.min_replicas <= scaler.spec.max_replicas <= INT32_MAX
    # what parses re-encodes to an object that parses to the same value
    assert LLMScaler.from_dict(scaler.to_dict()) == scaler


@settings(max_examples=examples(800))
@given(scaler_objects())
def test_llmscaler_parses_or_is_a_spec_error(obj: Any) -> None:
    _spec(obj)


@pytest.mark.parametrize("depth", [10, 990, 10_000])
@pytest.mark.parametrize("key", SPEC_KEYS)
def test_llmscaler_deep_nesting_in_any_field_is_a_spec_error(depth: int, key: str) -> None:
    for where in ("spec", "metadata", "top"):
        obj = copy.deepcopy(SCALER_VALID[0])
        if where == "top":
            obj[key] = nested(depth)
        else:
            obj[where][key] = nested(depth)
        _spec(obj)


def test_llmscaler_huge_values_give_short_errors() -> None:
    long = "x" * 1_000_000
    for key in SPEC_KEYS:
        for value in (long, 10**4000, -(10**4000), [long], {long: long}):
            obj = copy.deepcopy(SCALER_VALID[0])
            obj["spec"][key] = value
            _spec(obj)
    for value in (long, 10**4000, nested(10_000)):
        _spec({"apiVersion": value, "kind": value, "metadata": {"name": value}})
