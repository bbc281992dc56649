"""Prometheus provider: instant queries against ``{serverAddress}/api/v1/query``.

A metric must come back as exactly one finite sample. Everything else (an error, an empty
vector, two series, NaN or ±Inf, a proxy's HTML page) skips that metric for this sync and is
never read as zero: reading a failed guardrail as zero would let it recommend minReplicas on its
own. Errors name what came back (the first two label sets of a multi-series result) so the user
can fix the query's aggregation.

Each question is read inside the transport (``MetricHttpClient.get_as``): the value a metric
needs, or the costs a deletionCostQuery gives, is what scalers of the same tick share. Whatever
makes that reading fail (an error status, a non-JSON body, an empty vector, two series, NaN)
is therefore never shared with a later caller, and a retry asks Prometheus again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler, MetricProvider, SpecError
from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.scaling.http import (
    FetchError,
    HttpResponse,
    MetricTransport,
    clip,
    json_kind,
)
from llmscaler_runtime.scaling.providers.base import MetricError, coalesce_token
from llmscaler_runtime.scaling.types import Measurement, MetricReading
from llmscaler_runtime.scaling.victims import cost_from_value

__all__ = ["PrometheusProvider", "Sample", "parse_query_response", "query_url"]

T = TypeVar("T")


@attrs.frozen
class Sample:
    """One series of an instant-query result (a scalar result has no labels)."""

    labels: Mapping[str, str]
    value: float


def query_url(server_address: str) -> str:
    """The instant-query endpoint for a Prometheus base URL (a trailing slash is tolerated)."""
    return server_address.rstrip("/") + "/api/v1/query"


def _describe_body(body: bytes, content_type: str) -> str:
    """What came back, without any of it: the body is the server's to choose, and error text
    ends up in Events and status (``clip`` bounds the few fields that are quoted)."""
    return f"content-type {clip(content_type) if content_type else 'none'!r}, {len(body)} bytes"


def _sample_value(raw: Any) -> float:
    if not (isinstance(raw, list) and len(raw) == 2 and isinstance(raw[1], str)):
        raise MetricError(f'malformed sample ({json_kind(raw)}): expected [timestamp, "value"]')
    try:
        return float(raw[1])
    except ValueError as exc:
        raise MetricError(f"sample value {clip(raw[1])!r} is not a number") from exc


def parse_query_response(status: int, content_type: str, body: bytes) -> list[Sample]:
    """Parse an ``/api/v1/query`` reply into samples; raise MetricError for anything else."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # Recursion: nested too deep
        raise MetricError(
            f"HTTP {status}, not a Prometheus JSON reply ({_describe_body(body, content_type)})"
        ) from None
    if not isinstance(doc, dict):
        raise MetricError(f"HTTP {status}, reply is JSON but not an object")
    if doc.get("status") != "success":
        err_type = clip(str(doc.get("errorType", "unknown")), 40)
        raise MetricError(
            f"Prometheus error (HTTP {status}, {err_type}): {clip(str(doc.get('error', '')))}"
        )
    if status != 200:
        raise MetricError(f"HTTP {status} from Prometheus")
    data = doc.get("data")
    if not isinstance(data, dict):
        raise MetricError("reply has no data object")
    result_type = data.get("resultType")
    result = data.get("result")
    if result_type == "scalar":
        return [Sample({}, _sample_value(result))]
    if result_type != "vector":
        raise MetricError(
            f"query returned a {clip(str(result_type), 40)!r} result; an instant vector or "
            "scalar is needed "
            "(a range selector must be wrapped, e.g. in avg_over_time)"
        )
    if not isinstance(result, list):
        raise MetricError("vector result is not a list")
    samples: list[Sample] = []
    for item in result:
        if not isinstance(item, dict):
            raise MetricError(f"malformed series ({json_kind(item)})")
        labels = item.get("metric") or {}
        if not isinstance(labels, dict):
            raise MetricError(f"malformed labels ({json_kind(labels)})")
        samples.append(
            Sample({str(k): str(v) for k, v in labels.items()}, _sample_value(item.get("value")))
        )
    return samples


def _labels_text(labels: Mapping[str, str]) -> str:
    text = "{" + ", ".join(f'{clip(k, 64)}="{clip(v, 64)}"' for k, v in sorted(labels.items()))
    return clip(text, 300) + "}"


# The readers below run once per attempt inside the transport; what they return is shared with
# every scaler asking the same question in the tick, so it is immutable.


def _samples(resp: HttpResponse) -> tuple[Sample, ...]:
    return tuple(parse_query_response(resp.status, resp.content_type, resp.body))


def _single_value(resp: HttpResponse) -> float:
    """The one finite sample a metric needs; MetricError for anything else."""
    samples = parse_query_response(resp.status, resp.content_type, resp.body)
    if not samples:
        raise MetricError("the query returned no series (empty vector)")
    if len(samples) > 1:
        first = ", ".join(_labels_text(s.labels) for s in samples[:2])
        raise MetricError(
            f"the query returned {len(samples)} series ({first}, ...); aggregate it to "
            "one, e.g. with avg(...)"
        )
    value = samples[0].value
    if not math.isfinite(value):
        raise MetricError(f"the query returned {value!r}, which cannot drive scaling")
    return value


def _pod_costs(resp: HttpResponse) -> Mapping[str, int]:
    """Costs by the ``pod`` label; MetricError when a pod is named twice or none is named."""
    costs: dict[str, int] = {}
    for sample in parse_query_response(resp.status, resp.content_type, resp.body):
        pod = sample.labels.get("pod")
        if not pod:
            continue
        if pod in costs:
            raise MetricError(f"deletionCostQuery returned pod {clip(pod)!r} more than once")
        cost = cost_from_value(sample.value)
        if cost is not None:
            costs[pod] = cost
    if not costs:
        raise MetricError("deletionCostQuery returned no series with a pod label")
    return MappingProxyType(costs)


@attrs.frozen
class PrometheusProvider:
    """Fetches each metric of a scaler; also serves per-pod deletion costs."""

    http: MetricTransport
    clock: Clock = SYSTEM_CLOCK  # its wall time picks the sync tick for coalescing

    def query(
        self,
        server_address: str,
        query: str,
        headers: Mapping[str, str],
        budget: float,
        coalesce: Hashable | None = None,
    ) -> list[Sample]:
        """Run one instant query; raise MetricError naming the server on any failure.

        Identical queries with the same ``coalesce`` token share one successful answer.
        """
        return list(self._query(_samples, server_address, query, headers, budget, coalesce))

    def _query(
        self,
        read: Callable[[HttpResponse], T],
        server_address: str,
        query: str,
        headers: Mapping[str, str],
        budget: float,
        coalesce: Hashable | None,
    ) -> T:
        url = query_url(server_address)
        try:
            return self.http.get_as(
                read,
                url,
                params={"query": query},
                headers=headers,
                budget=budget,
                coalesce=coalesce,
            )
        except FetchError as exc:
            raise MetricError(f"cannot query {url}: {exc}") from exc

    def _ask(
        self, read: Callable[[HttpResponse], T], scaler: LLMScaler, query: str, budget: float
    ) -> T:
        """``query`` as ``scaler`` asks it: its server and headers, shared within its tick."""
        spec = scaler.spec
        return self._query(
            read,
            spec.server_address,
            query,
            spec.server_headers,
            budget,
            coalesce_token(spec, self.clock.now()),
        )

    def fetch(self, scaler: LLMScaler, budget: float) -> Measurement:
        metrics = scaler.spec.metrics
        share = budget / max(1, len(metrics))
        readings: list[MetricReading] = []
        for metric in metrics:
            name = metric.name or metric.query
            try:
                target = metric.target_value
            except SpecError as exc:
                readings.append(MetricReading(name, metric.query, math.nan, error=str(exc)))
                continue
            try:
                value = self._ask(_single_value, scaler, metric.query, share)
            except MetricError as exc:
                readings.append(MetricReading(name, metric.query, target, error=str(exc)))
                continue
            readings.append(
                MetricReading(
                    name,
                    metric.query,
                    target,
                    value=value,
                    activation_threshold=metric.activation_threshold_value,
                )
            )
        return Measurement(MetricProvider.PROMETHEUS.value, tuple(readings))

    def pod_costs(self, scaler: LLMScaler, budget: float) -> Mapping[str, int]:
        """Costs from ``scaleDown.deletionCostQuery``: one series per pod, by its ``pod`` label.

        Raises MetricError when the query is unset, fails, or names a pod twice (two costs
        for one pod means the query is not scoped as documented, so none of it is trusted).
        The mapping is shared with scalers asking the same query in the tick: read-only.
        """
        query = scaler.spec.scale_down.deletion_cost_query
        if not query:
            raise MetricError("no deletionCostQuery is set")
        return self._ask(_pod_costs, scaler, query, budget)
