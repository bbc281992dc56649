"""client-go's workqueue in Python: dedup, delaying (one timer thread), rate limiting.

Controllers put object keys in a :class:`RateLimitingQueue`; workers ``get`` a key, reconcile
it and call ``done``. See :mod:`.queue` for the dedup/processing rules, :mod:`.delaying` for
``add_after``, :mod:`.rate_limiters` for retry pacing and :mod:`.metrics` for the metrics hook.
"""

from llmscaler_runtime.workqueue.delaying import DelayingQueue
from llmscaler_runtime.workqueue.metrics import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    NoopQueueMetricsProvider,
    QueueMetricsProvider,
    SettableGaugeMetric,
)
from llmscaler_runtime.workqueue.queue import Queue
from llmscaler_runtime.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from llmscaler_runtime.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "CounterMetric",
    "DelayingQueue",
    "GaugeMetric",
    "HistogramMetric",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "NoopQueueMetricsProvider",
    "Queue",
    "QueueMetricsProvider",
    "RateLimiter",
    "RateLimitingQueue",
    "SettableGaugeMetric",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
