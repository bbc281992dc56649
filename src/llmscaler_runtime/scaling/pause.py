"""Pausing a scaler by annotation, with KEDA's semantics (``autoscaling.keda.sh/paused`` and
``autoscaling.keda.sh/paused-replicas`` on a ScaledObject).

Maintenance, an incident or a load test needs the autoscaler out of the way without deleting
it (which would lose its status and, for a Helm-managed object, fight the next upgrade). An
annotation, not a spec field, because it is an operator's temporary act rather than part of
the desired policy: ``kubectl annotate`` needs no edit of the manifest in Git, and removing the
annotation resumes exactly the policy that was there.

The rules, read from KEDA's ``NeedToBePausedByAnnotation``:

* ``paused-replicas`` takes precedence over ``paused`` when both are set;
* ``paused`` is read as Go's ``strconv.ParseBool`` reads it: ``"true"``, ``"1"``, ``"t"``...
  pause, ``"false"``, ``"0"``, ``"f"``... do not, and any other value pauses too (whoever wrote
  the annotation meant to pause; guessing "not paused" would scale a fleet under maintenance);
* ``paused-replicas: "N"`` sets the target to N once, then holds it there: a later edit of the
  target by hand is left alone, as KEDA leaves it.

One difference from KEDA, on purpose: N must be a whole number in ``[0, maxReplicas]``. KEDA
takes any int32; here ``maxReplicas`` is the bound on what a scaler may spend on GPUs, and a
typo (``"40"`` for ``"4"``) should not bypass it. Below ``minReplicas`` is allowed, since
parking a model at 0 for maintenance is the main use. A CRD cannot validate an annotation, so
a bad value is reported (a condition and a Warning Event) and the scaler is held as paused:
it writes nothing, which is the last good behaviour that cannot hurt.

Everything here is pure: the reconciler asks :func:`pause_of` first thing in a sync.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScalerStatus
from llmscaler_runtime.scaling.reasons import ConditionReason
from llmscaler_runtime.scaling.status import ABLE_TO_SCALE

__all__ = [
    "PAUSED_ANNOTATION",
    "PAUSED_REPLICAS_ANNOTATION",
    "PAUSE_ANNOTATIONS",
    "InvalidPause",
    "Pause",
    "pause_of",
]

PAUSED_ANNOTATION = "autoscaling.modelsphere.dev/paused"
PAUSED_REPLICAS_ANNOTATION = "autoscaling.modelsphere.dev/paused-replicas"
#: The annotations whose change must wake the scaler (the watch predicate lets them through).
PAUSE_ANNOTATIONS = (PAUSED_ANNOTATION, PAUSED_REPLICAS_ANNOTATION)

# strconv.ParseBool's spellings
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_WHOLE = re.compile(r"^[0-9]{1,10}$")
_SHOWN = 64  # an annotation value is quoted in messages up to this many characters


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")


@attrs.frozen
class Pause:
    """The scaler is paused. ``replicas`` None holds the target where it is; a number is the
    paused-replicas count, set once and then held. ``note`` says how a value was read when it
    was not plainly ``"true"``."""

    replicas: int | None = None
    note: str = ""

    def already_set(self, status: LLMScalerStatus, spec_replicas: int) -> bool:
        """True once the paused-replicas count needs no (more) writing: the target has it, or
        the status records that this scaler set it (reason ``PausedReplicas`` with
        desiredReplicas N). The status is the memory of "once", so a restart or a new leader
        does not write N again over a hand edit made after the pause began."""
        if self.replicas is None or spec_replicas == self.replicas:
            return True
        able = status.condition(ABLE_TO_SCALE)
        return (
            able is not None
            and able.reason == ConditionReason.PAUSED_REPLICAS
            and status.desired_replicas == self.replicas
        )


@attrs.frozen
class InvalidPause:
    """A paused-replicas value that cannot be used; ``message`` says why and what to do."""

    message: str


def pause_of(obj: Mapping[str, Any], max_replicas: int) -> Pause | InvalidPause | None:
    """How the raw scaler ``obj`` is paused, if it is (see the module docstring)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if PAUSED_REPLICAS_ANNOTATION in annotations:
        raw = str(annotations[PAUSED_REPLICAS_ANNOTATION])
        text = raw.strip()
        if not _WHOLE.match(text) or int(text) > max_replicas:
            return InvalidPause(
                f"The annotation {PAUSED_REPLICAS_ANNOTATION}={_shown(raw)} is not a whole "
                f"number of replicas in [0, maxReplicas ({max_replicas})]; the scaler is held "
                "as paused and writes nothing until the annotation is fixed or removed."
            )
        return Pause(int(text))
    if PAUSED_ANNOTATION not in annotations:
        return None
    value = str(annotations[PAUSED_ANNOTATION])
    if value in _FALSE:
        return None
    if value in _TRUE:
        return Pause()
    return Pause(
        note=f" (its value {_shown(value)} is not a boolean: read as paused, as KEDA does)"
    )
