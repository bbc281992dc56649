"""Status building (transition times, change detection) and the one-writer-per-target rule."""

from __future__ import annotations

from llmscaler_runtime.api.v1alpha1 import Condition, LLMScalerStatus
from llmscaler_runtime.scaling.conflicts import OldestScalerWins, target_key
from llmscaler_runtime.scaling.status import ConditionDraft, build_status, rfc3339, status_patch

from .fakes import scaler_obj

T0 = 1_800_000_000.0


def test_rfc3339_is_utc_whole_seconds() -> None:
    assert rfc3339(0.9) == "1970-01-01T00:00:00Z"


def test_transition_time_kept_when_status_unchanged_even_if_message_changes() -> None:
    old = build_status(
        LLMScalerStatus(),
        [ConditionDraft("Ready", True, "A", "one")],
        now=T0,
        generation=1,
        current_replicas=1,
        desired_replicas=1,
        scaled=False,
    )
    new = build_status(
        old,
        [ConditionDraft("Ready", True, "B", "two")],
        now=T0 + 60,
        generation=2,
        current_replicas=None,
        desired_replicas=None,
        scaled=False,
    )
    cond = new.condition("Ready")
    assert cond is not None
    assert (cond.reason, cond.last_transition_time) == ("B", rfc3339(T0))
    assert cond.observed_generation == 2
    assert (new.current_replicas, new.desired_replicas) == (1, 1)  # None keeps old figures
    flipped = build_status(
        new,
        [ConditionDraft("Ready", False, "C", "x")],
        now=T0 + 90,
        generation=2,
        current_replicas=None,
        desired_replicas=None,
        scaled=True,
    )
    assert flipped.condition("Ready").last_transition_time == rfc3339(T0 + 90)  # type: ignore[union-attr]
    assert flipped.last_scale_time == rfc3339(T0 + 90)


def test_conditions_of_other_types_are_kept_unless_dropped() -> None:
    keep = Condition("Preemption", "False", "NotImplemented", "m", "t")
    old = LLMScalerStatus(conditions=(keep,))
    assert (
        build_status(
            old,
            [],
            now=T0,
            generation=1,
            current_replicas=None,
            desired_replicas=None,
            scaled=False,
        ).condition("Preemption")
        == keep
    )
    dropped = build_status(
        old,
        [],
        now=T0,
        generation=1,
        current_replicas=None,
        desired_replicas=None,
        scaled=False,
        drop=("Preemption",),
    )
    assert dropped.condition("Preemption") is None


def test_status_patch_is_none_when_nothing_changed() -> None:
    status = LLMScalerStatus(current_replicas=2, desired_replicas=3, observed_generation=1)
    assert status_patch(status.to_dict(), status) is None
    assert status_patch(None, status) == {"status": status.to_dict()}


def test_status_patch_nulls_keys_that_disappeared() -> None:
    new = LLMScalerStatus(current_replicas=2)
    patch = status_patch({"currentReplicas": 2, "stray": 1}, new)
    assert patch == {"status": {"currentReplicas": 2, "stray": None}}


resolve = OldestScalerWins().resolve


def test_target_identity_ignores_the_version() -> None:
    a = scaler_obj(target=("apps/v1", "Deployment", "web"))
    b = scaler_obj(target=("apps/v1beta2", "Deployment", "web"))
    assert target_key(a) == target_key(b) == ("apps", "Deployment", "web")


def test_older_scaler_owns_the_target_and_younger_is_told_which() -> None:
    old = scaler_obj("old", created="2026-01-01T00:00:00Z")
    young = scaler_obj("young", created="2026-01-02T00:00:00Z")
    assert resolve(old, [old, young]).owner
    verdict = resolve(young, [old, young])
    assert (verdict.owner, verdict.other) == (False, "old")


def test_scalers_being_deleted_or_in_other_namespaces_do_not_compete() -> None:
    me = scaler_obj("me", created="2026-01-02T00:00:00Z")
    leaving = scaler_obj("leaving", created="2026-01-01T00:00:00Z")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-03T00:00:00Z"
    elsewhere = scaler_obj("far", namespace="other", created="2026-01-01T00:00:00Z")
    assert resolve(me, [me, leaving, elsewhere]).owner
