"""Every reason the scaling pipeline writes: condition reasons and Event reasons, as enums.

Reasons are an API: alerts, dashboards and runbooks match on them, and the README documents
each one (``test/unit/test_docs.py`` checks the two lists against each other both ways). As
``StrEnum`` members they are plain strings on the wire, and a typo is a type error instead of
a new reason nobody documented.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ConditionReason", "EventReason"]


class ConditionReason(StrEnum):
    """The ``reason`` of a condition in ``status.conditions``."""

    # AbleToScale
    SUCCEEDED_RESCALE = "SucceededRescale"
    READY_FOR_NEW_SCALE = "ReadyForNewScale"
    WAITING_FOR_FLEET_TO_SETTLE = "WaitingForFleetToSettle"
    SCALE_DOWN_STABILIZED = "ScaleDownStabilized"
    SCALE_UP_STABILIZED = "ScaleUpStabilized"
    HOLDING_REPLICAS = "HoldingReplicas"
    ROLLOUT_IN_PROGRESS = "RolloutInProgress"
    FAILED_UPDATE_SCALE = "FailedUpdateScale"
    TARGET_NOT_FOUND = "TargetNotFound"
    INVALID_TARGET = "InvalidTarget"
    # ScalingActive
    VALID_METRIC_FOUND = "ValidMetricFound"
    VALID_DECISION_FOUND = "ValidDecisionFound"
    SOME_METRICS_SKIPPED = "SomeMetricsSkipped"
    FAILED_GET_METRICS = "FailedGetMetrics"
    FAILED_GET_DECISION = "FailedGetDecision"
    TARGET_OWNED_BY_ANOTHER_SCALER = "TargetOwnedByAnotherScaler"
    SERVER_ADDRESS_NOT_ALLOWED = "ServerAddressNotAllowed"
    SECRET_FORBIDDEN = "SecretForbidden"
    FAILED_GET_SECRET = "FailedGetSecret"
    INVALID_SPEC = "InvalidSpec"
    FALLBACK_ACTIVE = "FallbackActive"
    # ScalingLimited
    TOO_MANY_REPLICAS = "TooManyReplicas"
    TOO_FEW_REPLICAS = "TooFewReplicas"
    DESIRED_WITHIN_RANGE = "DesiredWithinRange"
    # Ready
    SCALING = "Scaling"
    SYNC_FAILED = "SyncFailed"
    # Preemption
    NOT_IMPLEMENTED = "NotImplemented"
    # pause annotations (AbleToScale, ScalingActive, Ready)
    PAUSED = "Paused"
    PAUSED_REPLICAS = "PausedReplicas"
    INVALID_PAUSED_REPLICAS = "InvalidPausedReplicas"
    # advisory mode (AbleToScale; the Advisory condition)
    ADVISORY = "Advisory"
    WOULD_RESCALE = "WouldRescale"
    WOULD_HOLD = "WouldHold"


class EventReason(StrEnum):
    """The ``reason`` of a Kubernetes Event the pipeline records on an LLMScaler."""

    SUCCESSFUL_RESCALE = "SuccessfulRescale"
    FAILED_RESCALE = "FailedRescale"
    FAILED_SET_DELETION_COST = "FailedSetDeletionCost"
    FAILED_GET_DELETION_COST = "FailedGetDeletionCost"
    FAILED_GET_METRICS = "FailedGetMetrics"
    FAILED_GET_DECISION = "FailedGetDecision"
    FAILED_GET_TARGET = "FailedGetTarget"
    INVALID_TARGET = "InvalidTarget"
    TARGET_OWNED_BY_ANOTHER_SCALER = "TargetOwnedByAnotherScaler"
    SERVER_ADDRESS_NOT_ALLOWED = "ServerAddressNotAllowed"
    SECRET_FORBIDDEN = "SecretForbidden"
    FAILED_GET_SECRET = "FailedGetSecret"
    INVALID_SPEC = "InvalidSpec"
    SYNC_FAILED = "SyncFailed"
    INVALID_PAUSED_REPLICAS = "InvalidPausedReplicas"
    WOULD_RESCALE = "WouldRescale"
    FALLBACK_ACTIVE = "FallbackActive"
    FALLBACK_ENDED = "FallbackEnded"
