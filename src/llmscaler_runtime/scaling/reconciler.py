"""The LLMScaler reconciler: one sync, composed of swappable steps. Orchestration only.

Order of a sync; each line names the module that does the work:

    scaler from cache, parsed once per resourceVersion     memory.ScalerMemory.parse
    pause annotations (paused: stop here)                   resolve.paused, pause
    one-writer check, target lookup                         resolve.owned_target
    serverAddress policy, serverHeadersFrom Secrets         resolve.requestable
    rollout guard                                           guards        (Steps.guard)
    the bounds in force: the spec's, or an open schedule's  bounds
    metric fetch                                            providers     (Steps.fetcher)
    recommendation                                          recommend     (Steps.recommender)
    nothing measured too often in a row: the fallback       fallback
    pacing: bounds, stabilization, step cap, settle         pacing        (Steps.pacer)
    victim selection (pod-deletion-cost hints)              victims.plan_victims
    server-side apply of spec.replicas                      write         (Steps.writer)
      (advisory mode: nothing written, the advice reported)  advisory
    conditions and status, written only when changed        conditions, status, record

Every sync ends in ``Result(requeue_after=...)``: the next tick of the sync-period grid when it
worked (periodic evaluation is what drives scaling; the grid is shared by all scalers so that
identical queries coalesce, see ``scaling.schedule``), the retry period when anything failed.
Errors are caught here on purpose: handed to the controller they would land in the workqueue's
exponential backoff, which can grow to many minutes and silently stop a scaler from reacting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import (
    API_VERSION,
    KIND,
    LLMScaler,
    LLMScalerSpec,
    LLMScalerStatus,
    MetricProvider,
    ScaleDecision,
    SpecError,
)
from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.controller.types import Request, Result
from llmscaler_runtime.kube.errors import ApiError
from llmscaler_runtime.log import get_logger
from llmscaler_runtime.scaling import conditions
from llmscaler_runtime.scaling.addresses import AddressPolicy
from llmscaler_runtime.scaling.advisory import advice_changed, history_after
from llmscaler_runtime.scaling.bounds import effective_bounds, with_bounds
from llmscaler_runtime.scaling.decision_log import log_decision
from llmscaler_runtime.scaling.fallback import fallback_recommendation
from llmscaler_runtime.scaling.memory import ScalerMemory
from llmscaler_runtime.scaling.metrics import (
    FAILED_UPDATE_STATUS,
    ScalerMetrics,
    SyncMetrics,
    SyncReason,
    SyncResult,
    scaler_metrics,
)
from llmscaler_runtime.scaling.pacing import HistoryStore
from llmscaler_runtime.scaling.pause import PAUSED_REPLICAS_ANNOTATION, Pause
from llmscaler_runtime.scaling.ports import EventSink, EventType, ScalerCache, ScalerClient
from llmscaler_runtime.scaling.reasons import ConditionReason, EventReason
from llmscaler_runtime.scaling.record import decision_entry
from llmscaler_runtime.scaling.resolve import Problem, owned_target, paused, requestable
from llmscaler_runtime.scaling.schedule import next_sync_delay, phase_of
from llmscaler_runtime.scaling.secrets import SecretHeaderResolver
from llmscaler_runtime.scaling.status import (
    ADVISORY,
    PREEMPTION,
    SCALING_ACTIVE,
    ConditionDraft,
    build_status,
    rfc3339,
    status_patch,
)
from llmscaler_runtime.scaling.steps import Steps, default_steps
from llmscaler_runtime.scaling.types import Measurement, Plan, PodCost, Recommendation, TargetView
from llmscaler_runtime.scaling.victims import VictimPlan, plan_victims
from llmscaler_runtime.scaling.write import WriteResult

__all__ = ["DEFAULT_RETRY_PERIOD", "LLMScalerReconciler"]

DEFAULT_RETRY_PERIOD = 10.0
_log = get_logger("llmscaler.scaling")


def _retry_period(obj: Mapping[str, Any]) -> float:
    """retryPeriodSeconds straight from the raw object, for specs that do not parse."""
    spec = obj.get("spec")
    value = spec.get("retryPeriodSeconds") if isinstance(spec, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_RETRY_PERIOD


def _reason(scaler: LLMScaler, type_: str) -> str | None:
    """The reason of the scaler's ``type_`` condition as the server holds it, if any."""
    found = scaler.status.condition(type_)
    return found.reason if found is not None else None


@attrs.frozen
class _Outcome:
    """How one sync ended: when to come back, and the reason its status gives (a metric)."""

    result: Result
    sync: SyncResult
    reason: SyncReason


class LLMScalerReconciler:
    """Reconciles LLMScalers (see module docstring); implements ``controller.Reconciler``."""

    def __init__(
        self,
        client: ScalerClient,
        cache: ScalerCache,
        recorder: EventSink,
        *,
        steps: Steps | None = None,
        clock: Clock | None = None,
        leader_check: Callable[[], bool] | None = None,
        history: HistoryStore | None = None,
        align_syncs: bool = True,
        address_policy: AddressPolicy | None = None,
        secret_headers: SecretHeaderResolver | None = None,
        metrics: SyncMetrics | None = None,
        advisory: bool = False,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.clock: Clock = clock or SYSTEM_CLOCK
        # the default steps read the same clock: its wall time is the sync grid both use
        self.steps = steps or default_steps(clock=self.clock)
        self.leader_check = leader_check
        self.memory = ScalerMemory(history)
        self.align_syncs = align_syncs
        self.address_policy = address_policy or AddressPolicy()
        self.secret_headers = secret_headers or SecretHeaderResolver(client, clock=self.clock)
        # a plain SyncMetrics gets no per-scaler series (``metrics.scaler_metrics``)
        self.metrics: ScalerMetrics = scaler_metrics(metrics)
        # every scaler advisory (the manager's --advisory), whatever its spec.advisory says
        self.advisory = advisory

    @property
    def history(self) -> HistoryStore:
        """The pacing history of every scaler (kept in :attr:`memory`)."""
        return self.memory.history

    # -- entry point ---------------------------------------------------------------------

    def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        obj = self.cache.get(API_VERSION, KIND, request.name, request.namespace)
        if obj is None:
            if self.memory.gone(key):
                _log.info("scaler deleted; history dropped", scaler=key)
            self.metrics.forget_scaler(request.namespace, request.name)
            return Result()
        meta = obj.get("metadata") or {}
        self.memory.seen(key, str(meta.get("uid", "")))
        if meta.get("deletionTimestamp"):
            return Result()
        retry = _retry_period(obj)
        if self.leader_check is not None and not self.leader_check():
            return Result(requeue_after=retry)
        try:
            scaler = self.memory.parse(obj, str(meta.get("uid", "")))
        except SpecError as exc:
            outcome = self._invalid_spec(obj, exc, retry)
        else:
            try:
                outcome = self._sync(obj, scaler)
            except Exception as exc:  # never let a bug park the scaler in exponential backoff
                _log.exception("sync failed unexpectedly", scaler=key)
                self._event(obj, "Warning", EventReason.SYNC_FAILED, f"sync failed: {exc}")
                self._write_status(obj, scaler, conditions.sync_failed(exc))
                outcome = _Outcome(
                    Result(requeue_after=float(scaler.spec.retry_period_seconds)),
                    "retry",
                    ConditionReason.SYNC_FAILED,
                )
        self.metrics.observe_sync(outcome.sync, outcome.reason)
        self.metrics.observe_scaler_sync(
            request.namespace, request.name, outcome.sync, outcome.reason
        )
        return outcome.result

    # -- the pipeline ----------------------------------------------------------------------

    def _sync(self, obj: dict[str, Any], scaler: LLMScaler) -> _Outcome:
        spec = scaler.spec
        retry = Result(requeue_after=float(spec.retry_period_seconds))
        ok = Result(requeue_after=self._next_sync(spec))
        advisory = self.advisory or spec.advisory  # the pipeline runs; nothing is written

        def retrying(reason: SyncReason) -> _Outcome:
            return _Outcome(retry, "retry", reason)

        # 0. paused by annotation? then nothing is read, and nothing but the status (and a
        # paused-replicas count, once) is written
        pause = paused(obj, scaler)
        if pause is not None:
            return self._paused(obj, scaler, pause, ok, retry, advisory)

        # 1. may this scaler write its target, and can the target be read?
        target = self._owned_target(obj, scaler, advisory)
        if isinstance(target, Problem):
            return self._stop(obj, scaler, target, retry)

        # 1b. may requests go to serverAddress, and with which headers? (a no-op, without
        # allocations, for the default policy and scalers without serverHeadersFrom)
        asked = scaler  # what the providers get: the same scaler unless headers are merged
        if not self.address_policy.allow_all or spec.server_headers_from:
            resolved = requestable(
                scaler,
                target,
                policy=self.address_policy,
                secret_headers=self.secret_headers,
                memory=self.memory,
            )
            if isinstance(resolved, Problem):
                return self._stop(obj, scaler, resolved, retry, current=target.ready_replicas)
            asked = resolved

        # 2. rollout guard: a Deployment mid-rollout is left alone (not a failure)
        decision = self.steps.guard.check(target)
        if not decision.proceed:
            _log.info("rollout guard defers scaling", scaler=scaler.key, reason=decision.reason)
            drafts = conditions.rollout_in_progress(target, decision.reason)
            self._write_status(obj, scaler, drafts, current=target.ready_replicas)
            return _Outcome(ok, "success", ConditionReason.ROLLOUT_IN_PROGRESS)

        # 3. measure, recommend, pace: pure steps, no API calls. From here on ``spec`` carries
        # the bounds in force now, a schedule's while one is open (the same object otherwise)
        bounds = effective_bounds(spec, self.clock.now())
        spec = with_bounds(spec, bounds)
        started = self.clock.monotonic()  # intervals only: the window and the sync's budget
        measurement = self.steps.fetcher.fetch(asked, float(spec.sync_period_seconds))
        self._report_measurement_errors(obj, scaler, measurement)
        recommendation = self.steps.recommender.recommend(spec, target, measurement)
        fallback = self._fallback(obj, scaler, spec, target, recommendation)
        self.metrics.set_fallback_active(scaler.namespace, scaler.name, fallback is not None)
        paced = fallback or recommendation  # what pacing and the write act on
        history = self.memory.history.get(scaler.uid)
        plan = self.steps.pacer.pace(history, spec, target, paced, started)
        log_decision(
            scaler, target, measurement, paced, plan, spec=spec, schedules=bounds.schedules
        )
        bounds_now = (spec.min_replicas, spec.max_replicas)  # a schedule's while one is open
        self.metrics.observe_evaluation(scaler, target, measurement, plan, bounds=bounds_now)

        # 4. victim hints and the server-side apply of spec.replicas, only when it changes; a
        # scale is recorded in the status it causes anyway (``record``)
        scale: ScaleDecision | None = None
        if plan.changes:  # advisory: the same victims, logged, and the advice; no write
            failure = self._scale(
                obj, scaler, target, plan, paced, started, asked, advisory, spec=spec
            )
            if failure is not None:
                self.memory.history.put(scaler.uid, plan.history_if_failed)
                drafts = conditions.failed_rescale(failure)
                current = target.ready_replicas
                self._write_status(obj, scaler, drafts, current=current, desired=plan.desired)
                return retrying(ConditionReason.FAILED_UPDATE_SCALE)
            if not advisory:
                now = rfc3339(self.clock.now())
                scale = decision_entry(
                    now, spec, measurement, paced, plan, fallback=fallback is not None
                )
                self.metrics.observe_scale(
                    scaler.namespace, scaler.name, "down" if plan.scale_down else "up"
                )
        scaled = scale is not None
        kept = history_after(plan) if advisory else plan.history_if_written
        self.memory.history.put(scaler.uid, kept)
        advised = conditions.advisory(target, plan) if advisory else ()
        # AbleToScale (and, in advisory mode, the Advisory condition beside it)
        able = advised or (conditions.able(target, plan, scaled),)

        # 5. status (written only when it changed)
        if fallback is not None:  # nothing measured too often: spec.fallback drives the fleet
            self._write_status(
                obj,
                scaler,
                (
                    *conditions.fallback_active(spec, measurement, able[0]),
                    *able[1:],  # advisory: the advice beside the fallback's conditions
                ),
                current=target.ready_replicas,
                desired=plan.desired,
                scaled=scaled,
                decision=scale,
            )
            return retrying(ConditionReason.FALLBACK_ACTIVE)
        if recommendation.replicas is None:  # nothing measured: the fleet is held
            self._write_status(
                obj,
                scaler,
                (
                    *conditions.held_for_signal(
                        spec, target, plan, measurement, recommendation, scaled
                    ),
                    *advised,  # advisory: AbleToScale says so, and the advice beside it
                ),
                current=target.ready_replicas,
                desired=plan.desired if plan.changes else None,  # written, or advised
                scaled=scaled,
                decision=scale,
            )
            return retrying(conditions.measurement_failure_reason(spec))
        measured = (
            *able,
            conditions.active(spec, measurement),
            conditions.limited(spec, recommendation, bounds.schedules),
            conditions.ready(advisory=advisory),
        )
        if not self._write_status(
            obj,
            scaler,
            measured,
            current=target.ready_replicas,
            desired=plan.desired,
            scaled=scaled,
            decision=scale,
        ):
            return retrying(FAILED_UPDATE_STATUS)
        return _Outcome(ok, "success", ConditionReason.SCALING)

    def _fallback(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        spec: LLMScalerSpec,
        target: TargetView,
        recommendation: Recommendation,
    ) -> Recommendation | None:
        """Count this evaluation in the run of failures; the fallback's recommendation when it
        applies (``scaling.fallback``). The Events mark where a fallback starts and ends; the
        status says whether one was on, so a restart in between neither repeats nor loses
        them."""
        was_on = _reason(scaler, SCALING_ACTIVE) == ConditionReason.FALLBACK_ACTIVE
        if recommendation.replicas is not None:
            failures = self.memory.failures.succeeded(scaler.uid)
            if was_on:
                message = conditions.fallback_ended_message(failures)
                self._event(obj, "Normal", EventReason.FALLBACK_ENDED, message)
            return None
        failures = self.memory.failures.failed(scaler.uid)
        fallback = fallback_recommendation(spec, target, recommendation.baseline, failures)
        if fallback is not None and fallback.replicas is not None and not was_on:
            message = conditions.fallback_started_message(spec, target, fallback.replicas)
            self._event(obj, "Warning", EventReason.FALLBACK_ACTIVE, message)
        return fallback

    def _next_sync(self, spec: LLMScalerSpec) -> float:
        """Delay to the next evaluation: the scaler's next tick (``scaling.schedule``), or a
        plain period when alignment is off (``align_syncs=False``)."""
        period = float(spec.sync_period_seconds)
        if not self.align_syncs:
            return period
        return next_sync_delay(self.clock.now(), period, phase_of(spec))

    def _stop(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        problem: Problem,
        retry: Result,
        *,
        current: int | None = None,
    ) -> _Outcome:
        """End a sync at a problem found before measuring: its Event, its status, a retry."""
        self._event(obj, "Warning", problem.reason, problem.message)
        self._write_status(obj, scaler, problem.drafts, current=current)
        return _Outcome(retry, "retry", problem.drafts[-1].reason)

    def _paused(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        pause: Pause | Problem,
        ok: Result,
        retry: Result,
        advisory: bool,
    ) -> _Outcome:
        """A paused scaler (``scaling.pause``). Its pacing history is dropped, so on resume the
        stabilization window starts afresh from the fleet as it then is, as after a restart:
        no scale-down follows within a window of unpausing."""
        self.memory.history.forget(scaler.uid)
        if isinstance(pause, Problem):  # a bad paused-replicas value: held, and reported
            return self._stop(obj, scaler, pause, retry)
        if pause.replicas is None:
            self._write_status(obj, scaler, conditions.paused(pause))
            return _Outcome(ok, "success", ConditionReason.PAUSED)
        target = self._owned_target(obj, scaler, advisory)
        if isinstance(target, Problem):
            return self._stop(obj, scaler, target, retry)
        scaled = not advisory and not pause.already_set(scaler.status, target.spec_replicas)
        if scaled:  # the operator's override, as `kubectl scale`: no victim hints, no query
            written = self._write_replicas(obj, target, pause.replicas, ())
            if isinstance(written, str):
                self._write_status(obj, scaler, conditions.failed_rescale(written))
                return _Outcome(retry, "retry", ConditionReason.FAILED_UPDATE_SCALE)
            self._event(
                obj,
                "Normal",
                EventReason.SUCCESSFUL_RESCALE,
                f"New size: {pause.replicas} (was {target.spec_replicas}); "
                f"{PAUSED_REPLICAS_ANNOTATION}",
            )
        drafts = conditions.paused(pause, target, advisory=advisory)
        self._write_status(obj, scaler, drafts, desired=pause.replicas, scaled=scaled)
        return _Outcome(ok, "success", ConditionReason.PAUSED_REPLICAS)

    def _owned_target(
        self, obj: dict[str, Any], scaler: LLMScaler, advisory: bool
    ) -> TargetView | Problem:
        return owned_target(
            obj,
            scaler,
            cache=self.cache,
            client=self.client,
            conflicts=self.steps.conflicts,
            advisory=advisory,
        )

    def _victims(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        target: TargetView,
        plan: Plan,
        started: float,
        asked: LLMScaler,
    ) -> VictimPlan:
        """The pod-deletion-cost hints of a scale-down (``victims``); a failed cost query is a
        Warning Event and newest-first is used."""
        period = float(scaler.spec.sync_period_seconds)
        victims = plan_victims(
            scaler,
            target,
            plan,
            client=self.client,
            selector=self.steps.victims,
            cost_source=self.steps.cost_source,
            time_left=lambda: period - (self.clock.monotonic() - started),
            asked=asked,
        )
        if victims.cost_error is not None:
            self._event(obj, "Warning", EventReason.FAILED_GET_DELETION_COST, victims.cost_error)
        return victims

    def _advise(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        target: TargetView,
        plan: Plan,
        victims: VictimPlan,
        why: str,
    ) -> None:
        """Advisory mode (``scaling.advisory``): what would have been written is logged, and a
        change of advice is an Event; nothing is written to the target or its pods."""
        _log.info(
            "advisory: nothing written",
            scaler=scaler.key,
            would_set_replicas=plan.replicas,
            current=plan.current,
            would_set_deletion_costs={c.pod: c.cost for c in victims.changes},
        )
        if advice_changed(scaler.status, conditions.advice(target, plan)):
            self._event(
                obj,
                "Normal",
                EventReason.WOULD_RESCALE,
                f"Would set {target.kind} {target.name} to {plan.replicas} replicas (it has "
                f"{plan.current}); {why}; advisory mode wrote nothing",
            )

    def _write_replicas(
        self, obj: dict[str, Any], target: TargetView, replicas: int, costs: Sequence[PodCost]
    ) -> WriteResult | str:
        """The replica write through ``steps.writer``; on failure its Event and message."""
        try:
            return self.steps.writer.write(self.client, target, replicas, costs)
        except ApiError as exc:
            message = f"Could not set {target.kind} {target.name} to {replicas} replicas: {exc}"
            self._event(obj, "Warning", EventReason.FAILED_RESCALE, message)
            return message

    def _scale(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        target: TargetView,
        plan: Plan,
        recommendation: Recommendation,
        started: float,
        asked: LLMScaler,
        advisory: bool,
        *,
        spec: LLMScalerSpec,
    ) -> str | None:
        """Victim hints, then the replica write, then events; the failure message or None.
        ``started`` is when the sync began (its budget is one period); ``asked`` is the
        scaler as the providers see it (its resolved headers); ``spec`` carries the bounds in
        force. ``advisory``: the victims are chosen and nothing is written (:meth:`_advise`)."""
        victims = self._victims(obj, scaler, target, plan, started, asked)
        why = conditions.rescale_reason(spec, plan, recommendation)
        if advisory:
            self._advise(obj, scaler, target, plan, victims, why)
            return None
        result = self._write_replicas(obj, target, plan.replicas, victims.changes)
        if isinstance(result, str):
            return result
        for failure in result.cost_failures:
            self._event(obj, "Warning", EventReason.FAILED_SET_DELETION_COST, failure)
        self._event(
            obj,
            "Normal",
            EventReason.SUCCESSFUL_RESCALE,
            f"New size: {plan.replicas} (was {plan.current}); {why}"
            + (f"; held by {plan.held_by}" if plan.held_by else ""),
        )
        return None

    # -- reporting -------------------------------------------------------------------------

    def _report_measurement_errors(
        self, obj: dict[str, Any], scaler: LLMScaler, measurement: Measurement
    ) -> None:
        if not measurement.errors:
            return
        reason = (
            EventReason.FAILED_GET_DECISION
            if scaler.spec.metric_provider == MetricProvider.CUSTOM
            else EventReason.FAILED_GET_METRICS
        )
        for line in measurement.errors:
            self._event(obj, "Warning", reason, line)
        _log.warning("metric fetch failed", scaler=scaler.key, errors=list(measurement.errors))

    def _invalid_spec(self, obj: dict[str, Any], exc: SpecError, retry: float) -> _Outcome:
        message = "Invalid spec: " + "; ".join(exc.problems or (str(exc),))
        self._event(obj, "Warning", EventReason.INVALID_SPEC, message)
        old = LLMScalerStatus.from_dict(obj.get("status") or {}, strict=False)
        generation = (obj.get("metadata") or {}).get("generation")
        new = build_status(
            old,
            conditions.invalid_spec(message),
            now=self.clock.now(),
            generation=generation if isinstance(generation, int) else 0,
            current_replicas=None,
            desired_replicas=None,
            scaled=False,
        )
        self._patch_status(obj, new)
        return _Outcome(Result(requeue_after=retry), "retry", ConditionReason.INVALID_SPEC)

    def _write_status(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        drafts: Sequence[ConditionDraft],
        *,
        current: int | None = None,
        desired: int | None = None,
        scaled: bool = False,
        decision: ScaleDecision | None = None,
    ) -> bool:
        """The one status write of a sync (skipped when nothing changed); False on failure.
        The Preemption condition, and the record of a scale (``decision``), ride along with
        it."""
        drop = () if scaler.spec.preemption is not None else (PREEMPTION,)
        if not (self.advisory or scaler.spec.advisory):
            drop = (*drop, ADVISORY)  # the Advisory condition is there exactly while advisory
        new = build_status(
            scaler.status,
            [*drafts, *conditions.preemption(scaler)],
            now=self.clock.now(),
            generation=scaler.generation,
            current_replicas=current,
            desired_replicas=desired,
            scaled=scaled,
            drop=drop,
            decision=decision,
        )
        if self.memory.status_unchanged(scaler, new):
            return True
        return self._patch_status(obj, new)

    def _patch_status(self, obj: dict[str, Any], new: LLMScalerStatus) -> bool:
        patch = status_patch(obj.get("status"), new)
        if patch is None:
            return True
        meta = obj.get("metadata") or {}
        try:
            self.client.patch(
                API_VERSION,
                KIND,
                str(meta.get("name")),
                patch,
                meta.get("namespace"),
                patch_type="merge",
                subresource="status",
            )
        except ApiError as exc:
            _log.warning("status write failed", error=str(exc), scaler=meta.get("name"))
            return False
        return True

    def _event(
        self, obj: dict[str, Any], type_: EventType, reason: EventReason, message: str
    ) -> None:
        try:
            self.recorder.event(obj, type_, reason, message)
        except Exception:  # events are best effort; never fail a sync over one
            _log.warning("event not recorded", reason=reason, exc_info=True)
