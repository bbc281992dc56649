"""Write fencing: a client that refuses to write once this replica is no longer the leader.

Leader election alone only *tells* controllers to stop; a reconcile already past its own
``still_leader()`` check could still send a write after the renew deadline. Enforcing the check
inside the client, right before each request leaves the process, closes that gap for every
write the reconcilers make through ``manager.client`` — whatever code path they take. Reads are
never fenced (a follower may read), and the Manager's own Lease and Event writes use the
unfenced client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llmscaler_runtime.kube import ApiError, Client

__all__ = ["FencedClient", "NotLeader"]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class NotLeader(ApiError):
    """A write was refused because this replica does not (or no longer) hold the Lease.

    An ``ApiError`` (status 0, like a transport failure) so reconcilers that already handle API
    failures treat it as one: the write did not happen and must not be retried here.
    """

    def __init__(self, method: str, path: str) -> None:
        super().__init__(
            0, "NotLeader", f"{method} {path}: refused, this replica is not the leader"
        )


class FencedClient(Client):
    """A view of ``inner`` (same connection pool, config and RESTMapper) with fenced writes.

    ``fence`` is called before every non-read request; False raises :class:`NotLeader`
    without sending anything.
    """

    def __init__(self, inner: Client, fence: Callable[[], bool]) -> None:
        # Share, not copy, the inner client's state: one pool, one discovery cache.
        self.__dict__.update(inner.__dict__)
        self._fence = fence
        self.inner = inner

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method.upper() not in _READ_METHODS and not self._fence():
            raise NotLeader(method.upper(), path)
        return super().request(method, path, **kwargs)
