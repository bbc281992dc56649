"""Workload simulation for the embedded API server (controllers for apps/v1 plus a kubelet)."""

from llmscaler_runtime.envtest.simulator.core import WorkloadSimulator
from llmscaler_runtime.envtest.simulator.pods import victim_sort_key
from llmscaler_runtime.envtest.simulator.util import (
    DELETION_COST_ANNOTATION,
    STARTUP_ANNOTATION,
    Clock,
    StorageLike,
)

__all__ = [
    "DELETION_COST_ANNOTATION",
    "STARTUP_ANNOTATION",
    "Clock",
    "StorageLike",
    "WorkloadSimulator",
    "victim_sort_key",
]
