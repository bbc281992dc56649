"""What the reconciler remembers per scaler between syncs, and when it forgets it.

Three things, all keyed by the scaler's uid so a scaler deleted and re-created under the same
name starts clean:

- the **parse cache**: the typed scaler per resourceVersion. The informer cache hands out the
  same object until it changes, so re-validating it every period would be wasted work; beside
  it, whether the raw status re-encodes to the parsed one, so the steady state can skip
  encoding and diffing the status every period;
- the **effective scaler**: the scaler with ``serverHeadersFrom`` values merged into its
  headers, rebuilt only when the spec or a header value changed (so the providers' coalescing,
  which compares scalers, keeps working);
- the **pacing history** (``pacing.HistoryStore``): recent recommendations for the
  stabilization window and the step-walk state;
- the **failure count** (``fallback.FailureCounter``): consecutive evaluations that measured
  nothing, which decides when ``spec.fallback`` applies. Kept here rather than in the status
  so counting costs no write; a restart starts it from zero (see ``scaling.fallback``).

Workers of one controller reconcile different scalers at once, so the maps are guarded by one
lock; a scaler is never reconciled by two workers at the same time (the workqueue's rule).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler, LLMScalerStatus
from llmscaler_runtime.scaling.fallback import FailureCounter
from llmscaler_runtime.scaling.pacing import HistoryStore

__all__ = ["ScalerMemory"]


class ScalerMemory:
    """Per-scaler memory of one reconciler (see the module docstring)."""

    def __init__(self, history: HistoryStore | None = None) -> None:
        self.history = history or HistoryStore()
        self.failures = FailureCounter()
        self._lock = threading.Lock()
        # "namespace/name" -> uid: tells a deleted scaler's uid, and a re-creation
        self._uids: dict[str, str] = {}
        # uid -> (resourceVersion, parsed scaler, raw status == its typed form re-encoded)
        self._parsed: dict[str, tuple[str, LLMScaler, bool]] = {}
        # uid -> (parsed scaler, its headers, the scaler as the providers see it)
        self._effective: dict[str, tuple[LLMScaler, Mapping[str, str], LLMScaler]] = {}

    def seen(self, key: str, uid: str) -> None:
        """Record that ``key`` now has ``uid``; forget the old uid when it was re-created."""
        with self._lock:
            previous = self._uids.get(key)
            self._uids[key] = uid
        if previous is not None and previous != uid:
            self.forget(previous)

    def gone(self, key: str) -> bool:
        """The scaler ``key`` was deleted: forget it; True when there was something to drop."""
        with self._lock:
            uid = self._uids.pop(key, None)
        if uid is None:
            return False
        self.forget(uid)
        return True

    def forget(self, uid: str) -> None:
        """Drop everything kept for a scaler: its pacing history, failure count, parse and
        headers."""
        self.history.forget(uid)
        self.failures.forget(uid)
        with self._lock:
            self._parsed.pop(uid, None)
            self._effective.pop(uid, None)

    def parse(self, obj: dict[str, Any], uid: str) -> LLMScaler:
        """The typed scaler, parsed once per resourceVersion; raises ``SpecError``."""
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            cached = self._parsed.get(uid)
        if rv and cached is not None and cached[0] == rv:
            return cached[1]
        scaler = LLMScaler.from_dict(obj)
        if rv:
            canonical = scaler.status.to_dict() == (obj.get("status") or {})
            with self._lock:
                self._parsed[uid] = (rv, scaler, canonical)
        return scaler

    def status_unchanged(self, scaler: LLMScaler, new: LLMScalerStatus) -> bool:
        """True when ``new`` is exactly what the server holds: equal to the parsed status, and
        that status re-encodes to the raw one (checked once per resourceVersion)."""
        if new != scaler.status:
            return False
        with self._lock:
            cached = self._parsed.get(scaler.uid)
        return cached is not None and cached[1] is scaler and cached[2]

    def with_headers(self, scaler: LLMScaler, headers: Mapping[str, str]) -> LLMScaler:
        """``scaler`` with ``headers`` as its serverHeaders: the same object while neither
        changed, so providers that coalesce equal requests still see one scaler."""
        with self._lock:
            cached = self._effective.get(scaler.uid)
        if cached is not None and cached[0] is scaler and cached[1] == headers:
            return cached[2]
        effective = attrs.evolve(scaler, spec=attrs.evolve(scaler.spec, server_headers=headers))
        with self._lock:
            self._effective[scaler.uid] = (scaler, headers, effective)
        return effective
