"""Per-scaler memory: parse once per resourceVersion, forget on delete and re-create."""

from __future__ import annotations

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_runtime.scaling.memory import ScalerMemory
from llmscaler_runtime.scaling.types import History

from .fakes import scaler_obj


def _obj(rv: str, uid: str = "u1") -> dict[str, object]:
    obj = scaler_obj(uid=uid)
    obj["metadata"]["resourceVersion"] = rv
    return obj


def test_a_scaler_is_parsed_once_per_resource_version() -> None:
    m = ScalerMemory()
    first = m.parse(_obj("1"), "u1")
    assert m.parse(_obj("1"), "u1") is first
    assert m.parse(_obj("2"), "u1") is not first


def test_the_status_counts_as_unchanged_only_when_it_re_encodes_to_the_raw_one() -> None:
    m = ScalerMemory()
    scaler = m.parse(_obj("1"), "u1")
    assert m.status_unchanged(scaler, scaler.status)
    odd = _obj("2")
    odd["status"] = {"unknownField": 1}  # parses to an empty status, but the raw one differs
    scaler2 = m.parse(odd, "u1")
    assert not m.status_unchanged(scaler2, scaler2.status)


def test_deleting_or_re_creating_a_scaler_drops_its_history_and_parse() -> None:
    m = ScalerMemory()
    m.seen("ns/s", "u1")
    first = m.parse(_obj("1"), "u1")
    m.history.put("u1", History(samples=((1.0, 3),)))
    m.seen("ns/s", "u2")  # re-created under the same name
    assert m.history.get("u1") is None
    assert m.parse(_obj("1"), "u1") is not first
    assert m.gone("ns/s") and not m.gone("ns/s")


def test_the_effective_scaler_is_the_same_object_while_headers_do_not_change() -> None:
    m = ScalerMemory()
    scaler = LLMScaler.from_dict(scaler_obj())
    a = m.with_headers(scaler, {"Authorization": "Bearer 1"})
    assert a.spec.server_headers == {"Authorization": "Bearer 1"}
    assert m.with_headers(scaler, {"Authorization": "Bearer 1"}) is a
    assert m.with_headers(scaler, {"Authorization": "Bearer 2"}) is not a
