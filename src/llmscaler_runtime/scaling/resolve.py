"""Before measuring: may this scaler write its target, can the target be read, and where may
the metric requests go with which headers.

Each function returns the value the next step needs, or a :class:`Problem`: a typed value
holding the Event to emit and the conditions to write. The reconciler decides what to do with
a problem (emit, write status, retry); nothing here raises for control flow or talks to the
event sink, so each check is tested directly on fakes of the ports.

The order matters and is the reconciler's: the pause annotations first (a paused scaler reads
nothing), then ownership (a scaler that is not the target's one writer must not even read it
on every sync), then the target, then the address policy, then the Secrets (no Secret is read
for an address the policy refuses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, LLMScaler
from llmscaler_runtime.kube.errors import NotFound
from llmscaler_runtime.log import get_logger
from llmscaler_runtime.scaling import conditions
from llmscaler_runtime.scaling.addresses import AddressNotAllowed, AddressPolicy
from llmscaler_runtime.scaling.advisory import writers
from llmscaler_runtime.scaling.conflicts import (
    TARGET_INDEX,
    ConflictResolver,
    Ownership,
    target_index,
)
from llmscaler_runtime.scaling.memory import ScalerMemory
from llmscaler_runtime.scaling.pause import InvalidPause, Pause, pause_of
from llmscaler_runtime.scaling.ports import ScalerCache, ScalerClient
from llmscaler_runtime.scaling.reasons import ConditionReason, EventReason
from llmscaler_runtime.scaling.secrets import (
    SECRET_FORBIDDEN,
    SecretHeaderError,
    SecretHeaderResolver,
)
from llmscaler_runtime.scaling.status import ConditionDraft
from llmscaler_runtime.scaling.target import TargetError, target_view
from llmscaler_runtime.scaling.types import TargetView

__all__ = ["Problem", "fetch_target", "owned_target", "paused", "requestable", "rivals"]

_log = get_logger("llmscaler.scaling")


@attrs.frozen
class Problem:
    """Why this sync stops before measuring: a Warning Event and the conditions to write.

    ``reason`` is the Event's reason; ``drafts`` are the conditions of the status to write.
    """

    reason: EventReason
    message: str
    drafts: tuple[ConditionDraft, ...]


def paused(obj: dict[str, Any], scaler: LLMScaler) -> Pause | Problem | None:
    """How the pause annotations hold this scaler (``scaling.pause``); a value that cannot be
    used is a Problem, and the scaler is held as paused meanwhile. Asked before anything
    else, so a paused scaler reads nothing, not even its target."""
    pause = pause_of(obj, scaler.spec.max_replicas)
    if isinstance(pause, InvalidPause):
        drafts = conditions.invalid_pause(pause.message)
        return Problem(EventReason.INVALID_PAUSED_REPLICAS, pause.message, drafts)
    return pause


def rivals(cache: ScalerCache, obj: dict[str, Any], scaler: LLMScaler) -> list[dict[str, Any]]:
    """Scalers that may share this one's target and write it: from the target index when the
    cache has it (``setup`` registers it), else every scaler of the namespace; advisory ones
    left out (``scaling.advisory``)."""
    keys = target_index(obj)
    if keys:
        try:
            return writers(list(cache.by_index(API_VERSION, KIND, TARGET_INDEX, keys[0])))
        except KeyError:  # a cache wired without the index
            pass
    return writers(cache.list(API_VERSION, KIND, scaler.namespace))


def owned_target(
    obj: dict[str, Any],
    scaler: LLMScaler,
    *,
    cache: ScalerCache,
    client: ScalerClient,
    conflicts: ConflictResolver,
    advisory: bool = False,
) -> TargetView | Problem:
    """The target, once this scaler is its one writer and it was read and is scalable.

    Advisory scalers write nothing, so they are outside the one-writer rule both ways: an
    ``advisory`` scaler is not checked, and advisory rivals are not weighed.
    """
    ref = scaler.spec.target_ref
    ownership = Ownership(True) if advisory else conflicts.resolve(obj, rivals(cache, obj, scaler))
    if not ownership.owner:
        message = (
            f"LLMScaler {ownership.other!r} is older and already scales {ref.kind} "
            f"{ref.name}; this scaler writes nothing. Delete one of the two."
        )
        return Problem(
            EventReason.TARGET_OWNED_BY_ANOTHER_SCALER,
            message,
            conditions.blocked(ConditionReason.TARGET_OWNED_BY_ANOTHER_SCALER, message),
        )
    raw, why = fetch_target(scaler, cache=cache, client=client)
    if raw is None:
        message = (
            f"{ref.kind} {ref.name!r} ({ref.api_version}) was not found in namespace "
            f"{scaler.namespace!r} ({why}); scaling starts once it exists."
        )
        drafts = conditions.blocked(ConditionReason.TARGET_NOT_FOUND, message, able=True)
        return Problem(EventReason.FAILED_GET_TARGET, message, drafts)
    try:
        return target_view(raw)
    except TargetError as exc:
        message = f"The target cannot be scaled: {exc}."
        drafts = conditions.blocked(ConditionReason.INVALID_TARGET, message, able=True)
        return Problem(EventReason.INVALID_TARGET, message, drafts)


def fetch_target(
    scaler: LLMScaler, *, cache: ScalerCache, client: ScalerClient
) -> tuple[dict[str, Any] | None, str]:
    """The target from the cache, else straight from the API; or None and why not.

    A kind the server does not serve is detected through the client's RESTMapper first:
    asking the cache for it would start an informer that can never sync and block this
    worker until the cache's sync timeout, on every retry.
    """
    ref = scaler.spec.target_ref
    unserved = f"the API server does not serve kind {ref.kind} in {ref.api_version}"
    mapper = client.mapper
    if mapper is not None:
        try:
            mapper.resource_for(ref.api_version, ref.kind)
        except LookupError:
            return None, unserved
    try:
        cached = cache.get(ref.api_version, ref.kind, ref.name, scaler.namespace)
    except (LookupError, TimeoutError, RuntimeError) as exc:
        _log.info("target not readable from the cache; reading it directly", error=str(exc))
        cached = None
    if cached is not None:
        return cached, ""
    try:
        return client.get(ref.api_version, ref.kind, ref.name, scaler.namespace), ""
    except NotFound:
        return None, "it does not exist"
    except LookupError:
        return None, unserved


def requestable(
    scaler: LLMScaler,
    target: TargetView,
    *,
    policy: AddressPolicy,
    secret_headers: SecretHeaderResolver,
    memory: ScalerMemory,
) -> LLMScaler | Problem:
    """The scaler as the providers see it (``serverHeadersFrom`` merged into the headers),
    once its serverAddress passed the address policy. No request is sent and no Secret is
    read for an address the policy refuses."""
    spec = scaler.spec
    try:
        policy.check(spec.server_address)
    except AddressNotAllowed as exc:
        message = (
            f"serverAddress {spec.server_address!r} is not allowed by the manager's "
            f"--allowed-server-addresses: {exc}; no request was sent."
        )
        drafts = conditions.blocked(
            ConditionReason.SERVER_ADDRESS_NOT_ALLOWED, message, hold=target
        )
        return Problem(EventReason.SERVER_ADDRESS_NOT_ALLOWED, message, drafts)
    if not spec.server_headers_from:
        return scaler
    try:
        headers: Mapping[str, str] = secret_headers.headers(
            scaler.namespace, spec.server_headers_from, spec.server_headers
        )
    except SecretHeaderError as exc:
        message = f"A serverHeadersFrom value cannot be read: {exc}; holding the fleet."
        forbidden = exc.reason == SECRET_FORBIDDEN
        reason = (
            ConditionReason.SECRET_FORBIDDEN if forbidden else ConditionReason.FAILED_GET_SECRET
        )
        event = EventReason.SECRET_FORBIDDEN if forbidden else EventReason.FAILED_GET_SECRET
        drafts = conditions.blocked(reason, message, hold=target)
        return Problem(event, message, drafts)
    return memory.with_headers(scaler, headers)
