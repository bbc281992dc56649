"""Runs informers and controllers: leader election, health probes, metrics, signal handling.

See :class:`Manager` for the start/stop order and the leadership fence.
"""

from llmscaler_runtime.manager.fencing import FencedClient, NotLeader
from llmscaler_runtime.manager.leaderelection import (
    LeaderElectionConfig,
    LeaderElector,
    format_micro_time,
)
from llmscaler_runtime.manager.manager import Manager, Runnable
from llmscaler_runtime.manager.metrics import (
    ControllerMetrics,
    QueueMetricsProvider,
)
from llmscaler_runtime.manager.server import Check

__all__ = [
    "Check",
    "ControllerMetrics",
    "FencedClient",
    "LeaderElectionConfig",
    "LeaderElector",
    "Manager",
    "NotLeader",
    "QueueMetricsProvider",
    "Runnable",
    "format_micro_time",
]
