"""Kubernetes' timestamp form, written one way everywhere the runtime stamps an object.

``metav1.Time`` is RFC 3339 in UTC with whole seconds (``2024-05-01T12:00:00Z``): condition
transition times, event timestamps. It lives in ``kube`` (the lowest layer) so that events and the
scaler's status, which both stamp objects, cannot drift apart in how they round or spell a time.
"""

from __future__ import annotations

import datetime as dt

__all__ = ["rfc3339"]


def rfc3339(epoch_seconds: float) -> str:
    """``epoch_seconds`` as ``metav1.Time`` (UTC, whole seconds).

    The fraction is cut off before converting: ``datetime.fromtimestamp`` would round a value
    within half a microsecond of the next second up to it, while the API server truncates.
    """
    moment = dt.datetime.fromtimestamp(int(epoch_seconds), tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
