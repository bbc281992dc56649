"""Objects shaped like what the API server sends, for the micro-benchmarks."""

from __future__ import annotations

from typing import Any


def make_object(i: int, namespaces: int = 100) -> dict[str, Any]:
    """A Deployment-sized dict, as the API server sends it (managedFields included)."""
    ns = f"ns-{i % namespaces:03d}"
    name = f"obj-{i:05d}"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{i}",
            "resourceVersion": str(i + 1),
            "generation": 1,
            "labels": {"app": name},
            "managedFields": [{"manager": "bench", "operation": "Update", "fieldsV1": {}}],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai"}]},
            },
        },
        "status": {"replicas": 2, "readyReplicas": 2},
    }


def mean_seconds(benchmark: Any) -> float | None:
    """Mean seconds per round, or None under ``--benchmark-disable`` (correctness-only runs)."""
    stats = getattr(benchmark, "stats", None)
    return float(stats.stats.mean) if stats is not None else None
