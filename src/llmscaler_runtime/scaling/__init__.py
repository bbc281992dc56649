"""The LLM scaling pipeline: swappable steps and the LLMScaler reconciler that composes them.

Read ``reconciler.py`` first: it shows one sync from the cached scaler to the status write,
and names the module of each step. Each swappable step (rollout guard, metric fetch,
recommendation, pacing, victim selection, write) lives in its own module behind a one-method
protocol, so a library user can replace one of them via :class:`Steps` (``steps.py``) without
touching the rest. What the pipeline needs from Kubernetes is declared in ``ports.py``; the
checks before measuring are in ``resolve.py``, the wording of every condition in
``conditions.py`` and every reason in ``reasons.py``.
"""

from llmscaler_runtime.scaling.http import FetchError, HttpOptions, MetricHttpClient
from llmscaler_runtime.scaling.pacing import HistoryStore, ScaleDownPacer
from llmscaler_runtime.scaling.reconciler import LLMScalerReconciler
from llmscaler_runtime.scaling.setup import setup
from llmscaler_runtime.scaling.steps import Steps, default_steps
from llmscaler_runtime.scaling.types import (
    History,
    Measurement,
    MetricReading,
    Plan,
    PodCost,
    Recommendation,
    TargetView,
)

__all__ = [
    "FetchError",
    "History",
    "HistoryStore",
    "HttpOptions",
    "LLMScalerReconciler",
    "Measurement",
    "MetricHttpClient",
    "MetricReading",
    "Plan",
    "PodCost",
    "Recommendation",
    "ScaleDownPacer",
    "Steps",
    "TargetView",
    "default_steps",
    "setup",
]
