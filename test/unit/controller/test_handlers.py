"""Event -> Request mapping: own key, owner references, tombstones, faulty mappers."""

from __future__ import annotations

from typing import Any

import attrs

from llmscaler_runtime.controller import (
    EnqueueHandler,
    GenerationChangedPredicate,
    Request,
    enqueue_for_object,
    enqueue_for_owner,
    unwrap_tombstone,
)


def owned(ns: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "child", "namespace": ns, "ownerReferences": list(refs)}}


def ref(kind: str, name: str, api: str = "autoscaling.modelsphere.dev/v1alpha1", **kw: Any) -> dict:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": "u", **kw}


MAPPER = enqueue_for_owner("autoscaling.modelsphere.dev/v1alpha1", "LLMScaler")


def test_owner_mapper_follows_only_the_controller_reference_of_the_for_kind() -> None:
    obj = owned(
        "ns",
        ref("LLMScaler", "not-controller"),
        ref("LLMScaler", "boss", controller=True),
        ref("Deployment", "other", api="apps/v1", controller=True),
    )
    assert list(MAPPER(obj)) == [Request("ns", "boss")]


def test_owner_mapper_matches_group_not_version() -> None:
    obj = owned(
        "ns", ref("LLMScaler", "boss", api="autoscaling.modelsphere.dev/v1", controller=True)
    )
    assert list(MAPPER(obj)) == [Request("ns", "boss")]
    wrong_group = owned("ns", ref("LLMScaler", "x", api="other.dev/v1alpha1", controller=True))
    assert list(MAPPER(wrong_group)) == []


def test_owner_mapper_variants() -> None:
    obj = owned("ns", ref("LLMScaler", "a"), ref("LLMScaler", "b", controller=False))
    any_owner = enqueue_for_owner(
        "autoscaling.modelsphere.dev/v1alpha1", "LLMScaler", only_controller=False
    )
    assert list(any_owner(obj)) == [Request("ns", "a"), Request("ns", "b")]
    node_owner = enqueue_for_owner("v1", "Node", cluster_scoped_owner=True)
    pod = owned("ns", ref("Node", "n1", api="v1", controller=True))
    assert list(node_owner(pod)) == [Request("", "n1")]
    assert list(MAPPER({"metadata": {"name": "x"}})) == []


def test_enqueue_for_object() -> None:
    assert list(enqueue_for_object({"metadata": {"namespace": "ns", "name": "a"}})) == [
        Request("ns", "a")
    ]


@attrs.frozen
class Tombstone:
    key: str
    obj: dict[str, Any] | None


def test_unwrap_tombstone() -> None:
    o = {"metadata": {"name": "a"}}
    assert unwrap_tombstone(o) is o
    assert unwrap_tombstone(Tombstone("a", o)) is o
    assert unwrap_tombstone(Tombstone("a", None)) is None


def make(predicates: Any = (), mapper: Any = enqueue_for_object) -> tuple[EnqueueHandler, list]:
    added: list[Request] = []
    return EnqueueHandler("c", added.append, mapper, predicates), added


def o(name: str, gen: int = 1, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "generation": gen}}


def test_handler_applies_predicates_per_event_kind() -> None:
    h, added = make([GenerationChangedPredicate()])
    h.on_add(o("a"))
    h.on_update(o("a", 1), o("a", 1))
    h.on_update(o("a", 1), o("a", 2))
    h.on_delete(Tombstone("ns/b", o("b")))
    h.on_delete(Tombstone("ns/c", None))
    h.on_generic(o("d"))
    assert added == [Request("ns", "a"), Request("ns", "a"), Request("ns", "b"), Request("ns", "d")]


def test_update_maps_old_and_new_and_dedupes() -> None:
    h, added = make(mapper=MAPPER)
    old = owned("ns", ref("LLMScaler", "old-owner", controller=True))
    new = owned("ns", ref("LLMScaler", "new-owner", controller=True))
    h.on_update(old, new)
    assert added == [Request("ns", "old-owner"), Request("ns", "new-owner")]
    added.clear()
    h.on_update(new, new)
    assert added == [Request("ns", "new-owner")]


def test_faulty_mapper_or_predicate_drops_the_event_without_raising() -> None:
    def boom(obj: dict) -> list[Request]:
        raise RuntimeError("mapper bug")

    h, added = make(mapper=boom)
    h.on_add(o("a"))
    assert added == []

    h2, added2 = make(mapper=lambda obj: ["not-a-request", Request("ns", "ok")])
    h2.on_add(o("a"))
    assert added2 == [Request("ns", "ok")]

    class BadPredicate:
        def create(self, obj: dict) -> bool:
            raise KeyError("x")

        def update(self, old: Any, new: Any) -> bool:
            return True

        def delete(self, obj: dict) -> bool:
            return True

        def generic(self, obj: dict) -> bool:
            return True

    h3, added3 = make([BadPredicate()])
    h3.on_add(o("a"))
    h3.on_update(o("a"), o("a"))
    assert added3 == [Request("ns", "a")]
