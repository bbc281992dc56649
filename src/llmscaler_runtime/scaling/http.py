"""HTTP transport for metric sources: one pooled client, hard limits, retries, coalescing.

Every scaler polls its metric source on a period, so this layer is built for many small
requests: one urllib3 pool manager shares connections across scalers; each request is bounded in
time (connect and total timeouts, enforced while the body streams in) and in size (a capped
body, so a misconfigured endpoint cannot exhaust memory); transient failures are retried a few
times, but only while the retries still fit in the caller's budget (the sync period), so a dead
source never makes a sync overrun its own schedule. Identical requests (same URL, query and
headers) are coalesced: the first caller fetches, concurrent callers wait for its answer, and
later callers reuse it. A caller may name a coalescing token: the answer is then shared only
with callers presenting the same token. The scaling providers pass the scaler's sync tick
(``scaling.schedule``), and syncs run on that tick grid, so every scaler sharing a query shares
one fetch per tick, and no answer outlives its tick. Without a token, answers are shared for
``coalesce_ttl``. Either way the load on Prometheus grows with unique queries, not scalers.

Only a usable answer is kept for later callers. A failure (no response, an error status, or a
body the caller's reader refuses, see :meth:`MetricHttpClient.get_as`) reaches the callers that
were already waiting for that attempt and no one else: the next caller makes a new attempt. A
failure kept for the tick would turn every retry of the tick into a re-read of the same failure,
so ``retryPeriodSeconds`` would do nothing until the tick ended.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import urlencode

import attrs
import certifi
import tenacity
import urllib3
from cachetools import LRUCache

from llmscaler_runtime import __version__
from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock

__all__ = [
    "BadRequestError",
    "FetchError",
    "HttpOptions",
    "HttpResponse",
    "MetricHttpClient",
    "MetricTransport",
    "ResponseTooLarge",
    "clip",
    "json_kind",
]

MiB = 1024 * 1024
_CHUNK = 64 * 1024  # read size while streaming a body: the cap and deadline are checked per read
_RETRY_STATUSES = frozenset({429, 502, 503, 504})

T = TypeVar("T")


@attrs.frozen
class HttpOptions:
    """Transport settings shared by every metric fetch of a manager.

    ``timeout`` bounds one attempt from connect to the last body byte; ``max_attempts``
    bounds retries, which additionally stop when another attempt would overrun the budget.
    ``coalesce_ttl`` is how long an answer is shared between identical requests from callers
    that pass no coalescing token (0 disables sharing for them).
    """

    connect_timeout: float = attrs.field(default=2.0, validator=attrs.validators.gt(0))
    timeout: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))
    ca_bundle: str | None = None
    insecure_skip_verify: bool = False
    max_response_bytes: int = attrs.field(default=4 * MiB, validator=attrs.validators.gt(0))
    max_attempts: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    retry_wait: float = attrs.field(default=0.2, validator=attrs.validators.ge(0))
    coalesce_ttl: float = attrs.field(default=1.0, validator=attrs.validators.ge(0))
    max_connections: int = attrs.field(default=64, validator=attrs.validators.ge(1))


@attrs.frozen
class HttpResponse:
    """A complete, size-checked response."""

    status: int
    content_type: str
    body: bytes
    url: str

    @property
    def media_type(self) -> str:
        """The content type without parameters, lower-cased ("application/json")."""
        return self.content_type.split(";", 1)[0].strip().lower()


class FetchError(Exception):
    """The request got no usable response (refused, timed out, too large, TLS failure)."""


class BadRequestError(FetchError):
    """The request cannot be sent at all (malformed URL, unsupported scheme); never retried."""


class ResponseTooLarge(FetchError):
    """The body exceeds the size cap; never retried, the next attempt would be as large."""


class _RetryableStatus(Exception):
    def __init__(self, response: HttpResponse) -> None:
        super().__init__(f"HTTP {response.status}")
        self.response = response


class _ErrorStatus(Exception):
    """A complete response whose status says it failed: ``get`` returns it, never shares it."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__(response)
        self.response = response


def _response(resp: HttpResponse) -> HttpResponse:
    """The reader of plain ``get``: any 2xx answer is usable, anything else is a failure."""
    if 200 <= resp.status < 300:
        return resp
    raise _ErrorStatus(resp)


class _Flight:
    """One key's attempt in progress. The caller making it holds ``lock`` from the start; the
    callers that join wait on the lock, then read ``outcome`` (a value, or the exception)."""

    __slots__ = ("lock", "outcome")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.outcome: object = FetchError("the attempt this request waited for was abandoned")


_Key = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
_CacheKey = tuple[_Key, Hashable, Callable[[HttpResponse], Any]]


class MetricTransport(Protocol):
    """What the providers need from a transport: :meth:`MetricHttpClient.get_as`.

    A protocol rather than the concrete client so the providers' own parsing and error rules can
    run over another source of answers, such as the what-if simulator's series evaluated on a
    virtual clock (``llmscaler_sim``), without a socket.
    """

    def get_as(
        self,
        read: Callable[[HttpResponse], T],
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        budget: float | None = None,
        coalesce: Hashable | None = None,
    ) -> T: ...


class MetricHttpClient:
    """Thread-safe GET client for metric sources (see module docstring)."""

    def __init__(
        self,
        options: HttpOptions | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = opts = options or HttpOptions()
        self._clock = clock
        self._sleep = sleep
        if opts.insecure_skip_verify:
            tls = ssl.create_default_context()
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        else:
            tls = ssl.create_default_context(cafile=opts.ca_bundle or certifi.where())
        self._cert_reqs = ssl.CERT_NONE if opts.insecure_skip_verify else ssl.CERT_REQUIRED
        # urllib3 rather than httpx on this path: one metric fetch per scaler per period is the
        # manager's hottest loop, and urllib3 spends about half of httpx's CPU per request.
        self._pool = urllib3.PoolManager(
            num_pools=64,
            maxsize=opts.max_connections,
            block=False,
            ssl_context=tls,
            cert_reqs=self._cert_reqs,
        )
        self._tls = tls
        # Proxies as every HTTP client honours them (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, read
        # once, like Go's ProxyFromEnvironment), decided once per destination host.
        self._proxies = urllib.request.getproxies_environment()
        self._proxy_of: dict[tuple[str, str, int | None], str | None] = {}
        self._proxy_managers: dict[str, urllib3.ProxyManager] = {}
        self._timeout = urllib3.Timeout(
            connect=min(opts.connect_timeout, opts.timeout), read=opts.timeout
        )
        self._headers = {"User-Agent": f"llmscaler/{__version__}", "Accept": "application/json"}
        self._wait = tenacity.wait_exponential(multiplier=opts.retry_wait, max=2.0)
        # One Retrying for every call (tenacity keeps per-call state in the RetryCallState
        # and its statistics thread-local); the budget rule reads each call's own budget.
        self._retrying = tenacity.Retrying(
            stop=(
                tenacity.stop_after_attempt(opts.max_attempts)
                | _OutOfBudget(clock, opts.timeout, self._wait)
            ),
            wait=self._wait,
            retry=(
                tenacity.retry_if_exception_type((FetchError, _RetryableStatus))
                & tenacity.retry_if_not_exception_type((BadRequestError, ResponseTooLarge))
            ),
            sleep=sleep,
            reraise=True,
        )
        self._lock = threading.Lock()
        # (request, token, reader) -> (fetched at, what the reader made of a usable answer);
        # token None entries expire after coalesce_ttl. Failures are never stored.
        self._cache: LRUCache[_CacheKey, tuple[float, Any]] = LRUCache(maxsize=4096)
        self._inflight: dict[_CacheKey, _Flight] = {}
        self.requests_sent = 0  # attempts that reached the network layer; for tests and metrics
        self.callers_joined = 0  # callers that waited for another's attempt; tests and metrics

    def close(self) -> None:
        """Close pooled connections."""
        self._pool.clear()
        with self._lock:
            managers = list(self._proxy_managers.values())
        for manager in managers:
            manager.clear()

    def get(
        self,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        budget: float | None = None,
        coalesce: Hashable | None = None,
    ) -> HttpResponse:
        """GET ``url``; return the response (any status) or raise FetchError.

        ``budget`` is the time the caller can spend in total, retries included. ``coalesce`` is
        a token: identical requests with the same token share one answer (see module docstring).
        A response outside 2xx is returned all the same, but shared only with the callers that
        waited for it.
        """
        try:
            return self.get_as(
                _response, url, params=params, headers=headers, budget=budget, coalesce=coalesce
            )
        except _ErrorStatus as exc:
            return exc.response

    def get_as(
        self,
        read: Callable[[HttpResponse], T],
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        budget: float | None = None,
        coalesce: Hashable | None = None,
    ) -> T:
        """GET ``url`` and return ``read(response)``; raise FetchError or what ``read`` raised.

        ``read`` decides what a usable answer is: whatever it raises marks the answer as a
        failure, which only the callers already waiting for this attempt see. What it returns
        is shared as it is with later callers of the same request, token and ``read``, so it
        must be immutable (or treated so) and ``read`` must be a stable, hashable callable (a
        module-level function, or a frozen instance that compares by value). Sharing the read
        value also spares every caller but the first the parsing.
        """
        params = dict(params or {})
        headers = dict(headers or {})
        if coalesce is None and self.options.coalesce_ttl <= 0:
            return read(self._fetch(url, params, headers, budget))
        request: _Key = (url, tuple(sorted(params.items())), tuple(sorted(headers.items())))
        key: _CacheKey = (request, coalesce, read)
        asked_at = self._clock.monotonic()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and (
                coalesce is not None or entry[0] >= asked_at - self.options.coalesce_ttl
            ):
                return cast(T, entry[1])
            flight = self._inflight.get(key)
            if flight is None:
                self._inflight[key] = flight = _Flight()
                leading = True
            else:
                self.callers_joined += 1
                leading = False
        if not leading:
            with flight.lock:  # released once the attempt is over
                pass
            if isinstance(flight.outcome, BaseException):
                raise _own_copy(flight.outcome)
            return cast(T, flight.outcome)
        fetched_at = self._clock.monotonic()
        usable = False
        try:
            value = read(self._fetch(url, params, headers, budget))
            flight.outcome, usable = value, True
        except Exception as exc:
            flight.outcome = exc
            raise
        finally:
            with self._lock:
                if usable:
                    self._cache[key] = (fetched_at, flight.outcome)
                del self._inflight[key]
            flight.lock.release()
        return value

    def _fetch(
        self, url: str, params: dict[str, str], headers: dict[str, str], budget: float | None
    ) -> HttpResponse:
        call = _Call(
            self,
            url,
            _request_target(url, tuple(params.items())),
            {**self._headers, **headers},
            budget,
            self._clock.monotonic(),
        )
        try:
            return self._retrying(call)
        except _RetryableStatus as exc:
            return exc.response

    def _attempt(self, call: _Call) -> HttpResponse:
        opts = self.options
        deadline = self._clock.monotonic() + opts.timeout
        with self._lock:
            self.requests_sent += 1
        target = call.target
        if isinstance(target, BadRequestError):
            raise target
        try:
            proxy = self._proxy_for(target)
            opener: urllib3.HTTPConnectionPool | urllib3.ProxyManager
            if proxy is None:
                # Straight to the host's pool with the pre-encoded path: PoolManager.urlopen
                # would parse the whole URL again on every request.
                opener = self._pool.connection_from_host(target.host, target.port, target.scheme)
                where = target.path
            else:  # the proxy manager needs the whole URL (absolute form, or a CONNECT tunnel)
                opener, where = self._proxy_manager(proxy), target.url
            resp = opener.urlopen(
                "GET",
                where,
                headers=call.headers,
                assert_same_host=False,
                timeout=self._timeout,
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except urllib3.exceptions.LocationValueError as exc:
            raise BadRequestError(f"invalid URL {call.url!r}: {exc}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _fetch_error(exc, opts.timeout) from exc
        complete = False
        try:
            body = self._read_body(resp, deadline)
            complete = True
        finally:
            if not complete:  # never hand a half-read connection back for reuse
                resp.close()
            resp.release_conn()
        result = HttpResponse(resp.status, resp.headers.get("content-type", ""), body, target.url)
        if result.status in _RETRY_STATUSES:
            raise _RetryableStatus(result)
        return result

    def _proxy_for(self, target: _Target) -> str | None:
        """The proxy URL for ``target`` from the environment, or None to connect directly."""
        key = (target.scheme, target.host, target.port)
        if key in self._proxy_of:
            return self._proxy_of[key]
        proxy = self._proxies.get(target.scheme)
        where = target.host if target.port is None else f"{target.host}:{target.port}"
        if proxy and (_is_loopback(target.host) or urllib.request.proxy_bypass(where)):
            proxy = None  # loopback is never proxied (as in Go's ProxyFromEnvironment); NO_PROXY
        with self._lock:
            self._proxy_of[key] = proxy or None
        return proxy or None

    def _proxy_manager(self, proxy: str) -> urllib3.ProxyManager:
        with self._lock:
            manager = self._proxy_managers.get(proxy)
            if manager is None:
                manager = urllib3.ProxyManager(
                    proxy,
                    num_pools=64,
                    maxsize=self.options.max_connections,
                    block=False,
                    ssl_context=self._tls,
                    cert_reqs=self._cert_reqs,
                )
                self._proxy_managers[proxy] = manager
            return manager

    def _read_body(self, resp: urllib3.BaseHTTPResponse, deadline: float) -> bytes:
        """The whole body, refused as soon as it is over the cap or past the deadline."""
        opts = self.options
        declared = resp.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > opts.max_response_bytes:
            raise ResponseTooLarge(
                f"response of {declared} bytes exceeds the {opts.max_response_bytes}-byte limit"
            )
        chunks: list[bytes] = []
        size = 0
        try:
            while chunk := resp.read1(_CHUNK):  # whatever has arrived, so the deadline is seen
                size += len(chunk)
                if size > opts.max_response_bytes:
                    raise ResponseTooLarge(
                        f"response exceeds the {opts.max_response_bytes}-byte limit"
                    )
                if self._clock.monotonic() > deadline:
                    raise FetchError(f"response took longer than {opts.timeout:g}s")
                chunks.append(chunk)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _fetch_error(exc, opts.timeout) from exc
        return b"".join(chunks)


@attrs.frozen
class _Call:
    """One logical fetch, the unit tenacity retries; carries the budget its stop rule reads."""

    client: MetricHttpClient
    url: str  # as the caller gave it, for messages
    target: _Target | BadRequestError  # where to send it, or why it cannot be sent
    headers: dict[str, str]
    budget: float | None
    started: float

    def __call__(self) -> HttpResponse:
        return self.client._attempt(self)


class _OutOfBudget(tenacity.stop.stop_base):
    """Stop when the pause before another attempt plus that whole attempt would overrun the
    caller's budget (a sync that waits for a dead source must not miss its own schedule)."""

    def __init__(self, clock: Clock, timeout: float, wait: tenacity.wait.wait_base):
        self._clock = clock
        self._timeout = timeout
        self._wait = wait

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        call = retry_state.fn
        if not isinstance(call, _Call) or call.budget is None:
            return False
        elapsed = self._clock.monotonic() - call.started
        return elapsed + self._wait(retry_state) + self._timeout > call.budget


@attrs.frozen
class _Target:
    """A request's destination, parsed and encoded once."""

    scheme: str
    host: str
    port: int | None
    path: str  # path and query string, as sent on the request line
    url: str  # the whole URL, for messages and HttpResponse.url


@functools.lru_cache(maxsize=16384)  # above the unique questions of the largest fleets we measure
def _request_target(url: str, params: tuple[tuple[str, str], ...]) -> _Target | BadRequestError:
    """Where ``url`` with ``params`` merged into its query string goes, or why it cannot go.

    Cached: a scaler asks the same question every period, and parsing and encoding it again
    each time is measurable at thousands of scalers. The bound must exceed the number of
    distinct questions a manager asks, or the round-robin of syncs evicts every entry before
    its next use (10,000 scalers with one unique query each is the benchmark's worst case).
    """
    try:
        parsed = urllib3.util.parse_url(url.partition("#")[0])  # a fragment is never sent
    except urllib3.exceptions.LocationParseError as exc:
        return BadRequestError(f"invalid URL {url!r}: {exc}")
    scheme, host = parsed.scheme, parsed.host
    if scheme not in ("http", "https"):
        return BadRequestError(f"invalid URL {url!r}: scheme must be http or https, not {scheme!r}")
    if not scheme or not host:
        return BadRequestError(f"invalid URL {url!r}: no host")
    query = "&".join(q for q in (parsed.query, urlencode(params)) if q)
    parsed = parsed._replace(query=query or None)
    return _Target(scheme, host, parsed.port, parsed.request_uri, parsed.url)


def clip(text: str, limit: int = 120) -> str:
    """``text`` made safe to quote in an Event or condition: control characters become
    spaces and it is cut at ``limit`` characters. For the few short fields of a reply that an
    error names (an apiVersion, a label value); a response body is never quoted at all."""
    cleaned = "".join(c if c.isprintable() else " " for c in text[: limit + 1])
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


def json_kind(value: object) -> str:
    """The JSON type of a decoded value, to name what was wrong without quoting it."""
    if value is None:
        return "null"
    for kind, types in (("boolean", bool), ("number", (int, float)), ("string", str)):
        if isinstance(value, types):
            return kind
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "?"


def _fetch_error(exc: Exception, timeout: float) -> FetchError:
    """The FetchError for a transport failure, whether it struck connecting or reading."""
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return FetchError(f"timed out after {timeout:g}s ({type(exc).__name__})")
    if isinstance(exc, urllib3.exceptions.SSLError):
        return FetchError(f"TLS error: {clip(str(exc), 300)}")
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        # the message may quote what the server sent (a malformed status line): name the
        # failure, never the bytes
        inner = exc.args[1] if len(exc.args) > 1 else None
        kind = type(inner).__name__ if isinstance(inner, BaseException) else "protocol error"
        return FetchError(f"the connection broke ({kind})")
    return FetchError(f"{type(exc).__name__}: {clip(str(exc), 300)}")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _own_copy(exc: BaseException) -> BaseException:
    """A copy of a shared attempt's failure for one waiting caller to raise: raising the one
    exception object from several threads at once would tangle their tracebacks."""
    try:
        mine = copy.copy(exc)
    except Exception:
        return FetchError(str(exc))
    mine.__cause__ = exc.__cause__
    return mine
