"""The write step: pod-deletion-cost hints first, then server-side apply of spec.replicas.

The hints must be in place before the ReplicaSet shrinks, or it picks victims without them.
The replica count is written with server-side apply of ``spec.replicas`` alone, under a stable
field manager and with force, so this operator owns exactly that field whatever Helm or
``kubectl apply`` wrote before, and touches nothing else of the workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import attrs
import structlog

from llmscaler_runtime.kube.errors import ApiError, NotFound
from llmscaler_runtime.scaling.ports import WriteClient
from llmscaler_runtime.scaling.types import DELETION_COST_ANNOTATION, PodCost, TargetView

__all__ = [
    "FIELD_MANAGER",
    "ReplicaWriter",
    "SsaReplicaWriter",
    "WriteClient",
    "WriteResult",
    "apply_body",
    "cost_patch",
]

FIELD_MANAGER = "llmscaler-operator"
_log = structlog.get_logger("llmscaler.scaling.write")


@attrs.frozen
class WriteResult:
    """Hints that could not be written (the scale still happened; they are only hints)."""

    cost_failures: tuple[str, ...] = ()


class ReplicaWriter(Protocol):
    """Writes one scale action to the cluster."""

    def write(
        self, client: WriteClient, target: TargetView, replicas: int, costs: Sequence[PodCost]
    ) -> WriteResult: ...


def apply_body(target: TargetView, replicas: int) -> dict[str, Any]:
    """The apply configuration: identity plus spec.replicas, nothing else."""
    return {
        "apiVersion": target.api_version,
        "kind": target.kind,
        "metadata": {"name": target.name, "namespace": target.namespace},
        "spec": {"replicas": replicas},
    }


def cost_patch(cost: int | None) -> dict[str, Any]:
    """A JSON merge patch setting (or, for None, removing) the deletion-cost annotation."""
    value = None if cost is None else str(cost)
    return {"metadata": {"annotations": {DELETION_COST_ANNOTATION: value}}}


@attrs.frozen
class SsaReplicaWriter:
    """The default writer (see module docstring)."""

    field_manager: str = FIELD_MANAGER

    def write(
        self, client: WriteClient, target: TargetView, replicas: int, costs: Sequence[PodCost]
    ) -> WriteResult:
        failures: list[str] = []
        for change in costs:
            try:
                client.patch(
                    "v1",
                    "Pod",
                    change.pod,
                    cost_patch(change.cost),
                    target.namespace,
                    patch_type="merge",
                )
            except NotFound:
                continue  # already gone: nothing left to rank
            except ApiError as exc:
                failures.append(f"pod {change.pod}: {exc}")
                _log.warning("deletion cost not written", pod=change.pod, error=str(exc))
        client.apply(apply_body(target, replicas), field_manager=self.field_manager, force=True)
        return WriteResult(tuple(failures))
