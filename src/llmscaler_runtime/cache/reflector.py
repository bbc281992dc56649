"""List-then-watch one kind into a sink, surviving every kind of API trouble.

Behaviour follows client-go's Reflector:

- LIST (paged with ``limit``/``continue``) and hand the full result to ``sink.replace``; then
  WATCH from the list's resourceVersion with bookmarks on and a random server timeout between
  5 and 10 minutes, so many informers do not reconnect in lockstep. The first LIST asks for
  ``resourceVersion=0`` (served from the API server's watch cache, sparing etcd when many
  informers start at once); a relist forced by 410 Gone or a too-large resourceVersion asks
  for ``""``, a consistent read, since the cache was just shown to be behind or ahead.
  Continuation pages carry no resourceVersion (the token has it; the server refuses both).
- Every event (and bookmark) advances the last seen resourceVersion; a dropped connection
  resumes the watch from there, so nothing is listed again and nothing is missed.
- 410 Gone (the resourceVersion was compacted away) forces a fresh LIST; the sink receives it
  as a replace and computes what changed while we were away.
- Any other failure backs off (0.8 s doubling to 30 s, jittered, reset after 2 healthy
  minutes); 429 waits the server's Retry-After instead. A watch that ends at once without a
  single event counts as a failure, so a server that keeps closing connections is not hammered.
- Malformed events and unknown event types are logged and skipped.
- The sink is only ever given complete information: a failed LIST leaves it untouched, so
  readers keep the last known state through any outage.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import structlog

from ..clock import SYSTEM_CLOCK, Clock
from ..kube.errors import ApiError, Gone, TooManyRequests
from .backoff import Backoff

__all__ = ["ListerWatcher", "Reflector", "ReflectorSink"]

log = structlog.get_logger(__name__)

WATCH_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})
SHORT_WATCH_SECONDS = 1.0


class ReflectorSink(Protocol):
    """Where a reflector delivers state; a Store satisfies it, informers wrap one."""

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None: ...
    def add(self, obj: dict[str, Any]) -> None: ...
    def update(self, obj: dict[str, Any]) -> None: ...
    def delete(self, obj: dict[str, Any]) -> None: ...


class _Stream(Protocol):
    def __iter__(self) -> Iterator[dict[str, Any]]: ...
    def close(self) -> None: ...


class ListerWatcher(Protocol):
    """The two Client verbs a reflector uses (a scripted fake works in tests)."""

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
    ) -> dict[str, Any]: ...

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
    ) -> Any: ...


class _ShortWatch(Exception):
    """The watch ended immediately without events; treated like an error for backoff."""


class Reflector:
    """Keeps ``sink`` in sync with one (kind, namespace, selector) on the server.

    ``clock`` (read for monotonic time), ``sleep`` and ``rng`` are injectable so tests drive time;
    the default sleep returns early when :meth:`stop` is called.
    """

    def __init__(
        self,
        client: ListerWatcher,
        api_version: str,
        kind: str,
        sink: ReflectorSink,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        page_size: int | None = 500,
        min_watch_timeout: float = 300.0,
        max_watch_timeout: float = 600.0,
        backoff: Backoff | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if min_watch_timeout <= 0 or max_watch_timeout < min_watch_timeout:
            raise ValueError("watch timeouts need 0 < min <= max")
        self._client = client
        self.api_version = api_version
        self.kind = kind
        self._sink = sink
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._transform = transform
        self._page_size = page_size
        self._min_watch = min_watch_timeout
        self._max_watch = max_watch_timeout
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._rng = rng if rng is not None else random.Random()
        self._backoff = (
            backoff if backoff is not None else Backoff(clock=self._clock, rng=self._rng)
        )
        self._stop = threading.Event()
        self._sleep = sleep if sleep is not None else self._interruptible_sleep
        self._lock = threading.Lock()
        self._stream: _Stream | None = None
        self._resource_version = ""
        self._need_list = True
        # client-go's isLastSyncResourceVersionUnavailable: the next LIST must be consistent.
        self._rv_unavailable = False
        self._log = log.bind(api_version=api_version, kind=kind, namespace=namespace or "")

    # -- public -----------------------------------------------------------------------------

    @property
    def last_sync_resource_version(self) -> str:
        """The newest resourceVersion seen (list, event or bookmark)."""
        return self._resource_version

    @property
    def stopped(self) -> bool:
        """True once stop() was called."""
        return self._stop.is_set()

    def stop(self) -> None:
        """Make :meth:`run` return soon; closes an open watch to unblock it."""
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    def run(self) -> None:
        """Loop list/watch until stopped; never raises for API or transport failures."""
        failed_last = False
        while not self._stop.is_set():
            delay = 0.0
            try:
                if self._need_list:
                    self._list()
                    if self._stop.is_set():
                        break
                self._watch()
                failed_last = False
                continue
            except Gone as exc:
                self._log.info("reflector.relist", reason=exc.reason, message=exc.message)
                self._need_list = True
                self._rv_unavailable = True
                # the first 410 relists at once; repeated ones in a row back off
                delay = self._backoff.next_delay() if failed_last else 0.0
            except TooManyRequests as exc:
                # The server's hint wins; without one (or "Retry-After: 0", which would turn a
                # throttled informer into a hot loop) back off as for any other failure.
                hint = exc.retry_after
                delay = hint if hint is not None and hint > 0 else self._backoff.next_delay()
                self._log.warning("reflector.throttled", retry_after=delay)
            except _ShortWatch:
                delay = self._backoff.next_delay()
                self._log.warning("reflector.short_watch", delay=round(delay, 3))
            except Exception as exc:
                if _too_large_resource_version(exc):
                    # the server is behind the resourceVersion we hold (e.g. after failing over
                    # to a lagging replica): only a fresh list gets us a version it knows
                    self._need_list = True
                    self._rv_unavailable = True
                delay = self._backoff.next_delay()
                self._log.warning(
                    "reflector.error",
                    error=f"{type(exc).__name__}: {exc}",
                    relist=self._need_list,
                    delay=round(delay, 3),
                )
            failed_last = True
            if delay > 0 and not self._stop.is_set():
                self._sleep(delay)

    # -- internals --------------------------------------------------------------------------

    def _interruptible_sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _apply_transform(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._transform(obj) if self._transform is not None else obj

    def _relist_resource_version(self) -> str:
        """client-go's relistResourceVersion: "" after a 410, else "0" (or the last synced)."""
        if self._rv_unavailable:
            return ""
        return self._resource_version or "0"

    def _list_pages(self, limit: int | None) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        list_rv = ""
        first_rv = self._relist_resource_version()
        while True:
            page = self._client.list(
                self.api_version,
                self.kind,
                self._namespace,
                label_selector=self._label_selector,
                field_selector=self._field_selector,
                limit=limit,
                continue_=token,
                resource_version=None if token else first_rv,
            )
            items.extend(i for i in page.get("items") or () if isinstance(i, dict))
            meta = page.get("metadata") or {}
            list_rv = str(meta.get("resourceVersion") or "")
            token = meta.get("continue") or None
            if not token or self._stop.is_set():
                return items, list_rv

    def _list(self) -> None:
        try:
            items, list_rv = self._list_pages(self._page_size)
        except Gone:
            if not self._page_size:
                raise
            # the continue token expired between pages: take one unpaged consistent list
            self._log.info("reflector.continue_expired")
            items, list_rv = self._list_pages(None)
        if self._stop.is_set():
            return
        transformed: list[dict[str, Any]] = []
        for item in items:
            try:
                out = self._apply_transform(item)
            except Exception:
                self._log.exception("reflector.transform_failed")
                continue
            # One nameless item must not make every relist fail (the store cannot key it), which
            # would leave the informer unsynced forever; skip it like a malformed watch event.
            if _named(out):
                transformed.append(out)
            else:
                self._log.warning("reflector.malformed_list_item", item_repr=repr(out)[:200])
        self._sink.replace(transformed, list_rv)
        self._resource_version = list_rv
        self._need_list = False
        self._rv_unavailable = False
        self._log.debug("reflector.listed", count=len(transformed), resource_version=list_rv)

    def _watch(self) -> None:
        timeout = int(self._rng.uniform(self._min_watch, self._max_watch))
        started = self._clock.monotonic()
        stream: _Stream = self._client.watch(
            self.api_version,
            self.kind,
            self._namespace,
            resource_version=self._resource_version,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
            allow_bookmarks=True,
            timeout_seconds=timeout,
        )
        with self._lock:
            self._stream = stream
        if self._stop.is_set():
            stream.close()
        events = 0
        try:
            for event in stream:
                if self._stop.is_set():
                    break
                events += 1
                self._handle(event)
        finally:
            with self._lock:
                self._stream = None
            stream.close()
        if (
            events == 0
            and not self._stop.is_set()
            and self._clock.monotonic() - started < SHORT_WATCH_SECONDS
        ):
            raise _ShortWatch()

    def _handle(self, event: Any) -> None:
        if not isinstance(event, dict):
            self._log.warning("reflector.malformed_event", event_repr=repr(event)[:200])
            return
        event_type = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            self._log.warning("reflector.malformed_event", type=event_type)
            return
        rv = obj["metadata"].get("resourceVersion")
        if event_type == "BOOKMARK":
            if rv:
                self._resource_version = str(rv)
            return
        if event_type not in WATCH_EVENT_TYPES:
            self._log.warning("reflector.unknown_event_type", type=event_type)
            return
        if not obj["metadata"].get("name"):
            self._log.warning("reflector.malformed_event", type=event_type, problem="no name")
            return
        try:
            obj = self._apply_transform(obj)
        except Exception:
            self._log.exception("reflector.transform_failed", type=event_type)
            return
        if not _named(obj):
            self._log.warning("reflector.malformed_event", type=event_type, problem="transform")
            return
        if event_type == "ADDED":
            self._sink.add(obj)
        elif event_type == "MODIFIED":
            self._sink.update(obj)
        else:
            self._sink.delete(obj)
        if rv:
            self._resource_version = str(rv)


def _named(obj: Any) -> bool:
    """True for an object the store can key: a dict with a non-empty string metadata.name."""
    if not isinstance(obj, dict):
        return False
    meta = obj.get("metadata")
    return isinstance(meta, dict) and isinstance(meta.get("name"), str) and bool(meta["name"])


def _too_large_resource_version(exc: Exception) -> bool:
    if not isinstance(exc, ApiError) or not exc.details:
        return False
    causes = exc.details.get("causes") or ()
    return any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes)
