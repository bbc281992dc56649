"""Label selector parsing and matching."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.controller import parse_selector

LABELS = {"app": "llm", "tier": "gpu", "env": "prod"}

CASES: list[tuple[str | dict[str, Any], bool]] = [
    ("", True),
    ("app=llm", True),
    ("app==llm", True),
    ("app=web", False),
    ("app!=web", True),
    ("missing!=x", True),
    ("app!=llm", False),
    ("tier in (gpu, cpu)", True),
    ("tier in (cpu)", False),
    ("tier notin (cpu)", True),
    ("missing notin (cpu)", True),
    ("missing in (cpu)", False),
    ("env", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("app=llm, tier in (gpu,cpu), !missing", True),
    ("app=llm,env=dev", False),
    ("tier in (gpu,)", True),  # a trailing comma adds the empty value, as in Kubernetes
    ("missing in (x,)", False),
    ({}, True),
    ({"matchLabels": {"app": "llm"}}, True),
    ({"matchLabels": {"app": "llm", "env": "dev"}}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}, False),
    ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, False),
]


@pytest.mark.parametrize(("selector", "expected"), CASES, ids=[repr(c[0]) for c in CASES])
def test_matching(selector: str | dict[str, Any], expected: bool) -> None:
    assert parse_selector(selector).matches(LABELS) is expected


def test_no_labels_match_only_negative_clauses() -> None:
    assert parse_selector("a!=b,!c").matches(None)
    assert not parse_selector("a").matches(None)


@pytest.mark.parametrize(
    "bad",
    [
        "app in (a",
        "app in a)",
        "app = = b",
        "app > 3",
        "=x",
        "app in (a b)",
        "app in ()",
        "app notin ( )",
        {"matchLabels": {"a": 1}},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"key": "a", "operator": "In"}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": ["nope"]},
        {"selector": {}},
    ],
    ids=repr,
)
def test_malformed_selectors_raise(bad: str | dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        parse_selector(bad)


def test_wrong_type_raises() -> None:
    with pytest.raises(TypeError):
        parse_selector(3)  # type: ignore[arg-type]


def test_controller_and_cache_share_one_selector_implementation() -> None:
    # One parser for predicates and cached lists: a selector means the same thing in both.
    from llmscaler_runtime import cache, controller

    assert controller.parse_selector is cache.parse_selector
    assert controller.LabelSelector is cache.LabelSelector
    assert controller.Requirement is cache.Requirement
    parsed = cache.parse_selector("app=llm")
    assert controller.parse_selector(parsed) is parsed


def test_plain_map_and_none() -> None:
    assert parse_selector(None).matches({"x": "y"})
    assert parse_selector({"app": "llm"}).matches(LABELS)
    assert not parse_selector({"app": "web"}).matches(LABELS)
    with pytest.raises(ValueError):
        parse_selector({"app": 1})
    with pytest.raises(ValueError):
        parse_selector({"matchLabels": {"app": "llm"}, "app": "llm"})
