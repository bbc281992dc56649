"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go semantics.

Only one replica of the operator may write at a time. Candidates race for one Lease object;
the holder renews ``spec.renewTime`` every ``retry_period``; others consider the lease expired
when the record has not *changed* for ``leaseDurationSeconds`` as measured by **their own
monotonic clock** (no cross-node clock comparison, exactly like client-go's ``observedTime``).
All writes are optimistic (PUT with ``metadata.resourceVersion``), so two candidates can never
both win one round.

Safety rule, slightly stricter than client-go: the leader stops leading once
``renew_deadline`` has passed since the start of its last *successful* renew, even if a request
is still hanging. Because ``renew_deadline < lease_duration`` and observers measure expiry from
a moment no earlier than that renew's start, the old leader has stopped before anyone else may
acquire — never two writers. :meth:`LeaderElector.is_leader` checks the deadline itself, so the
fence holds even while the elector thread is blocked inside an API call. A leader that reads the
Lease and finds another holder steps down at once instead of retrying until its deadline.

The state machine is :meth:`LeaderElector.tick`, driven either by :meth:`run` on a thread with
real time, or directly by unit tests with a fake clock.
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import attrs

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.log import get_logger

__all__ = [
    "JITTER_FACTOR",
    "LEASE_API_VERSION",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaseClient",
    "format_micro_time",
]

LEASE_API_VERSION = "coordination.k8s.io/v1"
#: client-go's JitterFactor: acquire attempts are spaced retry_period * [1, 1 + 1.2).
JITTER_FACTOR = 1.2

_log = get_logger(__name__)


class LeaseClient(Protocol):
    """The slice of ``llmscaler_runtime.kube.Client`` leader election needs."""

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any]: ...

    def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]: ...

    def update(self, obj: dict[str, Any]) -> dict[str, Any]: ...


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value}")


@attrs.frozen
class LeaderElectionConfig:
    """Leader election settings; defaults are controller-runtime's.

    Construction validates ``lease_duration > renew_deadline > JITTER_FACTOR * retry_period``
    (client-go refuses anything else): the first inequality is what makes the hand-over safe,
    the second leaves room for at least one retry inside the renew deadline.
    """

    enabled: bool = False
    lease_name: str = ""
    lease_namespace: str = ""
    identity: str = ""
    lease_duration: float = attrs.field(default=15.0, validator=_positive)
    renew_deadline: float = attrs.field(default=10.0, validator=_positive)
    retry_period: float = attrs.field(default=2.0, validator=_positive)
    release_on_cancel: bool = True

    def __attrs_post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}) must be greater than "
                f"renew_deadline ({self.renew_deadline})"
            )
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}) must be greater than "
                f"{JITTER_FACTOR} * retry_period ({self.retry_period})"
            )
        if self.enabled and not self.lease_name:
            # identity and lease_namespace may be left empty: the Manager fills in
            # "<hostname>_<uuid>" and the pod's own namespace.
            raise ValueError("leader election enabled but lease_name not set")


def format_micro_time(dt: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, UTC ``Z``."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class LeaderElector:
    """One candidate for one Lease.

    ``on_started_leading`` / ``on_stopped_leading`` run on the thread that calls :meth:`tick`
    (keep them short). After leadership is lost the elector is finished: like client-go it does
    not try again, because the process is expected to exit and restart cleanly.
    ``clock`` times the lease by its monotonic reading and stamps the Lease's ``acquireTime``
    and ``renewTime`` with its wall reading, so a fake clock moves both.
    """

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        clock: Clock | None = None,
        jitter: Callable[[], float] = random.random,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
    ) -> None:
        if not (config.lease_name and config.lease_namespace and config.identity):
            raise ValueError("leader election needs lease_name, lease_namespace and identity")
        self._client = client
        self.config = config
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._jitter = jitter
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._lock = threading.Lock()
        self._observed_raw: str | None = None
        self._observed_spec: dict[str, Any] = {}
        self._observed_time = 0.0
        self._observed_holder = ""
        self._leading = False
        self._renew_deadline_at = 0.0
        self._lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    # -- status -----------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True only while leading *and* inside the renew deadline — the write fence."""
        with self._lock:
            return self._leading and self._clock.monotonic() < self._renew_deadline_at

    @property
    def lost(self) -> bool:
        """True once leadership was held and then lost (not after a clean release)."""
        with self._lock:
            return self._lost

    @property
    def leader(self) -> str:
        """The holder identity this candidate last observed ('' if none)."""
        with self._lock:
            return self._observed_holder

    @property
    def renew_deadline_at(self) -> float:
        """Monotonic time at which leadership ends unless renewed (0 when not leading)."""
        with self._lock:
            return self._renew_deadline_at if self._leading else 0.0

    # -- state machine ----------------------------------------------------------------------

    def tick(self) -> float | None:
        """Run one election step; returns seconds until the next step, or None when finished."""
        if self._stop.is_set() or self.lost:
            return None
        with self._lock:
            leading = self._leading
        started = self._clock.monotonic()
        if not leading:
            if self._try_acquire_or_renew():
                with self._lock:
                    # The deadline counts from *before* the request: the record's renewTime
                    # cannot be observed by a peer any earlier than that.
                    self._renew_deadline_at = started + self.config.renew_deadline
                self._become_leader()
                return self.config.retry_period
            return self.config.retry_period * (1.0 + JITTER_FACTOR * self._jitter())
        ok = self._try_acquire_or_renew()
        with self._lock:
            if ok and started < self._renew_deadline_at:
                self._renew_deadline_at = started + self.config.renew_deadline
                return self.config.retry_period
            remaining = self._renew_deadline_at - self._clock.monotonic()
            usurped = self._observed_holder not in ("", self.config.identity)
        if usurped:
            # Someone else holds the Lease now (our renewals must have been invisible to them
            # for a whole lease): step down at once rather than wait for our deadline.
            self.last_error = f"lease taken over by {self.leader}"
            self._lose()
            return None
        if remaining <= 0:
            # Includes a renewal that succeeded but started after the deadline: it does not
            # revive a leadership the fence has already ended.
            self._lose()
            return None
        return min(self.config.retry_period, remaining)

    def check_deadline(self) -> bool:
        """Declare leadership lost if the renew deadline passed; True if it was lost now.

        Lets a watchdog end leadership on time while the elector thread is stuck in a call.
        """
        with self._lock:
            due = self._leading and self._clock.monotonic() >= self._renew_deadline_at
        if due:
            self._lose()
        return due

    def _become_leader(self) -> None:
        with self._lock:
            self._leading = True
        _log.info(
            "acquired lease",
            lease=f"{self.config.lease_namespace}/{self.config.lease_name}",
            identity=self.config.identity,
        )
        if self._on_started is not None:
            self._on_started()

    def _lose(self) -> None:
        with self._lock:
            if not self._leading:
                return
            self._leading = False
            self._lost = True
        _log.error(
            "leader election lost",
            lease=f"{self.config.lease_namespace}/{self.config.lease_name}",
            identity=self.config.identity,
            error=self.last_error,
        )
        if self._on_stopped is not None:
            self._on_stopped()

    # -- API --------------------------------------------------------------------------------

    def _wall_time(self) -> datetime:
        """The clock's wall time, for the timestamps written into the Lease."""
        return datetime.fromtimestamp(self._clock.now(), UTC)

    def _desired(self, now: datetime) -> dict[str, Any]:
        ts = format_micro_time(now)
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.config.lease_duration)),
            "acquireTime": ts,
            "renewTime": ts,
            "leaseTransitions": 0,
        }

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        raw = json.dumps(spec, sort_keys=True)
        with self._lock:
            changed = raw != self._observed_raw
            if changed:
                self._observed_raw = raw
                self._observed_spec = dict(spec)
                self._observed_time = now
            holder = str(spec.get("holderIdentity") or "")
            new_leader = holder != self._observed_holder
            self._observed_holder = holder
        if new_leader and holder and self._on_new_leader is not None:
            self._on_new_leader(holder)

    def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        desired = self._desired(self._wall_time())
        try:
            lease = self._client.get(
                LEASE_API_VERSION, "Lease", cfg.lease_name, cfg.lease_namespace
            )
        except Exception as exc:
            if _status(exc) != 404:
                self.last_error = f"get lease: {exc}"
                return False
            body = {
                "apiVersion": LEASE_API_VERSION,
                "kind": "Lease",
                "metadata": {"name": cfg.lease_name, "namespace": cfg.lease_namespace},
                "spec": desired,
            }
            try:
                self._client.create(body, namespace=cfg.lease_namespace)
            except Exception as cexc:
                self.last_error = f"create lease: {cexc}"
                return False
            self._observe(desired, self._clock.monotonic())
            return True

        old = dict(lease.get("spec") or {})
        self._observe(old, self._clock.monotonic())
        holder = str(old.get("holderIdentity") or "")
        with self._lock:
            observed_time = self._observed_time
        duration = float(old.get("leaseDurationSeconds") or 0)
        if holder and holder != cfg.identity and observed_time + duration > self._clock.monotonic():
            self.last_error = f"lease held by {holder}"
            return False

        if holder == cfg.identity:
            desired["acquireTime"] = old.get("acquireTime") or desired["acquireTime"]
            desired["leaseTransitions"] = int(old.get("leaseTransitions") or 0)
        else:
            desired["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        updated = dict(lease)
        updated["spec"] = desired
        try:
            self._client.update(updated)
        except Exception as exc:
            self.last_error = f"update lease: {exc}"
            return False
        self._observe(desired, self._clock.monotonic())
        self.last_error = None
        return True

    def release(self) -> bool:
        """Give the lease up (holderIdentity cleared) so a peer takes over without waiting.

        Only a current leader releases; afterwards this elector is finished. True if released.
        """
        with self._lock:
            leading = self._leading and self._clock.monotonic() < self._renew_deadline_at
            self._leading = False
        self._stop.set()
        if not leading:
            return False
        cfg = self.config
        try:
            lease = self._client.get(
                LEASE_API_VERSION, "Lease", cfg.lease_name, cfg.lease_namespace
            )
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != cfg.identity:
                return False
            ts = format_micro_time(self._wall_time())
            lease = dict(lease)
            lease["spec"] = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": ts,
                "renewTime": ts,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0),
            }
            self._client.update(lease)
        except Exception as exc:
            _log.warning("failed to release lease", error=str(exc))
            return False
        _log.info("released lease", lease=f"{cfg.lease_namespace}/{cfg.lease_name}")
        return True

    # -- thread -----------------------------------------------------------------------------

    def start(self) -> None:
        """Run :meth:`tick` on a daemon thread with real waits until stopped or lost."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                delay = self.tick()
            except Exception as exc:  # a bug in a callback must not silently keep us "leading"
                self.last_error = f"election step failed: {exc}"
                _log.exception("leader election step failed")
                self._lose()
                return
            if delay is None:
                return
            self._stop.wait(delay)

    def stop(self, *, release: bool = True, timeout: float | None = 5.0) -> None:
        """Stop the loop; release the lease if leading and ``release`` is set."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if release:
            self.release()
        else:
            with self._lock:
                self._leading = False
