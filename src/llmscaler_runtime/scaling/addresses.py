"""Where the manager may send metric requests: the ``--allowed-server-addresses`` policy.

Anyone who may create an LLMScaler chooses ``serverAddress``, so without a policy they can make
the manager send GETs (with headers) to any address it can reach: a cloud metadata endpoint, an
in-cluster admin API. The policy is a comma-separated list of entries:

* ``http`` / ``https`` (a bare scheme, optionally written ``https:`` or ``https://``): the
  address must use one of the listed schemes;
* ``10.0.0.0/8``, ``fd00::/8``, ``192.168.1.7``: CIDRs (a bare IP is a /32 or /128);
* ``prometheus.monitoring.svc``: one host name, ``*.svc.cluster.local``: any name below
  that suffix;
* ``!169.254.0.0/16``, ``!metadata.google.internal``: deny entries, checked first;
* ``*``: any host (useful with scheme entries, or as "everything but the deny entries").

An address is allowed when its scheme is listed (or no scheme entry exists), no deny entry
matches, and its host matches an allow entry (or no host entry exists). A host *name* matches
a name entry by name; otherwise it is resolved, and it is allowed only if **every** address it
resolves to lies in an allowed CIDR. Deny CIDRs are checked against every resolved address even
for names allowed by name, so DNS cannot smuggle ``169.254.169.254`` in under a friendly name.

Limits (time of check to time of use): the name is resolved here and again when the connection
is made, so a name whose DNS answer changes in between (DNS rebinding) can still reach an
address the check did not see; resolutions are cached for ``resolve_ttl`` seconds. Through an
HTTP proxy (``HTTP_PROXY``) the proxy, not the manager, resolves and connects. Network policy
on the manager's egress is the stronger control; this policy is the one a cluster operator can
set without it.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import urllib3

from llmscaler_runtime.clock import SYSTEM_CLOCK, Clock

__all__ = ["AddressNotAllowed", "AddressPolicy", "parse_address_policy"]

_IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_SCHEMES = ("http", "https")


class AddressNotAllowed(Exception):
    """``serverAddress`` is outside the manager's allowed addresses; the message says why."""


def _resolve(host: str, port: int | None) -> list[str]:
    infos = socket.getaddrinfo(host, port or 80, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


@attrs.frozen
class _Entries:
    schemes: frozenset[str] = frozenset()
    any_host: bool = False
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # ".svc.cluster.local"
    networks: tuple[_IPNetwork, ...] = ()
    deny_names: frozenset[str] = frozenset()
    deny_suffixes: tuple[str, ...] = ()
    deny_networks: tuple[_IPNetwork, ...] = ()

    @property
    def has_hosts(self) -> bool:
        return self.any_host or bool(self.names or self.suffixes or self.networks)


def _name_matches(host: str, names: frozenset[str], suffixes: tuple[str, ...]) -> bool:
    return host in names or any(host.endswith(s) and len(host) > len(s) for s in suffixes)


class AddressPolicy:
    """A parsed ``--allowed-server-addresses`` (see module docstring); thread-safe.

    The default policy allows everything and costs one attribute read per sync
    (``allow_all``).
    """

    def __init__(
        self,
        entries: Sequence[str] = (),
        *,
        resolver: Callable[[str, int | None], list[str]] = _resolve,
        resolve_ttl: float = 30.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.entries: tuple[str, ...] = tuple(e.strip() for e in entries if e.strip())
        self._parsed = _parse(self.entries)
        self.allow_all = not self.entries
        self._resolver = resolver
        self._ttl = resolve_ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._resolved: dict[tuple[str, int | None], tuple[float, list[str]]] = {}

    def __repr__(self) -> str:
        return f"AddressPolicy({','.join(self.entries) or '<allow all>'})"

    def check(self, url: str) -> None:
        """Raise AddressNotAllowed unless ``url`` may be requested under this policy."""
        if self.allow_all:
            return
        try:
            parsed = urllib3.util.parse_url(url)
        except urllib3.exceptions.LocationParseError:
            raise AddressNotAllowed(f"{url!r} is not a valid URL") from None
        scheme = (parsed.scheme or "").lower()
        host = (parsed.host or "").strip("[]").lower().rstrip(".")
        if not host:
            raise AddressNotAllowed(f"{url!r} has no host")
        p = self._parsed
        if p.schemes and scheme not in p.schemes:
            allowed = ", ".join(sorted(p.schemes))
            raise AddressNotAllowed(
                f"scheme {scheme or 'none'!r} is not allowed (allowed: {allowed})"
            )
        if _name_matches(host, p.deny_names, p.deny_suffixes):
            raise AddressNotAllowed(f"host {host!r} is denied")
        literal = _ip(host)
        needs_ips = bool(p.deny_networks) or (
            literal is None and p.has_hosts and not p.any_host and not self._name_allowed(host)
        )
        ips: list[_IPAddress] = []
        if literal is not None:
            ips = [literal]
        elif needs_ips:
            ips = self._addresses(host, parsed.port)
        for ip in ips:
            if any(ip in net for net in p.deny_networks):
                raise AddressNotAllowed(f"host {host!r} resolves to {ip}, which is denied")
        if not p.has_hosts or p.any_host:
            return
        if literal is None and self._name_allowed(host):
            return
        outside = [str(ip) for ip in ips if not any(ip in net for net in p.networks)]
        if outside or not ips:
            shown = f" resolves to {', '.join(outside)}, which is" if literal is None else " is"
            raise AddressNotAllowed(f"host {host!r}{shown} not in the allowed addresses")

    def _name_allowed(self, host: str) -> bool:
        return _name_matches(host, self._parsed.names, self._parsed.suffixes)

    def _addresses(self, host: str, port: int | None) -> list[_IPAddress]:
        key = (host, port)
        now = self._clock.monotonic()
        with self._lock:
            cached = self._resolved.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            raw = cached[1]
        else:
            try:
                raw = self._resolver(host, port)
            except OSError as exc:
                raise AddressNotAllowed(f"host {host!r} cannot be resolved ({exc})") from None
            with self._lock:
                if len(self._resolved) > 4096:
                    self._resolved.clear()
                self._resolved[key] = (now, raw)
        out = [ip for ip in map(_ip, raw) if ip is not None]
        if not out:
            raise AddressNotAllowed(f"host {host!r} resolves to no address")
        return out


def _ip(text: str) -> _IPAddress | None:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # ::ffff:169.254.169.254 is 169.254.169.254
    return ip


def _parse(entries: Sequence[str]) -> _Entries:
    out: dict[str, Any] = {
        "schemes": set(),
        "names": set(),
        "suffixes": [],
        "networks": [],
        "deny_names": set(),
        "deny_suffixes": [],
        "deny_networks": [],
    }
    any_host = False
    for raw in entries:
        entry = raw.lower()
        deny = entry.startswith("!")
        if deny:
            entry = entry[1:].strip()
        bare = entry.removesuffix("://").removesuffix(":")
        if bare in _SCHEMES and entry in (bare, bare + ":", bare + "://"):
            if deny:
                raise ValueError(f"{raw!r}: a scheme cannot be denied; list the allowed ones")
            out["schemes"].add(bare)
            continue
        if entry == "*":
            if deny:
                raise ValueError(f"{raw!r}: denying every host allows nothing")
            any_host = True
            continue
        prefix = "deny_" if deny else ""
        try:
            net = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            net = None
        if net is not None:
            out[prefix + "networks"].append(net)
            continue
        if "://" in entry or "/" in entry or ":" in entry:
            raise ValueError(
                f"{raw!r} is not a scheme, a CIDR, an IP, a host name or *.suffix "
                "(write hosts without scheme or port)"
            )
        if entry.startswith("*."):
            suffix = entry[1:]
            if not _is_hostname(suffix[1:]):
                raise ValueError(f"{raw!r}: {suffix[1:]!r} is not a host name")
            out[prefix + "suffixes"].append(suffix)
            continue
        if not _is_hostname(entry):
            raise ValueError(f"{raw!r} is not a scheme, a CIDR, an IP, a host name or *.suffix")
        out[prefix + "names"].add(entry.rstrip("."))
    return _Entries(
        schemes=frozenset(out["schemes"]),
        any_host=any_host,
        names=frozenset(out["names"]),
        suffixes=tuple(out["suffixes"]),
        networks=tuple(out["networks"]),
        deny_names=frozenset(out["deny_names"]),
        deny_suffixes=tuple(out["deny_suffixes"]),
        deny_networks=tuple(out["deny_networks"]),
    )


def _is_hostname(text: str) -> bool:
    labels = text.rstrip(".").split(".")
    return (
        bool(text)
        and len(text) <= 253
        and all(
            0 < len(label) <= 63
            and label[0] != "-"
            and label[-1] != "-"
            and all(c.isalnum() or c == "-" for c in label)
            and label.isascii()
            for label in labels
        )
    )


def parse_address_policy(text: str | None, **kwargs: Any) -> AddressPolicy:
    """The policy of a ``--allowed-server-addresses`` value; ValueError names a bad entry."""
    return AddressPolicy([e for e in (text or "").split(",") if e.strip()], **kwargs)
