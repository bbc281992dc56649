"""One writer per target: when several LLMScalers point at one workload, only the oldest acts.

Two controllers writing one spec.replicas make the fleet oscillate, and neither notices. The
rule is deterministic so every replica of the operator (and every reconcile) agrees without
coordination: the scaler created first wins, ties broken by name. The others report the
conflict and write nothing. Advisory scalers (``scaling.advisory``) write nothing either, so
they take no part: they are not checked, and they are not among the rivals a resolver sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

__all__ = [
    "TARGET_INDEX",
    "ConflictResolver",
    "OldestScalerWins",
    "Ownership",
    "target_index",
    "target_key",
]

TARGET_INDEX = "llmscaler.target"
"""Name of the informer index that groups scalers by the workload they point at."""


@attrs.frozen
class Ownership:
    """``owner`` False means another scaler (``other``) controls the target."""

    owner: bool
    other: str | None = None


class ConflictResolver(Protocol):
    """Decides whether ``scaler`` may write its target, given the other scalers of its
    namespace that write (advisory ones are already left out)."""

    def resolve(
        self, scaler: Mapping[str, Any], others: Iterable[Mapping[str, Any]]
    ) -> Ownership: ...


def target_key(obj: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """``(group, kind, name)`` of a raw scaler's target; the version does not change identity."""
    ref = (obj.get("spec") or {}).get("targetRef")
    if not isinstance(ref, Mapping):
        return None
    api_version = str(ref.get("apiVersion", ""))
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    kind, name = ref.get("kind"), ref.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    return group, kind, name


def target_index(obj: Mapping[str, Any]) -> list[str]:
    """Index function for :data:`TARGET_INDEX`: ``namespace/group/kind/name`` of the target.

    With it the one-writer check reads only the scalers that share a target instead of every
    scaler of the namespace, which would make a period of syncs quadratic in scalers.
    """
    key = target_key(obj)
    if key is None:
        return []
    namespace = str((obj.get("metadata") or {}).get("namespace", ""))
    return ["/".join((namespace, *key))]


def _age_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("creationTimestamp", "")), str(meta.get("name", ""))


@attrs.frozen
class OldestScalerWins:
    """The default rule (see module docstring)."""

    def resolve(self, scaler: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> Ownership:
        mine = target_key(scaler)
        meta = scaler.get("metadata") or {}
        if mine is None:
            return Ownership(True)
        rivals = [
            o
            for o in others
            if (o.get("metadata") or {}).get("uid") != meta.get("uid")
            and (o.get("metadata") or {}).get("namespace") == meta.get("namespace")
            and not (o.get("metadata") or {}).get("deletionTimestamp")
            and target_key(o) == mine
        ]
        if not rivals:
            return Ownership(True)
        oldest = min(rivals, key=_age_key)
        if _age_key(oldest) < _age_key(scaler):
            return Ownership(False, str((oldest.get("metadata") or {}).get("name", "")))
        return Ownership(True)
