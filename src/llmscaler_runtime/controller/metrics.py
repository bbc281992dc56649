"""Metrics hook of the controller; the manager backs it with prometheus_client.

Expected mapping onto the controller-runtime series (all labelled ``controller``):

=================================  ==========================================================
hook                               series
=================================  ==========================================================
``controller_started``             set ``controller_runtime_max_concurrent_reconciles``;
                                   pre-initialise ``controller_runtime_reconcile_total`` for
                                   every ``result`` in :data:`RESULTS` (and the error counters)
                                   to 0 so rates work from the first scrape
``add_active_workers``             ``controller_runtime_active_workers`` += delta
``observe_reconcile``              ``controller_runtime_reconcile_total{result}`` += 1 and
                                   ``controller_runtime_reconcile_time_seconds`` observe
``inc_reconcile_errors``           ``controller_runtime_reconcile_errors_total`` += 1
``inc_terminal_reconcile_errors``  ``controller_runtime_terminal_reconcile_errors_total`` += 1
``inc_reconcile_panics``           ``controller_runtime_reconcile_panics_total`` += 1
=================================  ==========================================================

A terminal error calls both error hooks, as controller-runtime counts it in both series. A
"panic" is Python's nearest analogue of a recovered Go panic: a ``BaseException`` that is not
an ``Exception`` (``SystemExit``, ``KeyboardInterrupt`` raised by reconciler code); it is also
counted as an error, as controller-runtime turns a recovered panic into an error.
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

__all__ = ["RESULTS", "ControllerMetricsProvider", "NoopControllerMetrics"]

#: The ``result`` label values of ``controller_runtime_reconcile_total``.
RESULTS: Final = ("success", "error", "requeue", "requeue_after")


@runtime_checkable
class ControllerMetricsProvider(Protocol):
    """Receives a controller's reconcile statistics; must be thread-safe (workers call it)."""

    def controller_started(self, controller: str, max_concurrent_reconciles: int) -> None: ...

    def add_active_workers(self, controller: str, delta: int) -> None: ...

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None: ...

    def inc_reconcile_errors(self, controller: str) -> None: ...

    def inc_terminal_reconcile_errors(self, controller: str) -> None: ...

    def inc_reconcile_panics(self, controller: str) -> None: ...


class NoopControllerMetrics:
    """Default provider: records nothing."""

    def controller_started(self, controller: str, max_concurrent_reconciles: int) -> None:
        """Deliberately records nothing."""

    def add_active_workers(self, controller: str, delta: int) -> None:
        """Deliberately records nothing."""

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """Deliberately records nothing."""

    def inc_reconcile_errors(self, controller: str) -> None:
        """Deliberately records nothing."""

    def inc_terminal_reconcile_errors(self, controller: str) -> None:
        """Deliberately records nothing."""

    def inc_reconcile_panics(self, controller: str) -> None:
        """Deliberately records nothing."""
