"""``rfc3339``: the one ``metav1.Time`` formatter (events and the scaler's status use it)."""

from __future__ import annotations

import pytest

from llmscaler_runtime import events
from llmscaler_runtime.kube import rfc3339
from llmscaler_runtime.scaling import status


@pytest.mark.parametrize(
    ("epoch", "text"),
    [
        (0.0, "1970-01-01T00:00:00Z"),
        (0.9, "1970-01-01T00:00:00Z"),
        (1_800_000_000.25, "2027-01-15T08:00:00Z"),
        # half a microsecond short of the next second: cut off like the API server does,
        # not rounded up the way datetime.fromtimestamp would round the float
        (1_800_000_000.9999996, "2027-01-15T08:00:00Z"),
    ],
)
def test_rfc3339_is_utc_whole_seconds_truncated(epoch: float, text: str) -> None:
    assert rfc3339(epoch) == text


def test_events_and_status_stamp_with_the_same_formatter() -> None:
    assert events.rfc3339 is rfc3339
    assert status.rfc3339 is rfc3339
