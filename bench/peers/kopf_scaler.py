"""The LLMScaler decision written as a plain kopf operator: the benchmark's peer.

What a user would otherwise write in an afternoon: a timer per LLMScaler every
syncPeriodSeconds fetches the metric over httpx, computes ``ceil(ready * value / target)``
clamped to [minReplicas, maxReplicas] and patches the Deployment's replicas when they differ.
Deployments are read from a kopf index (kopf's in-memory cache), not fetched per run, so the
comparison is against an idiomatic, cached kopf operator rather than a strawman.

Tuning applied for a fair comparison (each would otherwise add API writes per reconcile that
our manager does not make): kopf's posting of handler log lines as Kubernetes Events is off.
Everything else is kopf's default.

Run: ``KUBECONFIG=... BENCH_SYNC_PERIOD=15 kopf run --standalone -A bench/peers/kopf_scaler.py``.
"""

from __future__ import annotations

import asyncio
import math
import os
from typing import Any

import httpx
import kopf
import kubernetes

SYNC_PERIOD = float(os.environ.get("BENCH_SYNC_PERIOD", "15"))
_state: dict[str, Any] = {}


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False
    settings.scanning.disabled = True
    _state["http"] = httpx.AsyncClient(timeout=5.0)
    kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
    _state["apps"] = kubernetes.client.AppsV1Api()


@kopf.on.cleanup()
async def close(**_: Any) -> None:
    http = _state.pop("http", None)
    if http is not None:
        await http.aclose()


# kopf's handler protocols spell out every keyword it passes; handlers take what they need.
@kopf.index("apps", "v1", "deployments")  # type: ignore[arg-type]
def deployments(
    namespace: str, name: str, spec: kopf.Spec, status: kopf.Status, **_: Any
) -> dict[tuple[str, str], tuple[int, int]]:
    """(namespace, name) -> (spec.replicas, status.readyReplicas)."""
    return {(namespace, name): (spec.get("replicas", 1), status.get("readyReplicas") or 0)}


@kopf.timer(  # type: ignore[arg-type]
    "autoscaling.modelsphere.dev", "v1alpha1", "llmscalers", interval=SYNC_PERIOD
)
async def sync(
    spec: kopf.Spec, namespace: str, deployments: kopf.Index[Any, Any], **_: Any
) -> None:
    ref = spec["targetRef"]
    try:
        current, ready = next(iter(deployments[(namespace, ref["name"])]))
    except (KeyError, StopIteration):
        return
    http: httpx.AsyncClient = _state["http"]
    wanted = 0
    for metric in spec.get("metrics", []):
        resp = await http.get(
            spec["serverAddress"].rstrip("/") + "/api/v1/query",
            params={"query": metric["query"]},
        )
        result = resp.json()["data"]["result"]
        value = float(result[0]["value"][1])
        wanted = max(wanted, math.ceil(ready * value / float(metric["target"]) - 1e-9))
    desired = min(max(wanted, spec.get("minReplicas", 1)), spec["maxReplicas"])
    if desired != current:
        await asyncio.to_thread(
            _state["apps"].patch_namespaced_deployment,
            ref["name"],
            namespace,
            {"spec": {"replicas": desired}},
        )
