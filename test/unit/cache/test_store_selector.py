from __future__ import annotations

import threading
from typing import Any

import pytest

from llmscaler_runtime.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Store,
    format_selector,
    object_key,
    parse_selector,
    strip_managed_fields,
)

from .fakes import obj


def by_node(o: dict[str, Any]) -> list[str]:
    node = (o.get("spec") or {}).get("nodeName")
    return [node] if node else []


def pod(name: str, ns: str, node: str | None, rv: str = "1") -> dict[str, Any]:
    o = obj(name, rv, ns)
    o["spec"] = {"nodeName": node} if node else {}
    return o


def test_object_key() -> None:
    assert object_key(obj("a", "1", "ns")) == "ns/a"
    assert object_key(obj("a", "1", None)) == "a"
    assert object_key(DeletedFinalStateUnknown("x/y", {})) == "x/y"
    with pytest.raises(ValueError):
        object_key({"metadata": {}})
    with pytest.raises(ValueError):
        object_key({})


def test_crud_and_namespace_index() -> None:
    s = Store()
    s.add(obj("a", "1", "n1"))
    s.add(obj("b", "1", "n2"))
    s.add(obj("c", "1", None))
    assert [o["metadata"]["name"] for o in s.by_index(NAMESPACE_INDEX, "n1")] == ["a"]
    assert [o["metadata"]["name"] for o in s.by_index(NAMESPACE_INDEX, "")] == ["c"]
    s.update(obj("a", "2", "n1"))
    assert s.get_by_key("n1", "a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    assert s.get_by_key(None, "c") is not None
    s.delete(obj("a", "2", "n1"))
    s.delete(obj("zzz", "1", "n1"))  # absent: ignored
    assert s.by_index(NAMESPACE_INDEX, "n1") == []
    assert sorted(s.keys()) == ["c", "n2/b"] and len(s) == 2 and "c" in s


def test_custom_index_follows_updates() -> None:
    s = Store({"node": by_node})
    s.add(pod("p1", "n", "node-a"))
    s.add(pod("p2", "n", "node-a"))
    s.add(pod("p3", "n", None))
    assert s.index_keys("node", "node-a") == ["n/p1", "n/p2"]
    s.update(pod("p1", "n", "node-b", rv="2"))
    assert s.index_keys("node", "node-a") == ["n/p2"]
    assert [o["metadata"]["name"] for o in s.by_index("node", "node-b")] == ["p1"]
    s.delete(pod("p2", "n", "node-a"))
    assert s.index_keys("node", "node-a") == []
    with pytest.raises(KeyError):
        s.by_index("nope", "x")


def test_add_indexers_later_indexes_existing_and_rejects_duplicates() -> None:
    s = Store()
    s.add(pod("p1", "n", "node-a"))
    s.add_indexers({"node": by_node})
    assert s.index_keys("node", "node-a") == ["n/p1"]
    with pytest.raises(ValueError):
        s.add_indexers({"node": by_node})


def test_failing_index_func_does_not_break_store() -> None:
    def bad(o: dict[str, Any]) -> list[str]:
        raise RuntimeError("bug")

    s = Store({"bad": bad})
    s.add(obj("a", "1"))
    assert s.get("default/a") is not None and s.index_keys("bad", "x") == []


def test_replace_rebuilds_indexes() -> None:
    s = Store({"node": by_node})
    s.add(pod("old", "n", "node-a"))
    s.replace([pod("new", "m", "node-b")], "77")
    assert s.keys() == ["m/new"] and s.resource_version == "77"
    assert s.index_keys("node", "node-a") == [] and s.index_keys("node", "node-b") == ["m/new"]
    assert s.index_keys(NAMESPACE_INDEX, "n") == []


def test_concurrent_writers_and_readers() -> None:
    s = Store({"node": by_node})
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for j in range(300):
                s.add(pod(f"p{i}-{j % 20}", "n", f"node-{j % 3}", rv=str(j)))
                if j % 7 == 0:
                    s.delete(pod(f"p{i}-{j % 20}", "n", None))
        except BaseException as e:
            errors.append(e)

    def reader() -> None:
        try:
            for _ in range(300):
                for o in s.by_index("node", "node-1"):
                    assert o["spec"]["nodeName"] == "node-1"
                s.list()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []
    # every index entry points at a stored object with that value
    for key in s.index_keys("node", "node-2"):
        assert s.get(key)["spec"]["nodeName"] == "node-2"  # type: ignore[index]


def test_strip_managed_fields_copies() -> None:
    o = obj("a", "1")
    o["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    out = strip_managed_fields(o)
    assert "managedFields" not in out["metadata"] and "managedFields" in o["metadata"]
    plain = obj("b", "1")
    assert strip_managed_fields(plain) is plain


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app!=web", {"app": "web"}, False),
        ("tier in (a, b),app", {"tier": "b", "app": "x"}, True),
        ("tier in (a,b)", {"tier": "c"}, False),
        ("tier notin (a,b)", {}, True),
        ("!canary", {"canary": "1"}, False),
        ("!canary,app=web", {"app": "web"}, True),
        ("example.com/role=x", {"example.com/role": "x"}, True),
        ({"app": "web"}, {"app": "web", "x": "y"}, True),
        (
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
        ),
        (
            {"matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["x"]}]},
            {"b": "y"},
            True,
        ),
    ],
)
def test_selector_matching(selector: Any, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["app=", "=x", "a in b", "a in (b", "a,,b", "a b", "app=we b"])
def test_selector_errors_are_clear(bad: str) -> None:
    if bad == "app=":
        # empty value is legal in Kubernetes ("app=" matches app with empty value)
        assert parse_selector(bad).matches({"app": ""})
        return
    with pytest.raises(ValueError):
        parse_selector(bad)


def test_selector_object_form_errors() -> None:
    with pytest.raises(ValueError):
        parse_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]})
    with pytest.raises(ValueError):
        parse_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})


# matchLabels out of order, expressions in an order that is not sorted, values unsorted
_STRUCTURED = {
    "matchExpressions": [
        {"key": "old", "operator": "DoesNotExist"},
        {"key": "zone", "operator": "In", "values": ["b", "a"]},
        {"key": "gpu", "operator": "Exists"},
        {"key": "canary", "operator": "NotIn", "values": ["yes", "maybe"]},
    ],
    "matchLabels": {"tier": "llm", "app": "web"},
}


def test_format_selector_is_stable_text() -> None:
    # labels sorted first, expressions as given, each expression's values sorted
    assert format_selector(_STRUCTURED) == (
        "app=web,tier=llm,!old,zone in (a,b),gpu,canary notin (maybe,yes)"
    )
    assert format_selector(None) == "" and format_selector({}) == ""
    assert format_selector({"matchLabels": {}, "matchExpressions": []}) == ""


@pytest.mark.parametrize(
    "labels",
    [
        {"app": "web", "tier": "llm", "zone": "a", "gpu": "1"},
        {"app": "web", "tier": "llm", "zone": "c", "gpu": "1"},
        {"app": "web", "tier": "llm", "zone": "b", "gpu": "1", "canary": "yes"},
        {"app": "web", "tier": "llm", "zone": "b"},
        {"app": "web", "tier": "llm", "zone": "b", "gpu": "", "old": "x"},
        {"app": "db", "tier": "llm", "zone": "a", "gpu": "1"},
    ],
)
def test_format_selector_selects_what_the_structured_form_selects(labels: dict[str, str]) -> None:
    text = format_selector(_STRUCTURED)
    assert parse_selector(text).matches(labels) is parse_selector(_STRUCTURED).matches(labels)


def test_format_selector_refuses_an_unknown_operator() -> None:
    # dropping the clause would widen the selection
    with pytest.raises(ValueError, match="Near"):
        format_selector({"matchExpressions": [{"key": "k", "operator": "Near"}]})
