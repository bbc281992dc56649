"""bench/results.json bookkeeping: records merge across runs, and the reproduce line lists only
the commands whose figures are still shown."""

from __future__ import annotations

from typing import Any

from bench import run


def _rec(
    controller: str, n: int, command: str | None, scenario: str = "capacity"
) -> dict[str, Any]:
    r: dict[str, Any] = {"scenario": scenario, "controller": controller, "n": n}
    if command is not None:
        r["command"] = command
    return r


def test_a_new_record_replaces_the_old_one_of_the_same_scenario_controller_and_size() -> None:
    old = [
        _rec("llmscaler", 1000, "a"),
        _rec("kopf", 1000, "a"),
        _rec("llmscaler", 1000, "a", "co"),
    ]
    merged = run.merge(old, [_rec("llmscaler", 1000, "b")])
    by_key = {(r["scenario"], r["controller"], r["n"]): r["command"] for r in merged}
    assert by_key == {
        ("capacity", "llmscaler", 1000): "b",
        ("capacity", "kopf", 1000): "a",
        ("co", "llmscaler", 1000): "a",
    }


def test_commands_whose_records_were_all_replaced_are_not_listed() -> None:
    records = run.merge(
        [_rec("llmscaler", 1000, "old full run"), _rec("kopf", 5000, "kopf only")],
        [_rec("llmscaler", 1000, "new full run"), _rec("llmscaler", 100, "new full run")],
    )
    assert run.contributing_commands(records, "micro") == ["new full run", "kopf only", "micro"]
    assert run.contributing_commands([*records, _rec("x", 1, None)], None) == [
        "new full run",
        "kopf only",
    ]
