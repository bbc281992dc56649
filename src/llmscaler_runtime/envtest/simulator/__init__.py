"""Workload simulation for the embedded API server (controllers for apps/v1 plus a kubelet).

``core`` (the simulator) builds one ``context.ControllerContext`` and hands it to the
controllers (``pods``, ``replicaset``, ``deployment`` with ``deployment_status``,
``statefulset``); they import the context, never the core.
"""

from llmscaler_runtime.envtest.simulator.context import ControllerContext
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
    "ControllerContext",
    "StorageLike",
    "WorkloadSimulator",
    "victim_sort_key",
]
