"""The LLMScaler reconciler: one sync, composed of swappable steps.

Order of a sync (each step is a small class from this package, bundled in :class:`Steps`):

    scaler from cache ─ parse ─ one-writer check ─ target lookup ─ rollout guard
      ─ metric fetch ─ recommendation ─ pacing ─ victim selection ─ write ─ status

Every sync ends in ``Result(requeue_after=...)``: the next tick of the sync-period grid when it
worked (periodic evaluation is what drives scaling; the grid is shared by all scalers so that
identical queries coalesce, see ``scaling.schedule``), the retry period when anything failed.
Errors are caught here on purpose: handed to the controller they would land in the workqueue's
exponential backoff, which can grow to many minutes and silently stop a scaler from reacting.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs

from llmscaler_runtime.api.v1alpha1 import (
    API_VERSION,
    KIND,
    LLMScaler,
    LLMScalerSpec,
    LLMScalerStatus,
    MetricProvider,
    ScaleDownBehavior,
    SpecError,
)
from llmscaler_runtime.controller.types import Request, Result
from llmscaler_runtime.kube.errors import ApiError, NotFound
from llmscaler_runtime.log import get_logger
from llmscaler_runtime.scaling.addresses import AddressNotAllowed, AddressPolicy
from llmscaler_runtime.scaling.conflicts import (
    TARGET_INDEX,
    ConflictResolver,
    OldestScalerWins,
    target_index,
)
from llmscaler_runtime.scaling.guards import DeploymentRolloutGuard, RolloutGuard
from llmscaler_runtime.scaling.http import MetricHttpClient
from llmscaler_runtime.scaling.pacing import HistoryStore, Pacer, ScaleDownPacer
from llmscaler_runtime.scaling.providers.base import (
    CostSource,
    MetricError,
    MetricFetcher,
    ProviderFetcher,
)
from llmscaler_runtime.scaling.providers.decision import DecisionProvider
from llmscaler_runtime.scaling.providers.prometheus import PrometheusProvider
from llmscaler_runtime.scaling.recommend import HpaRecommender, Recommender
from llmscaler_runtime.scaling.schedule import next_sync_delay, phase_of
from llmscaler_runtime.scaling.secrets import (
    SECRET_FORBIDDEN,
    SecretHeaderError,
    SecretHeaderResolver,
)
from llmscaler_runtime.scaling.status import (
    ABLE_TO_SCALE,
    PREEMPTION,
    READY,
    SCALING_ACTIVE,
    SCALING_LIMITED,
    ConditionDraft,
    build_status,
    status_patch,
)
from llmscaler_runtime.scaling.target import TargetError, target_view
from llmscaler_runtime.scaling.types import (
    Measurement,
    Plan,
    PodCost,
    Recommendation,
    TargetView,
)
from llmscaler_runtime.scaling.victims import (
    CacheAwareVictimSelector,
    VictimSelector,
    pods_from_objects,
    selector_string,
)
from llmscaler_runtime.scaling.write import FIELD_MANAGER, ReplicaWriter, SsaReplicaWriter

__all__ = [
    "DEFAULT_RETRY_PERIOD",
    "Clock",
    "EventSink",
    "LLMScalerReconciler",
    "ScalerCache",
    "ScalerClient",
    "Steps",
    "SystemClock",
    "default_steps",
]

DEFAULT_RETRY_PERIOD = 10.0
EventType = Literal["Normal", "Warning"]
_log = get_logger("llmscaler.scaling")
_stdlib_log = logging.getLogger("llmscaler.scaling")  # the same logger, for cheap level checks


class Clock(Protocol):
    """The reconciler's two clocks, injected so timing rules test without sleeping.

    ``now`` is wall-clock seconds since the epoch: for timestamps and the sync grid, which all
    scalers (and all managers) must agree on. ``monotonic`` is for every interval: the
    stabilization window's history and a sync's time budget. A wall clock that steps (NTP, a
    VM resumed) must neither expire a window early, and so scale down too soon, nor freeze it.
    """

    def now(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class ScalerCache(Protocol):
    """The reads the reconciler makes from the informer cache."""

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None: ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]: ...


class ScalerClient(Protocol):
    """The direct API calls the reconciler makes (a subset of ``kube.Client``)."""

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...

    def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> tuple[list[dict[str, Any]], str]: ...

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: Literal["merge", "strategic", "json"] = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


class EventSink(Protocol):
    """Where Kubernetes Events go (``events.EventRecorder`` aggregates repeats)."""

    def event(self, obj: dict[str, Any], type_: EventType, reason: str, message: str) -> None: ...


@attrs.frozen
class Steps:
    """The pipeline's steps; replace one with ``attrs.evolve(default_steps(), fetcher=...)``."""

    fetcher: MetricFetcher
    cost_source: CostSource | None = None
    guard: RolloutGuard = attrs.field(factory=DeploymentRolloutGuard)
    recommender: Recommender = attrs.field(factory=HpaRecommender)
    pacer: Pacer = attrs.field(factory=ScaleDownPacer)
    victims: VictimSelector = attrs.field(factory=CacheAwareVictimSelector)
    writer: ReplicaWriter = attrs.field(factory=SsaReplicaWriter)
    conflicts: ConflictResolver = attrs.field(factory=OldestScalerWins)


def default_steps(
    http: MetricHttpClient | None = None, *, clock: Callable[[], float] = time.time
) -> Steps:
    """The standard pipeline, with both providers sharing one HTTP client.

    ``clock`` is the wall clock the providers use to find the sync tick their fetches are
    shared within (the same grid the reconciler schedules syncs on).
    """
    http = http or MetricHttpClient()
    prometheus = PrometheusProvider(http, clock)
    return Steps(
        fetcher=ProviderFetcher(prometheus=prometheus, custom=DecisionProvider(http, clock)),
        cost_source=prometheus,
    )


def _nothing_measured(rec: Recommendation) -> bool:
    """True when nothing could be measured this sync."""
    return rec.replicas is None


def _cond(type_: str, ok: bool | None, reason: str, message: str) -> ConditionDraft:
    return ConditionDraft(type_, ok, reason, message)


def _retry_period(obj: Mapping[str, Any]) -> float:
    """retryPeriodSeconds straight from the raw object, for specs that do not parse."""
    spec = obj.get("spec")
    value = spec.get("retryPeriodSeconds") if isinstance(spec, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_RETRY_PERIOD


class _SyncFailed(Exception):
    """Ends a sync early with a status already decided; carries the drafts to write."""

    def __init__(self, drafts: Sequence[ConditionDraft]) -> None:
        super().__init__(drafts[0].message if drafts else "sync failed")
        self.drafts = tuple(drafts)


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
        field_manager: str = FIELD_MANAGER,
        leader_check: Callable[[], bool] | None = None,
        history: HistoryStore | None = None,
        align_syncs: bool = True,
        address_policy: AddressPolicy | None = None,
        secret_headers: SecretHeaderResolver | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.steps = steps or default_steps()
        if field_manager != FIELD_MANAGER and isinstance(self.steps.writer, SsaReplicaWriter):
            self.steps = attrs.evolve(self.steps, writer=SsaReplicaWriter(field_manager))
        self.clock: Clock = clock or SystemClock()
        self.leader_check = leader_check
        self.history = history or HistoryStore()
        self.align_syncs = align_syncs
        self.address_policy = address_policy or AddressPolicy()
        self.secret_headers = secret_headers or SecretHeaderResolver(client)
        # uid -> (parsed scaler, its headers, the scaler as the providers see it): the
        # effective scaler is rebuilt only when the spec or a header value changed
        self._effective: dict[str, tuple[LLMScaler, Mapping[str, str], LLMScaler]] = {}
        self._uids: dict[str, str] = {}
        # uid -> (resourceVersion, parsed scaler, raw status == its typed form re-encoded):
        # a scaler is re-parsed only when it changed
        self._parsed: dict[str, tuple[str, LLMScaler, bool]] = {}
        self._uids_lock = threading.Lock()

    # -- entry point ---------------------------------------------------------------------

    def _parse(self, obj: dict[str, Any], uid: str) -> LLMScaler:
        """The typed scaler, parsed once per resourceVersion (the cache hands out the same
        object until it changes, so re-validating it every period would be wasted work)."""
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        with self._uids_lock:
            cached = self._parsed.get(uid)
        if rv and cached is not None and cached[0] == rv:
            return cached[1]
        scaler = LLMScaler.from_dict(obj)
        if rv:
            canonical = scaler.status.to_dict() == (obj.get("status") or {})
            with self._uids_lock:
                self._parsed[uid] = (rv, scaler, canonical)
        return scaler

    def _status_unchanged(self, scaler: LLMScaler, new: LLMScalerStatus) -> bool:
        """True when ``new`` is exactly what the server holds: equal to the parsed status, and
        that status re-encodes to the raw one (checked once per resourceVersion). The steady
        state then skips encoding and diffing the raw status every period."""
        if new != scaler.status:
            return False
        with self._uids_lock:
            cached = self._parsed.get(scaler.uid)
        return cached is not None and cached[1] is scaler and cached[2]

    def _next_sync(self, spec: LLMScalerSpec) -> float:
        """Delay to the next evaluation: the scaler's next tick (``scaling.schedule``), or a
        plain period when alignment is off (``align_syncs=False``)."""
        period = float(spec.sync_period_seconds)
        if not self.align_syncs:
            return period
        return next_sync_delay(self.clock.now(), period, phase_of(spec))

    def _forget(self, uid: str) -> None:
        """Drop everything kept for a scaler that is gone: its pacing history and parse."""
        self.history.forget(uid)
        with self._uids_lock:
            self._parsed.pop(uid, None)
            self._effective.pop(uid, None)

    def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        obj = self.cache.get(API_VERSION, KIND, request.name, request.namespace)
        if obj is None:
            with self._uids_lock:
                uid = self._uids.pop(key, None)
            if uid is not None:
                self._forget(uid)
                _log.info("scaler deleted; history dropped", scaler=key)
            return Result()
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        with self._uids_lock:
            previous = self._uids.get(key)
            self._uids[key] = uid
        if previous is not None and previous != uid:
            self._forget(previous)  # deleted and re-created under the same name
        if meta.get("deletionTimestamp"):
            return Result()
        retry = _retry_period(obj)
        if self.leader_check is not None and not self.leader_check():
            return Result(requeue_after=retry)
        try:
            scaler = self._parse(obj, uid)
        except SpecError as exc:
            return self._invalid_spec(obj, exc, retry)
        try:
            return self._sync(obj, scaler)
        except Exception as exc:  # never let a bug park the scaler in exponential backoff
            _log.exception("sync failed unexpectedly", scaler=key)
            self._event(obj, "Warning", "SyncFailed", f"sync failed: {exc}")
            self._write_status(
                obj,
                scaler,
                [_cond(READY, False, "SyncFailed", f"The last sync failed: {exc}; retrying.")],
            )
            return Result(requeue_after=float(scaler.spec.retry_period_seconds))

    # -- the pipeline ----------------------------------------------------------------------

    def _sync(self, obj: dict[str, Any], scaler: LLMScaler) -> Result:
        spec = scaler.spec
        retry = Result(requeue_after=float(spec.retry_period_seconds))
        ok = Result(requeue_after=self._next_sync(spec))

        # 1. may this scaler write its target, and can the target be read?
        try:
            target = self._checked_target(obj, scaler)
        except _SyncFailed as failed:
            self._write_status(obj, scaler, failed.drafts)
            return retry

        # 1b. may requests go to serverAddress, and with which headers? (a no-op, without
        # allocations, for the default policy and scalers without serverHeadersFrom)
        asked = scaler  # what the providers get: the same scaler unless headers are merged
        if not self.address_policy.allow_all or spec.server_headers_from:
            try:
                asked = self._requestable(obj, scaler, target)
            except _SyncFailed as failed:
                self._write_status(obj, scaler, failed.drafts, current=target.ready_replicas)
                return retry

        # 2. rollout guard: a Deployment mid-rollout is left alone (not a failure)
        decision = self.steps.guard.check(target)
        if not decision.proceed:
            _log.info("rollout guard defers scaling", scaler=scaler.key, reason=decision.reason)
            drafts = self._rollout_drafts(target, decision.reason)
            self._write_status(obj, scaler, drafts, current=target.ready_replicas)
            return ok

        # 3. measure, recommend, pace: pure steps, no API calls
        now = self.clock.monotonic()  # intervals only: the window and the sync's budget
        measurement = self.steps.fetcher.fetch(asked, float(spec.sync_period_seconds))
        self._report_measurement_errors(obj, scaler, measurement)
        recommendation = self.steps.recommender.recommend(spec, target, measurement)
        history = self.history.get(scaler.uid)
        plan = self.steps.pacer.pace(history, spec, target, recommendation, now)
        self._log_decision(scaler, target, measurement, recommendation, plan)

        # 4. victim hints and the server-side apply of spec.replicas, only when it changes
        scaled = False
        if plan.changes:
            failure = self._scale(obj, scaler, target, plan, recommendation, now, asked)
            if failure is not None:
                self.history.put(scaler.uid, plan.history_if_failed)
                drafts = [
                    _cond(ABLE_TO_SCALE, False, "FailedUpdateScale", failure + "; retrying."),
                    _cond(READY, False, "FailedUpdateScale", failure),
                ]
                self._write_status(
                    obj, scaler, drafts, current=target.ready_replicas, desired=plan.desired
                )
                return retry
            scaled = True
        self.history.put(scaler.uid, plan.history_if_written)

        # 5. status (written only when it changed)
        if _nothing_measured(recommendation):
            self._write_status(
                obj,
                scaler,
                self._hold_drafts(scaler, target, plan, measurement, recommendation, scaled),
                current=target.ready_replicas,
                desired=plan.desired if scaled else None,
                scaled=scaled,
            )
            return retry
        drafts = [
            self._able_draft(target, plan, scaled),
            self._active_draft(scaler, measurement),
            self._limited_draft(scaler, recommendation),
            _cond(READY, True, "Scaling", "The scaler is measuring and scaling its target."),
        ]
        if not self._write_status(
            obj,
            scaler,
            drafts,
            current=target.ready_replicas,
            desired=plan.desired,
            scaled=scaled,
        ):
            return retry
        return ok

    def _scale(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        target: TargetView,
        plan: Plan,
        recommendation: Recommendation,
        started: float,
        asked: LLMScaler | None = None,
    ) -> str | None:
        """Victim hints, then the replica write, then events; the failure message or None.
        ``started`` is when the sync began (its budget is one period); ``asked`` is the
        scaler as the providers see it (its resolved headers)."""
        costs = self._victims(obj, scaler, target, plan, started, asked or scaler)
        try:
            result = self.steps.writer.write(self.client, target, plan.replicas, costs)
        except ApiError as exc:
            message = (
                f"Could not set {target.kind} {target.name} to {plan.replicas} replicas: {exc}"
            )
            self._event(obj, "Warning", "FailedRescale", message)
            return message
        for failure in result.cost_failures:
            self._event(obj, "Warning", "FailedSetDeletionCost", failure)
        spec = scaler.spec
        if plan.current > spec.max_replicas and plan.replicas == spec.max_replicas:
            why = f"above maxReplicas ({spec.max_replicas})"
        elif plan.current < spec.min_replicas and plan.replicas == spec.min_replicas:
            why = f"below minReplicas ({spec.min_replicas})"
        else:
            why = recommendation.reason
        self._event(
            obj,
            "Normal",
            "SuccessfulRescale",
            f"New size: {plan.replicas} (was {plan.current}); {why}"
            + (f"; held by {plan.held_by}" if plan.held_by else ""),
        )
        return None

    def _requestable(self, obj: dict[str, Any], scaler: LLMScaler, target: TargetView) -> LLMScaler:
        """The scaler as the providers see it (``serverHeadersFrom`` merged into the headers),
        once its serverAddress passed the address policy; raises _SyncFailed holding the fleet.
        No request is sent and no Secret is read for an address the policy refuses."""
        spec = scaler.spec
        holding = _cond(
            ABLE_TO_SCALE,
            True,
            "HoldingReplicas",
            f"Holding {target.spec_replicas} replicas until the metric source can be asked.",
        )
        try:
            self.address_policy.check(spec.server_address)
        except AddressNotAllowed as exc:
            message = (
                f"serverAddress {spec.server_address!r} is not allowed by the manager's "
                f"--allowed-server-addresses: {exc}; no request was sent."
            )
            self._event(obj, "Warning", "ServerAddressNotAllowed", message)
            raise _SyncFailed(
                [
                    holding,
                    _cond(SCALING_ACTIVE, False, "ServerAddressNotAllowed", message),
                    _cond(READY, False, "ServerAddressNotAllowed", message),
                ]
            ) from None
        if not spec.server_headers_from:
            return scaler
        try:
            headers = self.secret_headers.headers(
                scaler.namespace, spec.server_headers_from, spec.server_headers
            )
        except SecretHeaderError as exc:
            message = f"A serverHeadersFrom value cannot be read: {exc}; holding the fleet."
            reason = "SecretForbidden" if exc.reason == SECRET_FORBIDDEN else "FailedGetSecret"
            self._event(obj, "Warning", reason, message)
            raise _SyncFailed(
                [
                    holding,
                    _cond(SCALING_ACTIVE, False, reason, message),
                    _cond(READY, False, reason, message),
                ]
            ) from None
        with self._uids_lock:
            cached = self._effective.get(scaler.uid)
        if cached is not None and cached[0] is scaler and cached[1] == headers:
            return cached[2]
        effective = attrs.evolve(scaler, spec=attrs.evolve(spec, server_headers=headers))
        with self._uids_lock:
            self._effective[scaler.uid] = (scaler, headers, effective)
        return effective

    def _rivals(self, obj: dict[str, Any], scaler: LLMScaler) -> list[dict[str, Any]]:
        """Scalers that may share this one's target: from the target index when the cache
        has it (``setup`` registers it), else every scaler of the namespace."""
        by_index = getattr(self.cache, "by_index", None)
        keys = target_index(obj)
        if by_index is not None and keys:
            try:
                return list(by_index(API_VERSION, KIND, TARGET_INDEX, keys[0]))
            except KeyError:  # a cache wired without the index
                pass
        return self.cache.list(API_VERSION, KIND, scaler.namespace)

    def _checked_target(self, obj: dict[str, Any], scaler: LLMScaler) -> TargetView:
        """Ownership check and target lookup; raises _SyncFailed with the status to write."""
        ref = scaler.spec.target_ref
        ownership = self.steps.conflicts.resolve(obj, self._rivals(obj, scaler))
        if not ownership.owner:
            message = (
                f"LLMScaler {ownership.other!r} is older and already scales {ref.kind} "
                f"{ref.name}; this scaler writes nothing. Delete one of the two."
            )
            self._event(obj, "Warning", "TargetOwnedByAnotherScaler", message)
            raise _SyncFailed(
                [
                    _cond(SCALING_ACTIVE, False, "TargetOwnedByAnotherScaler", message),
                    _cond(READY, False, "TargetOwnedByAnotherScaler", message),
                ]
            )
        raw, why = self._get_target(scaler)
        if raw is None:
            message = (
                f"{ref.kind} {ref.name!r} ({ref.api_version}) was not found in namespace "
                f"{scaler.namespace!r} ({why}); scaling starts once it exists."
            )
            self._event(obj, "Warning", "FailedGetTarget", message)
            raise _SyncFailed(
                [
                    _cond(ABLE_TO_SCALE, False, "TargetNotFound", message),
                    _cond(READY, False, "TargetNotFound", message),
                ]
            )
        try:
            return target_view(raw)
        except TargetError as exc:
            message = f"The target cannot be scaled: {exc}."
            self._event(obj, "Warning", "InvalidTarget", message)
            raise _SyncFailed(
                [
                    _cond(ABLE_TO_SCALE, False, "InvalidTarget", message),
                    _cond(READY, False, "InvalidTarget", message),
                ]
            ) from None

    def _get_target(self, scaler: LLMScaler) -> tuple[dict[str, Any] | None, str]:
        """The target from the cache, else straight from the API; or None and why not.

        A kind the server does not serve is detected through the client's RESTMapper first:
        asking the cache for it would start an informer that can never sync and block this
        worker until the cache's sync timeout, on every retry.
        """
        ref = scaler.spec.target_ref
        mapper = getattr(self.client, "mapper", None)
        if mapper is not None:
            try:
                mapper.resource_for(ref.api_version, ref.kind)
            except LookupError:
                return None, f"the API server does not serve kind {ref.kind} in {ref.api_version}"
        try:
            cached = self.cache.get(ref.api_version, ref.kind, ref.name, scaler.namespace)
        except (LookupError, TimeoutError, RuntimeError) as exc:
            _log.info("target not readable from the cache; reading it directly", error=str(exc))
            cached = None
        if cached is not None:
            return cached, ""
        try:
            return self.client.get(ref.api_version, ref.kind, ref.name, scaler.namespace), ""
        except NotFound:
            return None, "it does not exist"
        except LookupError:
            return None, f"the API server does not serve kind {ref.kind} in {ref.api_version}"

    def _victims(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        target: TargetView,
        plan: Plan,
        started: float,
        asked: LLMScaler | None = None,
    ) -> tuple[PodCost, ...]:
        """Deletion-cost changes for a Deployment scale-down under CacheAware; else none."""
        spec = scaler.spec
        if (
            not plan.scale_down
            or plan.replicas == 0  # every pod goes: ranking them would only cost writes
            or target.kind != "Deployment"
            or target.group != "apps"
            or spec.scale_down.behavior != ScaleDownBehavior.CACHE_AWARE
            or target.selector is None
        ):
            return ()
        try:
            selector = selector_string(target.selector)
            items, _ = self.client.list_all("v1", "Pod", scaler.namespace, label_selector=selector)
        except (ApiError, ValueError) as exc:
            _log.warning("cannot list the target's pods; scaling without hints", error=str(exc))
            return ()
        pods = pods_from_objects(items)
        costs: Mapping[str, int] | None = None
        query = spec.scale_down.deletion_cost_query
        if query and spec.metric_provider == MetricProvider.CUSTOM:
            _log.info("deletionCostQuery ignored under the Custom provider", scaler=scaler.key)
        elif query and self.steps.cost_source is not None:
            # The metric fetch may have spent most of the period on retries; the cost query
            # gets what is left, so one sync never runs into the next.
            left = float(spec.sync_period_seconds) - (self.clock.monotonic() - started)
            try:
                if left <= 0:
                    raise MetricError("no time left in this sync period after the metric fetch")
                costs = self.steps.cost_source.pod_costs(asked or scaler, left)
            except MetricError as exc:
                self._event(
                    obj,
                    "Warning",
                    "FailedGetDeletionCost",
                    f"deletionCostQuery failed ({exc}); removing the newest pods first instead",
                )
        remove = plan.current - plan.replicas
        changes = self.steps.victims.select(pods, remove, costs)
        _log.info(
            "victim selection",
            scaler=scaler.key,
            remove=remove,
            pods=len(pods),
            source="deletionCostQuery" if costs is not None else "newest-first",
            changes={c.pod: c.cost for c in changes},
        )
        return changes

    # -- reporting -------------------------------------------------------------------------

    def _report_measurement_errors(
        self, obj: dict[str, Any], scaler: LLMScaler, measurement: Measurement
    ) -> None:
        if not measurement.errors:
            return
        reason = (
            "FailedGetDecision"
            if scaler.spec.metric_provider == MetricProvider.CUSTOM
            else "FailedGetMetrics"
        )
        for line in measurement.errors:
            self._event(obj, "Warning", reason, line)
        _log.warning("metric fetch failed", scaler=scaler.key, errors=list(measurement.errors))

    @staticmethod
    def _rollout_drafts(target: TargetView, reason: str) -> list[ConditionDraft]:
        return [
            _cond(
                ABLE_TO_SCALE,
                False,
                "RolloutInProgress",
                f"Scaling waits for the rollout of {target.kind} {target.name} to finish: "
                f"{reason}.",
            ),
            _cond(READY, True, "RolloutInProgress", "Waiting for the rollout to settle."),
        ]

    @staticmethod
    def _hold_drafts(
        scaler: LLMScaler,
        target: TargetView,
        plan: Plan,
        measurement: Measurement,
        recommendation: Recommendation,
        scaled: bool,
    ) -> list[ConditionDraft]:
        """Nothing could be measured: the fleet is held (within the bounds)."""
        spec = scaler.spec
        reason = (
            "FailedGetDecision"
            if spec.metric_provider == MetricProvider.CUSTOM
            else "FailedGetMetrics"
        )
        detail = "; ".join(measurement.errors) or recommendation.reason
        holding = (
            f"Set {target.kind} {target.name} to {plan.replicas} replicas to respect the "
            f"bounds [{spec.min_replicas}, {spec.max_replicas}], then holding there"
            if scaled
            else f"Holding {target.spec_replicas} replicas"
        )
        return [
            _cond(
                ABLE_TO_SCALE, True, "HoldingReplicas", f"{holding} until the signal can be read."
            ),
            _cond(
                SCALING_ACTIVE,
                False,
                reason,
                f"No usable signal from {spec.server_address}: {detail}",
            ),
            _cond(READY, False, reason, f"The last sync could not measure: {detail}"),
        ]

    def _able_draft(self, target: TargetView, plan: Plan, scaled: bool) -> ConditionDraft:
        if scaled:
            extra = (
                f" (step capped; heading to {plan.desired})" if plan.held_by == "step-cap" else ""
            )
            return _cond(
                ABLE_TO_SCALE,
                True,
                "SucceededRescale",
                f"Set {target.kind} {target.name} to {plan.replicas} replicas{extra}.",
            )
        if plan.held_by == "settle":
            return _cond(
                ABLE_TO_SCALE,
                True,
                "WaitingForFleetToSettle",
                f"Next scale-down step waits until all {target.spec_replicas} replicas are "
                f"ready and none is terminating (ready {target.ready_replicas}, terminating "
                f"{target.terminating_replicas or 0}).",
            )
        if plan.held_by == "stabilization":
            return _cond(
                ABLE_TO_SCALE,
                True,
                "ScaleDownStabilized",
                f"Holding at {plan.desired} replicas: a higher recommendation was seen within "
                "the scale-down stabilization window.",
            )
        return _cond(
            ABLE_TO_SCALE, True, "ReadyForNewScale", "The recommendation matches the target."
        )

    def _active_draft(self, scaler: LLMScaler, measurement: Measurement) -> ConditionDraft:
        if scaler.spec.metric_provider == MetricProvider.CUSTOM:
            return _cond(
                SCALING_ACTIVE,
                True,
                "ValidDecisionFound",
                f"The decision server asked for {measurement.decision} replicas.",
            )
        skipped = [r for r in measurement.readings if r.value is None]
        if skipped:
            names = ", ".join(r.name for r in skipped)
            return _cond(
                SCALING_ACTIVE,
                True,
                "SomeMetricsSkipped",
                f"Scaling on the remaining metrics; skipped: {names} (see events).",
            )
        return _cond(
            SCALING_ACTIVE, True, "ValidMetricFound", "Every metric returned a usable value."
        )

    def _limited_draft(self, scaler: LLMScaler, rec: Recommendation) -> ConditionDraft:
        spec = scaler.spec
        if rec.limited == "TooManyReplicas":
            return _cond(
                SCALING_LIMITED,
                True,
                "TooManyReplicas",
                f"The signal asks for more than maxReplicas ({spec.max_replicas}); raise "
                "maxReplicas if the fleet is overloaded.",
            )
        if rec.limited == "TooFewReplicas":
            return _cond(
                SCALING_LIMITED,
                True,
                "TooFewReplicas",
                f"The signal asks for fewer than minReplicas ({spec.min_replicas}); lower "
                "minReplicas (0 allows scale to zero) if the fleet should shrink further.",
            )
        return _cond(
            SCALING_LIMITED,
            False,
            "DesiredWithinRange",
            f"The recommendation is within [{spec.min_replicas}, {spec.max_replicas}].",
        )

    @staticmethod
    def _preemption_draft(scaler: LLMScaler) -> list[ConditionDraft]:
        if scaler.spec.preemption is None:
            return []
        return [
            _cond(
                PREEMPTION,
                False,
                "NotImplemented",
                "spec.preemption is accepted but not implemented: it has no effect on scaling.",
            )
        ]

    def _invalid_spec(self, obj: dict[str, Any], exc: SpecError, retry: float) -> Result:
        message = "Invalid spec: " + "; ".join(exc.problems or (str(exc),))
        self._event(obj, "Warning", "InvalidSpec", message)
        old = LLMScalerStatus.from_dict(obj.get("status") or {}, strict=False)
        meta = obj.get("metadata") or {}
        generation = meta.get("generation")
        new = build_status(
            old,
            [
                _cond(SCALING_ACTIVE, False, "InvalidSpec", message),
                _cond(READY, False, "InvalidSpec", message),
            ],
            now=self.clock.now(),
            generation=generation if isinstance(generation, int) else 0,
            current_replicas=None,
            desired_replicas=None,
            scaled=False,
        )
        self._patch_status(obj, new)
        return Result(requeue_after=retry)

    def _write_status(
        self,
        obj: dict[str, Any],
        scaler: LLMScaler,
        drafts: Sequence[ConditionDraft],
        *,
        current: int | None = None,
        desired: int | None = None,
        scaled: bool = False,
    ) -> bool:
        # the Preemption condition rides along with every status this sync writes
        drop = () if scaler.spec.preemption is not None else (PREEMPTION,)
        new = build_status(
            scaler.status,
            [*drafts, *self._preemption_draft(scaler)],
            now=self.clock.now(),
            generation=scaler.generation,
            current_replicas=current,
            desired_replicas=desired,
            scaled=scaled,
            drop=drop,
        )
        if self._status_unchanged(scaler, new):
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

    def _event(self, obj: dict[str, Any], type_: EventType, reason: str, message: str) -> None:
        try:
            self.recorder.event(obj, type_, reason, message)
        except Exception:  # events are best effort; never fail a sync over one
            _log.warning("event not recorded", reason=reason, exc_info=True)

    @staticmethod
    def _log_decision(
        scaler: LLMScaler,
        target: TargetView,
        measurement: Measurement,
        rec: Recommendation,
        plan: Plan,
    ) -> None:
        spec = scaler.spec
        # A decision that changes or holds something is worth a line at info; a steady
        # sync says the same thing every period, so it only shows at debug.
        eventful = plan.changes or plan.held_by is not None or _nothing_measured(rec)
        if not eventful and not _stdlib_log.isEnabledFor(logging.DEBUG):
            return  # the common case at scale; skip assembling a line nobody will see
        emit = _log.info if eventful else _log.debug
        emit(
            "scaling decision",
            scaler=scaler.key,
            target=f"{target.kind}/{target.name}",
            provider=measurement.provider,
            metrics=[
                {"name": r.name, "value": r.value, "target": r.target, "error": r.error}
                for r in measurement.readings
            ],
            decision=measurement.decision,
            spec_replicas=target.spec_replicas,
            ready_replicas=target.ready_replicas,
            terminating_replicas=target.terminating_replicas,
            baseline=rec.baseline,
            votes={v.name: v.replicas for v in rec.per_metric},
            unclamped=rec.unclamped,
            recommended=rec.replicas,
            min_replicas=spec.min_replicas,
            max_replicas=spec.max_replicas,
            stabilization_window_seconds=spec.scale_down.stabilization_window_seconds,
            max_step_replicas=spec.scale_down.max_step_replicas,
            desired=plan.desired,
            write=plan.replicas if plan.changes else None,
            held_by=plan.held_by,
        )
