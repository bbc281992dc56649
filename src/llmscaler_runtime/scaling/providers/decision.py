"""Custom provider: read an absolute replica count from an external decision server.

The reply is parsed strictly because it drives the fleet directly: only the
``llmscaling.inference.x-k8s.io/v1alpha1`` schema is understood (a later schema may give
``replicas`` another meaning), the decision is matched on serviceId (and namespace when set)
because the server chooses what it sends back, exactly one decision must match, and
``replicas.active`` must be a JSON integer in int32 range: ``3.0``, ``"3"`` and ``true`` are
refused instead of coerced. A wrong content type, trailing bytes, duplicate keys or NaN are
errors too. Every failure holds the fleet; none reads as zero.

The reply is read inside the transport (``MetricHttpClient.get_as``), so scalers of one tick
share a decision only when it was usable for them; a failed one is asked for again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler, MetricProvider
from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.scaling.http import (
    FetchError,
    HttpResponse,
    MetricTransport,
    clip,
    json_kind,
)
from llmscaler_runtime.scaling.providers.base import MetricError, coalesce_token
from llmscaler_runtime.scaling.types import INT32_MAX, Measurement

__all__ = ["DECISION_API_VERSION", "DecisionProvider", "parse_decision"]

DECISION_API_VERSION = "llmscaling.inference.x-k8s.io/v1alpha1"


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_decision(
    status: int,
    content_type: str,
    body: bytes,
    *,
    service_id: str,
    namespace: str | None = None,
) -> int:
    """The ``replicas.active`` of the one decision matching ``service_id``; MetricError else."""
    if status != 200:
        raise MetricError(f"decision server answered HTTP {status}")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise MetricError(
            f"decision server answered content-type {clip(content_type) or 'none'!r}, "
            "not application/json"
        )
    try:
        doc = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_reject_constant,
        )
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # Recursion: nested too deep
        # the position only: a JSONDecodeError's message never quotes the document
        where = (
            f" at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise MetricError(
            f"decision server reply is not valid JSON{where} ({len(body)} bytes)"
        ) from None
    if not isinstance(doc, dict):
        raise MetricError("decision server reply is not a JSON object")
    api_version = doc.get("apiVersion")
    if api_version != DECISION_API_VERSION:
        raise MetricError(
            f"decision server reply has apiVersion {clip(str(api_version), 80)!r}; only "
            f"{DECISION_API_VERSION!r} is understood"
        )
    decisions = doc.get("decisions")
    if not isinstance(decisions, list):
        raise MetricError("decision server reply has no decisions list")
    matches: list[Mapping[str, Any]] = []
    for item in decisions:
        if not isinstance(item, dict):
            raise MetricError(f"malformed decision ({json_kind(item)})")
        if item.get("serviceId") != service_id:
            continue
        # an empty namespace (a template rendering an unset value) narrows nothing
        if namespace and item.get("namespace") != namespace:
            continue
        matches.append(item)
    scope = f"serviceId {service_id!r}" + (f" in namespace {namespace!r}" if namespace else "")
    if not matches:
        raise MetricError(f"no decision for {scope} among {len(decisions)} returned")
    if len(matches) > 1:
        raise MetricError(
            f"{len(matches)} decisions match {scope}; set customProvider.namespace or fix the "
            "server so exactly one matches"
        )
    replicas = matches[0].get("replicas")
    if not isinstance(replicas, dict) or "active" not in replicas:
        raise MetricError(f"the decision for {scope} has no replicas.active")
    active = replicas["active"]
    if type(active) is not int:
        raise MetricError(
            f"replicas.active is {clip(json.dumps(active), 40)} ({type(active).__name__}); "
            "a JSON integer is required"
        )
    if not 0 <= active <= INT32_MAX:
        text = str(active)  # up to 4300 digits: json.loads' limit
        text = text if len(text) <= 20 else f"{text[:12]}... ({len(text)} digits)"
        raise MetricError(f"replicas.active {text} is outside [0, {INT32_MAX}]")
    return active


@attrs.frozen
class _DecisionReader:
    """``parse_decision`` for one (serviceId, namespace), run on the answer in the transport.

    Equal readers share one answer; the namespace is not part of the request, so two scalers
    that read the same reply differently never share what one of them made of it.
    """

    service_id: str
    namespace: str | None

    def __call__(self, resp: HttpResponse) -> int:
        return parse_decision(
            resp.status,
            resp.content_type,
            resp.body,
            service_id=self.service_id,
            namespace=self.namespace,
        )


@attrs.frozen
class DecisionProvider:
    """Asks the decision server for this scaler's replica count."""

    http: MetricTransport
    clock: Clock = SYSTEM_CLOCK  # its wall time picks the sync tick for coalescing

    def fetch(self, scaler: LLMScaler, budget: float) -> Measurement:
        spec = scaler.spec
        provider = MetricProvider.CUSTOM.value
        custom = spec.custom_provider
        if custom is None:
            return Measurement(
                provider, error="metricProvider is Custom but customProvider is unset"
            )
        path = custom.path if custom.path.startswith("/") else "/" + custom.path
        url = spec.server_address.rstrip("/") + path
        try:
            active = self.http.get_as(
                _DecisionReader(custom.service_id, custom.namespace),
                url,
                params={"serviceId": custom.service_id},
                headers=spec.server_headers,
                budget=budget,
                coalesce=coalesce_token(spec, self.clock.now()),
            )
        except FetchError as exc:
            return Measurement(provider, error=f"cannot reach decision server {url}: {exc}")
        except MetricError as exc:
            return Measurement(provider, error=f"{url}: {exc}")
        return Measurement(provider, decision=active)
