"""Counterfactual replay: rebuild the demand a real scaler saw from Prometheus history.

The scaler's metric is a per-replica average, and its fleet is known from the ready-replica
history, so the demand they imply is **per-replica average x ready replicas**, at each step of
the range (``/api/v1/query_range``). That total is turned into concurrent sequences by what the
metric measures:

* ``vllm:kv_cache_usage_perc``: total KV-cache in use divided by the fleet model's
  ``kv_per_sequence`` (at the reference request length);
* ``vllm:num_requests_running`` / ``vllm:num_requests_waiting``: already sequences.

When the metric is an average over time of a per-pod gauge, ``avg(avg_over_time(G[2m]))`` as
the README recommends, the history is read from the raw gauge, ``avg(G)``, instead
(:func:`raw_gauge_query`): the replay evaluates the spec's own ``avg_over_time`` over the
rebuilt demand, so rebuilding the demand from the smoothed series would smooth every burst
twice and make every variant look calmer than the real traffic was. Other shapes are read as
written; ``demand_query`` chooses the series outright.

Any other metric needs ``demand_query``, a query whose value *is* the concurrency (for example
``sum(vllm:num_requests_running{...} + vllm:num_requests_waiting{...})``). The assumption has
a known blind spot: a saturated KV-cache (1.0 on every replica) hides how much more demand was
waiting, so the rebuilt demand is a lower bound whenever the real fleet was full; a demand query
counting waiting requests does not have that blind spot. The result is an ordinary
:class:`~llmscaler_sim.trace.Trace` (it can be saved as CSV) that is then replayed under any
variant.

A range that returns nothing, or more than one series for a query, is an error naming the
query: a replay of no data would report a fleet that served nobody.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import attrs

from llmscaler_runtime.api.v1alpha1 import LLMScaler
from llmscaler_sim.fleet import FleetModel
from llmscaler_sim.trace import Trace, TraceError, trace_from_rows

__all__ = [
    "HistoryError",
    "HistoryQuery",
    "default_ready_query",
    "demand_from_history",
    "raw_gauge_query",
]


class HistoryError(ValueError):
    """Prometheus history that cannot be turned into a trace; the message names the query."""


@attrs.frozen
class HistoryQuery:
    """Where and when: a Prometheus base URL, a range in epoch seconds and its step."""

    url: str
    start: float
    end: float
    step: float = 60.0
    headers: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float = 30.0


def default_ready_query(scaler: LLMScaler) -> str:
    """Ready replicas of the scaler's target, as kube-state-metrics exports them."""
    ref = scaler.spec.target_ref
    kind = ref.kind.lower()
    selector = f'namespace="{scaler.namespace}", {kind}="{ref.name}"'
    return f"sum(kube_{kind}_status_replicas_ready{{{selector}}})"


def query_range(q: HistoryQuery, query: str) -> dict[float, float]:
    """One series from ``/api/v1/query_range`` as {timestamp: value}; HistoryError otherwise."""
    params = urllib.parse.urlencode(
        {"query": query, "start": repr(q.start), "end": repr(q.end), "step": repr(q.step)}
    )
    url = q.url.rstrip("/") + "/api/v1/query_range?" + params
    request = urllib.request.Request(url, headers={"Accept": "application/json", **q.headers})
    try:
        with urllib.request.urlopen(request, timeout=q.timeout) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()
    except (urllib.error.URLError, OSError) as exc:
        raise HistoryError(f"cannot query {q.url}: {exc}") from None
    try:
        doc = json.loads(body)
    except ValueError:
        raise HistoryError(f"{q.url} did not answer with Prometheus JSON for {query!r}") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        raise HistoryError(f"Prometheus refused {query!r}: {error or 'no reason given'}")
    data = doc.get("data") or {}
    result = data.get("result")
    if data.get("resultType") != "matrix" or not isinstance(result, list):
        raise HistoryError(f"{query!r}: expected a matrix result from query_range")
    if not result:
        raise HistoryError(
            f"{query!r} returned no series between {q.start:g} and {q.end:g}; check the range "
            "and the query's label filters"
        )
    if len(result) > 1:
        raise HistoryError(
            f"{query!r} returned {len(result)} series; aggregate it to one (e.g. avg(...))"
        )
    points: dict[float, float] = {}
    for pair in result[0].get("values") or []:
        try:
            value = float(pair[1])
        except (TypeError, ValueError, IndexError):
            raise HistoryError(f"{query!r}: malformed sample {pair!r}") from None
        if math.isfinite(value):
            points[float(pair[0])] = value
    if not points:
        raise HistoryError(f"{query!r} returned only NaN or infinite samples in the range")
    return points


_SMOOTHED = re.compile(
    r"^\s*(?P<avg>avg\s*\(\s*)?avg_over_time\s*\(\s*(?P<gauge>[^\[\]()]+?)\s*"
    r"\[[^\[\]]+\]\s*\)(?(avg)\s*\))\s*$"
)


def raw_gauge_query(query: str) -> str:
    """``avg(avg_over_time(G[w]))`` -> ``avg(G)`` and ``avg_over_time(G[w])`` -> ``G``, for a
    plain selector ``G``; any other query unchanged (see module docstring)."""
    m = _SMOOTHED.match(query)
    if m is None:
        return query
    return f"avg({m['gauge']})" if m["avg"] else m["gauge"]


def _sequences_per_unit(query: str, model: FleetModel) -> float:
    if "kv_cache_usage_perc" in query:
        return 1.0 / model.kv_per_sequence
    if "num_requests_running" in query or "num_requests_waiting" in query:
        return 1.0
    raise HistoryError(
        f"cannot tell what {query!r} measures, so not how it maps to concurrency; pass a "
        "demand query returning the concurrent sequences"
    )


def demand_from_history(
    q: HistoryQuery,
    scaler: LLMScaler,
    model: FleetModel | None = None,
    *,
    ready_query: str | None = None,
    demand_query: str | None = None,
) -> Trace:
    """The demand the scaler's history implies (see module docstring), as a trace."""
    model = model or FleetModel()
    if q.end <= q.start:
        raise HistoryError(f"the range is empty: end {q.end:g} is not after start {q.start:g}")
    if demand_query:
        values = query_range(q, demand_query)
        totals = dict(values)
    else:
        metrics = scaler.spec.metrics
        if not metrics:
            raise HistoryError("the scaler has no metrics to rebuild demand from")
        metric = raw_gauge_query(metrics[0].query)
        per_unit = _sequences_per_unit(metric, model)
        values = query_range(q, metric)
        ready = query_range(q, ready_query or default_ready_query(scaler))
        totals = {t: v * ready[t] * per_unit for t, v in values.items() if t in ready}
        if not totals:
            raise HistoryError(
                f"{metric!r} and the ready-replica query have no timestamp in common"
            )
    rows: list[tuple[str, Mapping[str, Any]]] = [
        (f"{q.url} at {t:g}", {"time": t, "concurrency": totals[t]}) for t in sorted(totals)
    ]
    try:
        return trace_from_rows(
            ["time", "concurrency"],
            rows,
            f"prometheus {q.url}",
            max_gap=3 * q.step,
            start_epoch=min(totals),
        )
    except TraceError as exc:
        raise HistoryError(f"the history has a hole: {exc}") from None
