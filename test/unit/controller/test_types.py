"""Request/Result value rules."""

from __future__ import annotations

import pytest

from llmscaler_runtime.controller import Reconciler, Request, Result
from test.unit.controller.fakes import ScriptedReconciler


def test_request_string_and_equality() -> None:
    assert str(Request("ns", "a")) == "ns/a"
    assert str(Request("", "node-1")) == "node-1"
    assert Request("ns", "a") == Request("ns", "a")
    assert len({Request("ns", "a"), Request("ns", "a"), Request("ns", "b")}) == 2


def test_request_from_object() -> None:
    obj = {"metadata": {"namespace": "ns", "name": "a"}}
    assert Request.from_object(obj) == Request("ns", "a")
    assert Request.from_object({"metadata": {"name": "c"}}) == Request("", "c")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        Request.from_object({"metadata": {}})


def test_request_rejects_bad_values() -> None:
    with pytest.raises(ValueError):
        Request("ns", "")
    with pytest.raises(TypeError):
        Request("ns", 3)  # type: ignore[arg-type]


def test_result_rules() -> None:
    assert Result().is_zero()
    assert not Result(requeue=True).is_zero()
    assert not Result(requeue_after=1.0).is_zero()
    assert Result(requeue_after=0).is_zero()
    with pytest.raises(ValueError, match="requeue_after"):
        Result(requeue_after=-1)


def test_reconciler_protocol_is_structural() -> None:
    assert isinstance(ScriptedReconciler(), Reconciler)
