"""The Manager: one object that owns the client, the shared cache and every controller, and runs
them in the order that keeps an operator correct.

Start order: HTTP endpoints -> cache (informers) and other non-leader runnables -> wait for the
cache to sync (``/readyz`` turns 200) -> win the Lease when leader election is enabled -> start
the controllers. Controllers never reconcile from a half-filled cache, and never run on a replica
that does not hold the Lease.

Stop order (SIGTERM/SIGINT or :meth:`Manager.stop`): controllers stop taking work and in-flight
reconciles get up to ``graceful_shutdown_timeout`` to finish -> the Lease is released (so the
next replica takes over at once instead of waiting for expiry) -> informers stop -> endpoints
close; ``run()`` returns 0.

Losing leadership is different: the controllers' queues are shut down at once from the elector,
:meth:`Manager.still_leader` turns False for any reconcile that is still running, writes through
``manager.client`` (a :class:`~llmscaler_runtime.manager.fencing.FencedClient`) are refused, and
``run()`` returns 1 so the binary exits and restarts as a fresh candidate.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from types import FrameType
from typing import Any, Protocol

import attrs
from prometheus_client import CollectorRegistry

from llmscaler_runtime.cache import InformerCache
from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.events import EventRecorder
from llmscaler_runtime.kube import Client, in_cluster_namespace
from llmscaler_runtime.kube import config as kube_config
from llmscaler_runtime.log import get_logger
from llmscaler_runtime.manager.fencing import FencedClient
from llmscaler_runtime.manager.leaderelection import LeaderElectionConfig, LeaderElector
from llmscaler_runtime.manager.metrics import ControllerMetrics
from llmscaler_runtime.manager.server import (
    Check,
    HealthChecks,
    HttpServer,
    metrics_handler,
    parse_bind_address,
    probe_handler,
)

__all__ = ["Manager", "Runnable"]

_log = get_logger(__name__)

EXIT_OK = 0
EXIT_ERROR = 1


class Runnable(Protocol):
    """Something the Manager starts and stops; ``start`` must not block.

    An optional attribute ``need_leader_election: bool`` (default True, as in
    controller-runtime) says whether it may only run on the leader.
    """

    def start(self) -> None: ...

    def stop(self, timeout: float | None = None) -> object:
        """Stop, waiting at most ``timeout`` seconds; any return value is ignored."""
        ...


def _in_cluster_namespace() -> str:
    """The pod's namespace, as controller-runtime defaults the lease namespace."""
    namespace = in_cluster_namespace()
    if namespace is None:
        raise ValueError(
            "leader election needs lease_namespace when not running in a cluster "
            f"({kube_config.SERVICE_NAMESPACE_FILENAME} is not readable)"
        )
    return namespace


def _default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Manager:
    """Runs a cache and runnables (controllers) with leader election, probes and metrics.

    ``metrics_bind_address`` / ``health_probe_bind_address``: ``":8080"`` binds all interfaces,
    ``"127.0.0.1:0"`` a random loopback port (read back from :attr:`metrics_port` /
    :attr:`health_port`), ``"0"`` disables. ``registry`` defaults to a fresh per-Manager
    ``CollectorRegistry``. ``clock`` (default :data:`~llmscaler_runtime.clock.SYSTEM_CLOCK`)
    is the one clock of everything the Manager wires: the lease timing, the Event recorders,
    the default cache's reflectors, and the controllers built on it with
    :class:`~llmscaler_runtime.controller.Builder` (read back as :attr:`clock`); inject a fake
    in tests. The manager's own deadlines (``cache_sync_timeout``, ``graceful_shutdown_timeout``)
    stay on real time: they bound real waits for threads, which a fake clock nobody steps would
    never end. ``cache`` replaces the default ``InformerCache(client, namespace, clock=clock)``.
    With leader election enabled, :attr:`client` is a :class:`FencedClient` whose writes fail
    with ``NotLeader`` whenever :meth:`still_leader` is False (``fence_writes=False`` opts out).

    The HTTP ports are bound here, so a bad address fails at construction and the ports are
    known before :meth:`run`; they are closed when ``run`` returns (or by :meth:`close`).
    """

    def __init__(
        self,
        client: Client,
        *,
        namespace: str | None = None,
        metrics_bind_address: str = ":8080",
        health_probe_bind_address: str = ":8081",
        leader_election: LeaderElectionConfig | None = None,
        graceful_shutdown_timeout: float = 30.0,
        cache_sync_timeout: float = 120.0,
        registry: CollectorRegistry | None = None,
        cache: InformerCache | None = None,
        clock: Clock | None = None,
        install_signal_handlers: bool = True,
        fence_writes: bool = True,
    ) -> None:
        if graceful_shutdown_timeout < 0:
            raise ValueError("graceful_shutdown_timeout must be >= 0")
        if cache_sync_timeout <= 0:
            raise ValueError("cache_sync_timeout must be > 0")
        #: The client as given; the Manager writes its Lease and Events with it.
        self.unfenced_client = client
        self.client = client
        self.namespace = namespace
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.cache_sync_timeout = cache_sync_timeout
        #: The one clock of this manager, shared by everything it wires (see the class doc).
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self.cache = (
            cache if cache is not None else InformerCache(client, namespace, clock=self.clock)
        )
        self.metrics = ControllerMetrics(registry)
        self.registry = self.metrics.registry
        self._install_signals = install_signal_handlers

        le = leader_election or LeaderElectionConfig()
        if le.enabled and not le.identity:
            le = attrs.evolve(le, identity=_default_identity())
        if le.enabled and not le.lease_namespace:
            le = attrs.evolve(le, lease_namespace=_in_cluster_namespace())
        self.leader_election = le

        self._lock = threading.Lock()
        # Serialises starting and stopping runnables, so a runnable can never be started after
        # (or while) the shutdown path has stopped it.
        self._lifecycle = threading.RLock()
        self._leader_runnables: list[Runnable] = []
        self._other_runnables: list[Runnable] = []
        self._leader_started = False
        self._others_started = False
        self._recorders: dict[str, EventRecorder] = {}
        self._stop = threading.Event()
        self._ran = False
        self._lost = False
        self._failed = False
        #: Set once caches have synced (what ``/readyz`` reports).
        self.synced = threading.Event()
        #: Set once this replica may run controllers (leader, or leader election disabled).
        self.elected = threading.Event()
        self.leadership = self.elected

        self._elector: LeaderElector | None = None
        if le.enabled:
            self._elector = LeaderElector(
                client,
                le,
                clock=self.clock,
                on_started_leading=self._on_started_leading,
                on_stopped_leading=self._on_stopped_leading,
            )
            self.metrics.set_leader(le.lease_name, False)
            if fence_writes and isinstance(client, Client):
                # Reconcilers write through manager.client: make "never two writers" hold even
                # for a reconcile that forgot to check still_leader().
                self.client = FencedClient(client, self.is_leader)

        self._healthz = HealthChecks("healthz")
        self._readyz = HealthChecks("readyz")
        self._healthz.add("ping", lambda: None)
        self._readyz.add("informer-sync", self._check_synced)

        self._servers: list[HttpServer] = []
        self.metrics_port: int | None = None
        self.health_port: int | None = None
        metrics_addr = parse_bind_address(metrics_bind_address)
        probe_addr = parse_bind_address(health_probe_bind_address)
        try:
            if metrics_addr is not None:
                srv = HttpServer("metrics", metrics_addr, metrics_handler(self.registry))
                self._servers.append(srv)
                self.metrics_port = srv.port
            if probe_addr is not None:
                srv = HttpServer("probes", probe_addr, probe_handler(self._healthz, self._readyz))
                self._servers.append(srv)
                self.health_port = srv.port
        except BaseException:
            for s in self._servers:
                s.close()
            raise

    # -- registration -----------------------------------------------------------------------

    def add(self, runnable: Runnable) -> None:
        """Register a runnable; started at once if its group is already running."""
        needs_leader = bool(getattr(runnable, "need_leader_election", True))
        with self._lifecycle:
            with self._lock:
                if needs_leader:
                    self._leader_runnables.append(runnable)
                    start_now = self._leader_started and not self._stop.is_set()
                else:
                    self._other_runnables.append(runnable)
                    start_now = self._others_started and not self._stop.is_set()
            if start_now:
                self._start_runnable(runnable)

    def add_healthz_check(self, name: str, check: Check) -> None:
        """Add a liveness check (``/healthz``); ``check`` returns None/True, False, or raises."""
        self._healthz.add(name, check)

    def add_readyz_check(self, name: str, check: Check) -> None:
        """Add a readiness check (``/readyz``)."""
        self._readyz.add(name, check)

    def event_recorder(self, component: str) -> EventRecorder:
        """The (shared) EventRecorder for ``component``; stopped with the Manager."""
        with self._lock:
            rec = self._recorders.get(component)
            if rec is None:
                rec = EventRecorder(self.unfenced_client, component, clock=self.clock)
                self._recorders[component] = rec
            return rec

    # -- leadership -------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """May this replica write now? Always True without leader election (once started)."""
        if self._elector is None:
            # Stays True while in-flight reconciles drain during a graceful shutdown.
            return self.elected.is_set()
        return self._elector.is_leader()

    def still_leader(self) -> bool:
        """Fence for writers: check right before a write; False means do not write."""
        return self.is_leader()

    @property
    def leading(self) -> bool:
        return self.is_leader()

    @property
    def lost_leadership(self) -> bool:
        return self._lost

    def _on_started_leading(self) -> None:
        self.metrics.set_leader(self.leader_election.lease_name, True)
        self.elected.set()
        # Not on the elector thread: a slow start() (a controller waiting for its informers)
        # must never delay lease renewals.
        threading.Thread(
            target=self._start_leader_runnables, name="start-controllers", daemon=True
        ).start()

    def _on_stopped_leading(self) -> None:
        # Called on the elector (or watchdog) thread the moment the renew deadline is missed.
        self._lost = True
        self.elected.clear()
        self._stop.set()
        self.metrics.set_leader(self.leader_election.lease_name, False)
        with self._lifecycle:
            with self._lock:
                runnables = list(self._leader_runnables) if self._leader_started else []
            for r in runnables:
                try:
                    r.stop(0)  # shut the queue now; in-flight writes are fenced by still_leader()
                except Exception:
                    _log.exception("stopping runnable after leadership loss failed")

    # -- lifecycle --------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to shut down gracefully; safe from any thread or a signal handler."""
        self._stop.set()

    def close(self) -> None:
        """Release the bound ports of a Manager that will never run (run() does this itself)."""
        for s in self._servers:
            s.close()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _check_synced(self) -> bool:
        return self.synced.is_set()

    def _start_leader_runnables(self) -> None:
        with self._lifecycle:
            with self._lock:
                if self._leader_started or self._stop.is_set():
                    return
                self._leader_started = True
                runnables = list(self._leader_runnables)
            for r in runnables:
                if not self._start_runnable(r):
                    return

    def _wait_for_sync(self) -> bool:
        deadline = time.monotonic() + self.cache_sync_timeout
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self.cache.wait_for_cache_sync(timeout=min(0.1, remaining)):
                return True
        return False

    def run(self) -> int:
        """Run until stopped; returns the process exit code (0 clean, 1 on failure/lost lease)."""
        with self._lock:
            if self._ran:
                raise RuntimeError("Manager.run() may only be called once")
            self._ran = True
        previous = self._install_signal_handlers()
        code = EXIT_OK
        try:
            for s in self._servers:
                s.start()
            self.cache.start()
            with self._lifecycle:
                with self._lock:
                    self._others_started = True
                    others = list(self._other_runnables)
                for r in others:
                    if not self._start_runnable(r):
                        break
            if not self._wait_for_sync():
                if self._failed:
                    code = EXIT_ERROR
                elif not self._stop.is_set():
                    _log.error(
                        "timed out waiting for caches to sync", timeout=self.cache_sync_timeout
                    )
                    code = EXIT_ERROR
                return self._shutdown(code)
            self.synced.set()
            _log.info("caches synced")

            if self._elector is None:
                self.elected.set()
                self._start_leader_runnables()
            else:
                self._elector.start()
            while not self._stop.wait(0.05):
                # Watchdog: ends leadership on time even if the elector is stuck in a request.
                if self._elector is not None:
                    self._elector.check_deadline()
            if self._lost or self._failed:
                code = EXIT_ERROR
            return self._shutdown(code)
        except BaseException:
            self._stop.set()
            self._shutdown(EXIT_ERROR)
            raise
        finally:
            self._restore_signal_handlers(previous)

    def _shutdown(self, code: int) -> int:
        self._stop.set()
        deadline = time.monotonic() + self.graceful_shutdown_timeout
        with self._lifecycle:
            with self._lock:
                leaders = list(self._leader_runnables) if self._leader_started else []
                others = list(self._other_runnables) if self._others_started else []
            if self._lost:
                _log.error("leader election lost; exiting without waiting for in-flight work")
            else:
                for r in leaders:
                    self._stop_runnable(r, max(0.0, deadline - time.monotonic()))
                if time.monotonic() > deadline:
                    _log.warning("graceful shutdown timeout exceeded")
        if self._elector is not None:
            self._elector.stop(release=not self._lost and self.leader_election.release_on_cancel)
            self.metrics.set_leader(self.leader_election.lease_name, False)
        self.elected.clear()
        for r in others:
            self._stop_runnable(r, max(0.0, deadline - time.monotonic()))
        try:
            self.cache.stop()
        except Exception:
            _log.exception("stopping the cache failed")
        with self._lock:
            recorders = list(self._recorders.values())
        for rec in recorders:
            rec.stop(timeout=min(2.0, max(0.0, deadline - time.monotonic())))
        for s in self._servers:
            s.close()
        _log.info("manager stopped", exit_code=code)
        return code

    def _start_runnable(self, r: Runnable) -> bool:
        """Start one runnable; a failure stops the whole manager with exit code 1.

        A controller that cannot start (e.g. its informers never sync) leaves the operator
        unable to do its job, so it must not keep reporting healthy: exit and let the pod restart.
        """
        try:
            r.start()
        except Exception:
            _log.exception(
                "runnable failed to start; stopping the manager", runnable=type(r).__name__
            )
            self._failed = True
            self._stop.set()
            return False
        return True

    @staticmethod
    def _stop_runnable(r: Runnable, timeout: float) -> None:
        try:
            r.stop(timeout)
        except Exception:
            _log.exception("stopping runnable failed", runnable=type(r).__name__)

    # -- signals ----------------------------------------------------------------------------

    def _install_signal_handlers(self) -> dict[int, Any]:
        previous: dict[int, Any] = {}
        if not self._install_signals or threading.current_thread() is not threading.main_thread():
            return previous
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, self._on_signal)
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._stop.is_set():
            # Second signal: the operator asked twice, stop waiting (as controller-runtime does).
            os._exit(EXIT_ERROR)
        _log.info("received signal, shutting down", signal=signal.Signals(signum).name)
        self._stop.set()
