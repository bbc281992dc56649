"""The queue controllers use: a delaying queue whose retries are paced by a rate limiter."""

from __future__ import annotations

from llmscaler_runtime.clock import Clock
from llmscaler_runtime.workqueue.delaying import DelayingQueue
from llmscaler_runtime.workqueue.metrics import QueueMetricsProvider
from llmscaler_runtime.workqueue.queue import T
from llmscaler_runtime.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(DelayingQueue[T]):
    """client-go ``RateLimitingInterface``: ``add_rate_limited`` = ``add_after(item, when(item))``.

    Without an explicit ``rate_limiter`` the controller default is used, sharing this queue's
    clock so a fake clock drives the token bucket too.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter | None = None,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics: QueueMetricsProvider | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics=metrics)
        self.rate_limiter: RateLimiter = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=self.clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Re-add ``item`` after the delay its rate limiter assigns (one more failure)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s failure history; call after it was processed successfully."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Failures of ``item`` the rate limiter currently counts."""
        return self.rate_limiter.num_requeues(item)
