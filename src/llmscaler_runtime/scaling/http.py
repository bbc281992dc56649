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
"""

from __future__ import annotations

import functools
import ipaddress
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Hashable, Mapping
from urllib.parse import urlencode

import attrs
import certifi
import tenacity
import urllib3
from cachetools import LRUCache

from llmscaler_runtime import __version__

__all__ = [
    "BadRequestError",
    "FetchError",
    "HttpOptions",
    "HttpResponse",
    "MetricHttpClient",
    "ResponseTooLarge",
]

MiB = 1024 * 1024
_CHUNK = 64 * 1024  # read size while streaming a body: the cap and deadline are checked per read
_RETRY_STATUSES = frozenset({429, 502, 503, 504})


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


class _Flight:
    """One key's fetch in progress: callers of the same key queue on its lock."""

    __slots__ = ("lock", "waiters")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiters = 0


_Key = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
_CacheKey = tuple[_Key, Hashable]


class MetricHttpClient:
    """Thread-safe GET client for metric sources (see module docstring)."""

    def __init__(
        self,
        options: HttpOptions | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
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
        # (request, token) -> (fetched at, answer); token None entries expire after coalesce_ttl
        self._cache: LRUCache[_CacheKey, tuple[float, HttpResponse | FetchError]] = LRUCache(
            maxsize=4096
        )
        self._inflight: dict[_CacheKey, _Flight] = {}
        self.requests_sent = 0  # attempts that reached the network layer; for tests and metrics

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
        """
        params = dict(params or {})
        headers = dict(headers or {})
        if coalesce is None and self.options.coalesce_ttl <= 0:
            return self._fetch(url, params, headers, budget)
        request: _Key = (url, tuple(sorted(params.items())), tuple(sorted(headers.items())))
        key: _CacheKey = (request, coalesce)
        asked_at = self._clock()
        with self._lock:
            hit = self._fresh(key, asked_at)
            if hit is None:
                flight = self._inflight.setdefault(key, _Flight())
                flight.waiters += 1
        if hit is not None:
            return _unwrap(hit)
        try:
            with flight.lock:
                # Whoever held the lock before us may have fetched after we asked: share it.
                with self._lock:
                    hit = self._fresh(key, asked_at)
                if hit is None:
                    fetched_at = self._clock()
                    try:
                        hit = self._fetch(url, params, headers, budget)
                    except FetchError as exc:
                        hit = exc
                    with self._lock:
                        self._cache[key] = (fetched_at, hit)
        finally:
            with self._lock:
                flight.waiters -= 1
                if flight.waiters == 0:
                    self._inflight.pop(key, None)
        return _unwrap(hit)

    def _fresh(self, key: _CacheKey, asked_at: float) -> HttpResponse | FetchError | None:
        """The shared answer for ``key``: any under a token, else one younger than the TTL."""
        entry = self._cache.get(key)
        if entry is None:
            return None
        if key[1] is None and entry[0] < asked_at - self.options.coalesce_ttl:
            return None
        return entry[1]

    def _fetch(
        self, url: str, params: dict[str, str], headers: dict[str, str], budget: float | None
    ) -> HttpResponse:
        call = _Call(
            self,
            url,
            _request_target(url, tuple(params.items())),
            {**self._headers, **headers},
            budget,
            self._clock(),
        )
        try:
            return self._retrying(call)
        except _RetryableStatus as exc:
            return exc.response

    def _attempt(self, call: _Call) -> HttpResponse:
        opts = self.options
        deadline = self._clock() + opts.timeout
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
                if self._clock() > deadline:
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

    def __init__(self, clock: Callable[[], float], timeout: float, wait: tenacity.wait.wait_base):
        self._clock = clock
        self._timeout = timeout
        self._wait = wait

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        call = retry_state.fn
        if not isinstance(call, _Call) or call.budget is None:
            return False
        elapsed = self._clock() - call.started
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


def _fetch_error(exc: Exception, timeout: float) -> FetchError:
    """The FetchError for a transport failure, whether it struck connecting or reading."""
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return FetchError(f"timed out after {timeout:g}s ({type(exc).__name__})")
    if isinstance(exc, urllib3.exceptions.SSLError):
        return FetchError(f"TLS error: {exc}")
    return FetchError(f"{type(exc).__name__}: {exc}")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _unwrap(hit: HttpResponse | FetchError) -> HttpResponse:
    if isinstance(hit, FetchError):
        raise FetchError(str(hit))
    return hit
