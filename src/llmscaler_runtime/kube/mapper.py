"""Kind -> REST resource mapping from the server's discovery documents.

Paths use the lower-case plural (``deployments``), objects carry the Kind (``Deployment``);
only discovery knows the mapping for CRDs, and whether a kind is namespaced. Each
group/version is fetched once and cached. A miss refreshes that group/version once, because a
CRD may have been installed after the first lookup; a second miss raises NoKindMatch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs

from .errors import NotFound

__all__ = ["GVK", "NoKindMatch", "RESTMapper", "ResourceInfo"]


@attrs.frozen
class GVK:
    """Group, version and kind of an object type; ``group`` is "" for the core API."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` field as written in objects: ``v1`` or ``apps/v1``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GVK:
        """Split an ``apiVersion`` string; raises ValueError on a malformed one."""
        group, version = split_api_version(api_version)
        if not kind:
            raise ValueError("kind must not be empty")
        return cls(group, version, kind)


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> ("", ``v1``)."""
    if not api_version or api_version.count("/") > 1:
        raise ValueError(f"malformed apiVersion {api_version!r}")
    group, _, version = api_version.rpartition("/")
    if not version or (("/" in api_version) and not group):
        raise ValueError(f"malformed apiVersion {api_version!r}")
    return group, version


@attrs.frozen
class ResourceInfo:
    """What a request for one kind needs to know: its path segment and scope."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string of this resource's objects."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def base_path(self) -> str:
        """``/api/v1`` for the core group, ``/apis/GROUP/VERSION`` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


class NoKindMatch(LookupError):
    """The server does not serve this kind in this group/version (not even after a refresh)."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f"no resource for kind {kind!r} in {api_version!r}")
        self.api_version = api_version
        self.kind = kind


def _parse_resource_list(group: str, version: str, doc: dict[str, Any]) -> dict[str, ResourceInfo]:
    subresources: dict[str, set[str]] = {}
    mains: list[dict[str, Any]] = []
    for entry in doc.get("resources") or []:
        name = str(entry.get("name", ""))
        if "/" in name:
            base, _, sub = name.partition("/")
            subresources.setdefault(base, set()).add(sub)
        elif name:
            mains.append(entry)
    by_kind: dict[str, ResourceInfo] = {}
    for entry in mains:
        plural = str(entry["name"])
        kind = str(entry.get("kind", ""))
        if not kind or kind in by_kind:
            continue
        by_kind[kind] = ResourceInfo(
            group=str(entry.get("group") or group),
            version=str(entry.get("version") or version),
            kind=kind,
            plural=plural,
            namespaced=bool(entry.get("namespaced", False)),
            subresources=frozenset(subresources.get(plural, ())),
            verbs=frozenset(str(v) for v in entry.get("verbs") or ()),
        )
    return by_kind


class RESTMapper:
    """Discovery-backed, cached kind lookup; thread-safe.

    ``fetch`` performs ``GET path`` and returns the decoded JSON (raising NotFound for an
    unknown group/version); the Client passes its own request method.
    """

    def __init__(self, fetch: Callable[[str], dict[str, Any]]) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._by_gv: dict[tuple[str, str], dict[str, ResourceInfo]] = {}
        self._static: dict[tuple[str, str, str], ResourceInfo] = {}

    def _load(self, group: str, version: str) -> dict[str, ResourceInfo]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = self._fetch(path)
        except NotFound:
            return {}
        return _parse_resource_list(group, version, doc)

    def resource_for(self, api_version: str, kind: str) -> ResourceInfo:
        """Map (apiVersion, kind) to its resource; raises NoKindMatch or ValueError."""
        group, version = split_api_version(api_version)
        key = (group, version)
        with self._lock:
            static = self._static.get((group, version, kind))
            cached = self._by_gv.get(key)
        if static is not None:
            return static
        if cached is not None and kind in cached:
            return cached[kind]
        # first lookup or a miss: (re)load this group/version once, outside the lock so a slow
        # discovery call does not block lookups of other, cached kinds
        fresh = self._load(group, version)
        with self._lock:
            self._by_gv[key] = fresh
        info = fresh.get(kind)
        if info is None:
            raise NoKindMatch(api_version, kind)
        return info

    def add(self, info: ResourceInfo) -> None:
        """Register a mapping by hand (servers without discovery, or tests)."""
        with self._lock:
            self._static[(info.group, info.version, info.kind)] = info

    def invalidate(self) -> None:
        """Forget discovered kinds so the next lookup re-reads discovery (manual ones stay)."""
        with self._lock:
            self._by_gv.clear()
