"""Header values read from Secrets (``spec.serverHeadersFrom[].valueFrom.secretKeyRef``).

The manager reads a Secret with a GET of that one object in the scaler's namespace: it never
lists or watches Secrets, so it holds no copy of Secrets nobody referenced. A GET per sync
would put one request per scaler and period on the API server, so each Secret is kept for
``ttl`` seconds (30 by default; a rotated value is picked up within that time), and a failed
read for ``error_ttl`` seconds. Scalers without Secret headers never reach this module.

A value never leaves the process except as the header it was asked for: error messages name
the Secret and the key but never the value, and values are :class:`Redacted` strings whose
``repr`` (what a traceback, a debug dump of a spec, or a structlog key=value pair shows) is
``'<redacted>'``.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from cachetools import LRUCache

from llmscaler_runtime.api.v1alpha1 import FrozenMap, HeaderSource
from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock
from llmscaler_runtime.kube.errors import ApiError, Forbidden, NotFound
from llmscaler_runtime.scaling.ports import ObjectGetter

__all__ = [
    "FAILED_GET_SECRET",
    "SECRET_FORBIDDEN",
    "Redacted",
    "SecretHeaderError",
    "SecretHeaderResolver",
]

FAILED_GET_SECRET = "FailedGetSecret"
SECRET_FORBIDDEN = "SecretForbidden"


class Redacted(str):
    """A string that shows as ``'<redacted>'`` in every ``repr``; its value is unchanged."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "'<redacted>'"


class SecretHeaderError(Exception):
    """A header's Secret cannot be used; ``reason`` is the condition reason to report."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


SecretGetter = ObjectGetter
"""The one call this module makes: a get of the Secret (a subset of ``kube.Client``)."""


def _header_value(raw: bytes, key: str, secret: str) -> Redacted:
    """The header value held by ``raw``: surrounding whitespace (a file's trailing newline)
    is dropped; anything but printable ASCII inside is refused, without echoing it."""
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        text = None
    if text is None or any(not (" " <= c <= "~" or c == "\t") for c in text):
        raise SecretHeaderError(
            FAILED_GET_SECRET,
            f"key {key!r} of Secret {secret!r} holds a line break, a control character or "
            "non-ASCII bytes, which cannot go into an HTTP header",
        )
    if not text:
        raise SecretHeaderError(FAILED_GET_SECRET, f"key {key!r} of Secret {secret!r} is empty")
    return Redacted(text)


class _Entry:
    __slots__ = ("at", "data", "error", "resource_version", "values")

    def __init__(
        self,
        at: float,
        data: Mapping[str, Any] | None,
        resource_version: str,
        error: SecretHeaderError | None,
    ) -> None:
        self.at = at
        self.data = data
        self.resource_version = resource_version
        self.error = error
        self.values: dict[str, Redacted] = {}  # decoded keys, filled on first use


class SecretHeaderResolver:
    """Resolves ``serverHeadersFrom`` into header values, with a short per-Secret cache."""

    def __init__(
        self,
        client: SecretGetter,
        *,
        ttl: float = 30.0,
        error_ttl: float = 5.0,
        clock: Clock = SYSTEM_CLOCK,
        max_secrets: int = 4096,
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.error_ttl = error_ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: LRUCache[tuple[str, str], _Entry] = LRUCache(maxsize=max_secrets)
        self.gets = 0  # Secret GETs made; for tests and benchmarks

    def headers(
        self,
        namespace: str,
        sources: Sequence[HeaderSource],
        base: Mapping[str, str] | None = None,
    ) -> FrozenMap:
        """``base`` plus every header of ``sources``; raises SecretHeaderError."""
        out = dict(base or {})
        for source in sources:
            if source.value_from is None:
                out[source.name] = source.value or ""
                continue
            ref = source.value_from.secret_key_ref
            out[source.name] = self._value(namespace, ref.name, ref.key)
        return FrozenMap(out)

    def _value(self, namespace: str, name: str, key: str) -> Redacted:
        entry = self._entry(namespace, name)
        if entry.error is not None:
            raise SecretHeaderError(entry.error.reason, str(entry.error))
        with self._lock:
            value = entry.values.get(key)
        if value is not None:
            return value
        assert entry.data is not None
        raw = entry.data.get(key)
        if not isinstance(raw, str):
            keys = ", ".join(sorted(map(repr, entry.data))) or "none"
            raise SecretHeaderError(
                FAILED_GET_SECRET,
                f"Secret {name!r} in namespace {namespace!r} has no key {key!r} (its keys: {keys})",
            )
        try:
            decoded = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise SecretHeaderError(
                FAILED_GET_SECRET, f"key {key!r} of Secret {name!r} is not valid base64"
            ) from None
        value = _header_value(decoded, key, name)
        with self._lock:
            entry.values[key] = value
        return value

    def _entry(self, namespace: str, name: str) -> _Entry:
        now = self._clock.monotonic()
        cache_key = (namespace, name)
        with self._lock:
            entry = self._cache.get(cache_key)
        if entry is not None:
            ttl = self.error_ttl if entry.error is not None else self.ttl
            if now - entry.at < ttl:
                return entry
        entry = self._fetch(namespace, name, now, entry)
        with self._lock:
            self._cache[cache_key] = entry
        return entry

    def _fetch(self, namespace: str, name: str, now: float, old: _Entry | None) -> _Entry:
        with self._lock:
            self.gets += 1
        where = f"Secret {name!r} in namespace {namespace!r}"
        try:
            secret = self.client.get("v1", "Secret", name, namespace)
        except NotFound:
            return _Entry(now, None, "", SecretHeaderError(FAILED_GET_SECRET, f"{where} not found"))
        except Forbidden:
            return _Entry(
                now,
                None,
                "",
                SecretHeaderError(
                    SECRET_FORBIDDEN,
                    f"the manager may not get {where} (Forbidden): its role lacks get on "
                    "secrets (chart value rbac.secretHeaders)",
                ),
            )
        except ApiError as exc:
            return _Entry(
                now,
                None,
                "",
                SecretHeaderError(FAILED_GET_SECRET, f"cannot get {where}: HTTP {exc.status}"),
            )
        data = secret.get("data") or {}
        rv = str((secret.get("metadata") or {}).get("resourceVersion") or "")
        if not isinstance(data, Mapping):
            data = {}
        entry = _Entry(now, data, rv, None)
        if old is not None and old.error is None and rv and old.resource_version == rv:
            entry.values = old.values  # unchanged Secret: keep what was already decoded
        return entry
