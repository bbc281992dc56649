"""Fault injection and request recording for reliability tests.

Tests reach this through ``env.server.faults``: error rates and latency per path regex (seeded
RNG, so a failing run can be replayed), dropping every open watch, forcing 410 Gone on the next
watch, and conflicts on the next N writes. The recorder keeps every request the server saw so a
test can check which verbs a component used on which resources (e.g. to derive RBAC rules).
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable

import attrs


@attrs.frozen
class RecordedRequest:
    """One request as the server understood it."""

    method: str
    path: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    user_agent: str
    group: str = ""
    name: str = ""
    status: int = 0


@attrs.define
class ErrorRule:
    """Fail matching requests with ``code`` at ``probability`` (methods: None = any)."""

    pattern: re.Pattern[str]
    code: int
    probability: float
    methods: frozenset[str] | None
    remaining: int | None = None


@attrs.define
class LatencyRule:
    pattern: re.Pattern[str]
    seconds: float
    methods: frozenset[str] | None


class Faults:
    """Mutable fault configuration shared by all request threads (thread-safe)."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._errors: list[ErrorRule] = []
        self._latency: list[LatencyRule] = []
        self._force_gone = 0
        self._conflicts = 0
        self._recording = True
        self._requests: list[RecordedRequest] = []
        self.drop_watches_hook: Callable[[], int] | None = None

    # ---- configuration --------------------------------------------------------------------

    def seed(self, seed: int) -> None:
        with self._lock:
            self._rng = random.Random(seed)

    def add_error(
        self,
        path_regex: str,
        code: int = 500,
        probability: float = 1.0,
        *,
        methods: set[str] | None = None,
        count: int | None = None,
    ) -> ErrorRule:
        """Fail requests whose path matches ``path_regex`` (``count`` = only the next N)."""
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability must be within [0, 1], got {probability}")
        rule = ErrorRule(
            re.compile(path_regex),
            code,
            probability,
            frozenset(m.upper() for m in methods) if methods else None,
            count,
        )
        with self._lock:
            self._errors.append(rule)
        return rule

    def add_latency(
        self, path_regex: str, seconds: float, *, methods: set[str] | None = None
    ) -> None:
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        with self._lock:
            self._latency.append(
                LatencyRule(
                    re.compile(path_regex),
                    seconds,
                    frozenset(m.upper() for m in methods) if methods else None,
                )
            )

    def clear(self) -> None:
        """Remove every injected fault (recorded requests are kept)."""
        with self._lock:
            self._errors.clear()
            self._latency.clear()
            self._force_gone = 0
            self._conflicts = 0

    def drop_watches(self) -> int:
        """Close every open watch connection now; returns how many were closed."""
        hook = self.drop_watches_hook
        return hook() if hook is not None else 0

    def force_gone_on_next_watch(self, count: int = 1) -> None:
        with self._lock:
            self._force_gone += count

    def conflict_next_writes(self, count: int) -> None:
        with self._lock:
            self._conflicts += count

    # ---- evaluation (used by the server) ---------------------------------------------------

    def take_gone(self) -> bool:
        with self._lock:
            if self._force_gone > 0:
                self._force_gone -= 1
                return True
            return False

    def take_conflict(self) -> bool:
        with self._lock:
            if self._conflicts > 0:
                self._conflicts -= 1
                return True
            return False

    def pending_conflicts(self) -> int:
        with self._lock:
            return self._conflicts

    def delay_for(self, method: str, path: str) -> float:
        with self._lock:
            return sum(
                r.seconds
                for r in self._latency
                if (r.methods is None or method in r.methods) and r.pattern.search(path)
            )

    def error_for(self, method: str, path: str) -> int | None:
        with self._lock:
            for rule in self._errors:
                if rule.methods is not None and method not in rule.methods:
                    continue
                if not rule.pattern.search(path):
                    continue
                if rule.remaining is not None and rule.remaining <= 0:
                    continue
                if self._rng.random() < rule.probability:
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return rule.code
        return None

    def apply_latency(self, method: str, path: str) -> None:
        delay = self.delay_for(method, path)
        if delay > 0:
            time.sleep(delay)  # injected latency is the point of this fault

    # ---- recorder -------------------------------------------------------------------------

    def record(self, req: RecordedRequest) -> None:
        with self._lock:
            if self._recording:
                self._requests.append(req)

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def set_recording(self, on: bool) -> None:
        with self._lock:
            self._recording = on
