"""Table tests for the predicates and their combinators."""

from __future__ import annotations

from typing import Any

import pytest

from llmscaler_runtime.controller import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    ResourceVersionChangedPredicate,
    and_,
    label_selector_predicate,
    new_predicate_filter,
    new_predicate_funcs,
    not_,
    or_,
)


def obj(
    gen: int | None = 1,
    rv: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "a", "namespace": "ns", "resourceVersion": rv}
    if gen is not None:
        meta["generation"] = gen
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta}


UPDATE_CASES: list[tuple[str, Predicate, Any, Any, bool]] = [
    ("gen changed", GenerationChangedPredicate(), obj(1), obj(2), True),
    ("gen same (status write)", GenerationChangedPredicate(), obj(1, "1"), obj(1, "2"), False),
    ("gen old missing", GenerationChangedPredicate(), None, obj(2), False),
    ("gen new missing", GenerationChangedPredicate(), obj(1), None, False),
    ("gen absent on both", GenerationChangedPredicate(), obj(None), obj(None, "2"), False),
    ("rv changed", ResourceVersionChangedPredicate(), obj(rv="1"), obj(rv="2"), True),
    ("rv same (resync)", ResourceVersionChangedPredicate(), obj(rv="1"), obj(rv="1"), False),
    ("rv old missing", ResourceVersionChangedPredicate(), None, obj(), False),
    (
        "labels changed",
        LabelChangedPredicate(),
        obj(labels={"a": "1"}),
        obj(labels={"a": "2"}),
        True,
    ),
    ("labels same", LabelChangedPredicate(), obj(labels={"a": "1"}), obj(labels={"a": "1"}), False),
    ("labels absent vs empty", LabelChangedPredicate(), obj(), obj(labels={}), False),
    ("labels added", LabelChangedPredicate(), obj(), obj(labels={"a": "1"}), True),
    ("labels new missing", LabelChangedPredicate(), obj(), None, False),
    (
        "annotations changed",
        AnnotationChangedPredicate(),
        obj(annotations={"pause": "false"}),
        obj(annotations={"pause": "true"}),
        True,
    ),
    ("annotations same", AnnotationChangedPredicate(), obj(annotations={}), obj(), False),
    ("annotations old missing", AnnotationChangedPredicate(), None, obj(), False),
    (
        "watched annotation added",
        AnnotationChangedPredicate(keys=["pause"]),
        obj(annotations={"other": "x"}),
        obj(annotations={"other": "x", "pause": "true"}),
        True,
    ),
    (
        "watched annotation removed",
        AnnotationChangedPredicate(keys=["x", "pause"]),
        obj(annotations={"pause": "true"}),
        obj(),
        True,
    ),
    (
        "only an unwatched annotation changed",
        AnnotationChangedPredicate(keys=["pause"]),
        obj(annotations={"pause": "true", "last-applied": "1"}),
        obj(annotations={"pause": "true", "last-applied": "2"}),
        False,
    ),
]


@pytest.mark.parametrize(
    ("predicate", "old", "new", "expected"),
    [c[1:] for c in UPDATE_CASES],
    ids=[c[0] for c in UPDATE_CASES],
)
def test_update_predicates(predicate: Predicate, old: Any, new: Any, expected: bool) -> None:
    assert predicate.update(old, new) is expected


@pytest.mark.parametrize(
    "predicate",
    [
        GenerationChangedPredicate(),
        ResourceVersionChangedPredicate(),
        LabelChangedPredicate(),
        AnnotationChangedPredicate(),
    ],
)
def test_change_predicates_pass_create_delete_generic(predicate: Predicate) -> None:
    assert isinstance(predicate, Predicate)
    o = obj()
    assert predicate.create(o) and predicate.delete(o) and predicate.generic(o)


def test_label_selector_predicate_filters_every_event_on_the_new_object() -> None:
    p = label_selector_predicate("app=llm,tier in (gpu,cpu)")
    yes, no = obj(labels={"app": "llm", "tier": "gpu"}), obj(labels={"app": "web"})
    assert p.create(yes) and not p.create(no)
    assert p.delete(yes) and not p.delete(no)
    assert p.generic(yes) and not p.generic(no)
    assert p.update(no, yes) and not p.update(yes, no)
    assert not p.update(yes, None)
    structured = label_selector_predicate({"matchLabels": {"app": "llm"}})
    assert structured.create(yes) and not structured.create(no)


def test_label_selector_predicate_rejects_bad_selector_at_setup() -> None:
    with pytest.raises(ValueError):
        label_selector_predicate("app in (a")


def test_funcs_default_to_pass_and_use_given_functions() -> None:
    p = new_predicate_funcs(update=lambda old, new: False)
    o = obj()
    assert p.create(o) and p.delete(o) and p.generic(o)
    assert not p.update(o, o)
    f = new_predicate_filter(lambda x: x["metadata"]["name"] == "a")
    assert f.create(o) and f.update(None, o) and not f.update(o, None)


T = new_predicate_funcs()
F = new_predicate_funcs(
    create=lambda o: False,
    update=lambda a, b: False,
    delete=lambda o: False,
    generic=lambda o: False,
)


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        (and_(T, T), True),
        (and_(T, F), False),
        (and_(), True),
        (or_(F, T), True),
        (or_(F, F), False),
        (or_(), False),
        (not_(T), False),
        (not_(F), True),
        (not_(and_(T, F)), True),
    ],
)
def test_combinators_apply_to_every_event_kind(predicate: Predicate, expected: bool) -> None:
    o = obj()
    assert predicate.create(o) is expected
    assert predicate.update(o, o) is expected
    assert predicate.delete(o) is expected
    assert predicate.generic(o) is expected


def test_generation_or_annotation_lets_a_pause_annotation_through() -> None:
    p = or_(GenerationChangedPredicate(), AnnotationChangedPredicate())
    assert p.update(obj(1, annotations={}), obj(1, annotations={"paused": "true"}))
    assert not p.update(obj(1, "1"), obj(1, "2"))
