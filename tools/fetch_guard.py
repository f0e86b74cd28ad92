"""The SSRF guard of `web_fetch`: which URLs and addresses may be fetched at all.

Kept apart from the tool because it is the security boundary and is tested on its own. The model
chooses the URL, and the URL may come from a page the model just read, so only public http(s)
addresses pass:

- only `http` and `https` URLs (no `file:`, `ftp:`, `gopher:`, `data:` ...);
- the host name is resolved (`loop.getaddrinfo`, replaceable with `use_resolver` for tests) and
  EVERY address it resolves to must be public: loopback, private, link-local, multicast,
  reserved, unspecified, carrier-grade NAT (100.64.0.0/10), other non-global ranges and cloud
  metadata addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16) are
  refused, including IPv4 addresses embedded in IPv6 (`::ffff:127.0.0.1`, 6to4, Teredo, NAT64).

`check_url` returns the checked addresses; the tool connects to those, never to the name again
(DNS rebinding). `REACT_AGENT_FETCH_ALLOW` (comma-separated) opens the guard for trusted targets:
host names (`localhost`, `wiki.internal`; `.corp.example` for every subdomain), addresses or
networks (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`).

`REACT_AGENT_FETCH_ALLOW_HOSTS` (comma-separated, unset by default) narrows it the other way:
when set, only hosts matching one of its patterns are fetched, every redirect target included.
A pattern is a host name (`example.com`: that host only), `*.` and a name (`*.wikipedia.org`:
every subdomain, not the bare name, which is listed on its own if wanted) or an address. It is
the operator's answer to `web_fetch` being an outbound channel the model controls (a page can
tell the model to fetch a URL carrying what it knows): with a list, data can only go to those
hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeAlias

import httpx
from langchain_core.tools import ToolException

from tools import http_client

ALLOW_VARIABLE = "REACT_AGENT_FETCH_ALLOW"
HOSTS_VARIABLE = "REACT_AGENT_FETCH_ALLOW_HOSTS"
MAX_SHOWN_URL_CHARS = 300

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver: TypeAlias = Callable[[str, int], Awaitable[list[str]]]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16")
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, through the event loop's `getaddrinfo`."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


_resolver: ContextVar[Resolver] = ContextVar("react_agent_fetch_resolver", default=system_resolver)


@contextlib.contextmanager
def use_resolver(resolver: Resolver) -> Iterator[None]:
    """Resolve host names with `resolver(host, port) -> [addresses]` in this context (tests)."""
    token = _resolver.set(resolver)
    try:
        yield
    finally:
        _resolver.reset(token)


def blocked_reason(address: IPAddress) -> str | None:
    """Why `address` must not be fetched ('loopback', 'private', ...), or None if public."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo:
            embedded = address.teredo[1]
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and (reason := blocked_reason(embedded)):
            return reason
    checks: list[tuple[bool, str]] = [
        (address in METADATA_ADDRESSES, "cloud metadata"),
        (address.is_loopback, "loopback"),
        (address.is_unspecified, "unspecified"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address.version == 4 and address in _CGNAT, "carrier-grade NAT"),
        (address.is_private, "private"),
        (address.is_reserved, "reserved"),
        (not address.is_global, "non-public"),
    ]
    return next((reason for hit, reason in checks if hit), None)


@dataclass(frozen=True)
class AllowList:
    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = field(default=())

    @classmethod
    def parse(cls, raw: str) -> AllowList:
        hosts: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for entry in (e.strip().lower() for e in raw.split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if not re.fullmatch(r"\.?[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?", entry):
                raise ToolException(
                    f"{ALLOW_VARIABLE} has an entry {entry!r} that is neither a host name nor "
                    f"an address or network like 10.0.0.0/8."
                )
            if entry.startswith("."):
                suffixes.append(entry.rstrip("."))
            else:
                hosts.add(entry.rstrip("."))
        return cls(frozenset(hosts), tuple(suffixes), tuple(networks))

    def permits_host(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return name in self.hosts or any(name.endswith(s) or name == s[1:] for s in self.suffixes)

    def permits_address(self, address: IPAddress) -> bool:
        candidates: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            candidates.append(address.ipv4_mapped)
        return any(a in n for a in candidates for n in self.networks if a.version == n.version)


@dataclass(frozen=True)
class HostPatterns:
    """The hosts `REACT_AGENT_FETCH_ALLOW_HOSTS` lets `web_fetch` reach; empty: any host."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # '.wikipedia.org' for '*.wikipedia.org'

    @classmethod
    def parse(cls, raw: str) -> HostPatterns:
        names: set[str] = set()
        suffixes: list[str] = []
        for entry in (e.strip() for e in raw.split(",")):
            if not entry:
                continue
            wildcard = entry.startswith("*.")
            name = _host_key(entry[2:] if wildcard else entry)
            if name is None or "*" in name:
                raise ToolException(
                    f"{HOSTS_VARIABLE} has an entry {entry!r} that is not a host name, an "
                    f"address or '*.' and a domain (e.g. example.com,*.wikipedia.org)."
                )
            if wildcard:
                suffixes.append("." + name)
            else:
                names.add(name)
        return cls(frozenset(names), tuple(suffixes))

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes)

    def permits(self, url: httpx.URL) -> bool:
        """Whether the URL's host matches a pattern (always, when there are none)."""
        if not self:
            return True
        host = _host_key(url.raw_host.decode("ascii", errors="replace"))
        return host is not None and (host in self.names or host.endswith(self.suffixes))


def _host_key(host: str) -> str | None:
    """A host as compared: IDNA-encoded, lower case, no trailing dot, an address in its short
    form; None if it is not a host."""
    literal = _literal_address(host)
    if literal is not None:
        return str(literal)
    if any(mark in host for mark in "/:@?#[]"):
        return None  # a URL or a port, not a host
    try:
        name = httpx.URL(f"http://{host.strip()}/").raw_host.decode("ascii").lower().rstrip(".")
    except (httpx.InvalidURL, UnicodeError):
        return None
    if not re.fullmatch(r"[a-z0-9_*-]+(\.[a-z0-9_*-]+)*", name):
        return None
    return name


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return None


@dataclass(frozen=True)
class Target:
    url: httpx.URL  # what the user asked for (the name)
    addresses: tuple[str, ...]  # checked addresses to connect to, in order


async def check_url(
    url: httpx.URL, allow: AllowList, refusal: str, hosts: HostPatterns | None = None
) -> Target:
    """Resolve and check `url`; a refusal is a ToolException starting with `refusal`. With
    `hosts`, a host that matches none of its patterns is refused before any DNS lookup."""
    if url.scheme not in ("http", "https"):
        raise ToolException(f"{refusal}: only http and https URLs are allowed.")
    host = url.raw_host.decode("ascii", errors="replace").strip("[]")
    if not host:
        raise ToolException(f"{refusal}: the URL has no host name.")
    if hosts is not None and not hosts.permits(url):
        raise ToolException(
            f"{refusal}: {shown(host)} is not one of the hosts the operator allows "
            f"({HOSTS_VARIABLE})."
        )
    literal = _literal_address(host)
    if literal is not None:
        candidates = [str(literal)]
    else:
        try:
            async with asyncio.timeout(http_client.settings().timeout):
                candidates = await _resolver.get()(host, url.port or _default_port(url))
        except (OSError, UnicodeError, TimeoutError) as exc:
            raise ToolException(
                f"Could not fetch {shown(url)}: the host name {host} could not be resolved "
                f"({_short_error(exc)})."
            ) from None
        if not candidates:
            raise ToolException(
                f"Could not fetch {shown(url)}: the host name {host} has no address."
            )
    host_allowed = allow.permits_host(host)
    addresses: list[str] = []
    for candidate in candidates:
        address = _literal_address(candidate)
        if address is None:
            raise ToolException(
                f"{refusal}: {host} resolved to {shown(candidate)!r}, not an address."
            )
        reason = blocked_reason(address)
        if reason and not (host_allowed or allow.permits_address(address)):
            where = f"{address} is" if literal is not None else f"{host} resolves to {address},"
            raise ToolException(
                f"{refusal}: {where} {_article(reason)} {reason} address (allowed only if "
                f"listed in {ALLOW_VARIABLE})."
            )
        addresses.append(str(address))
    return Target(url, tuple(addresses))


def shown(url: httpx.URL | str) -> str:
    """A URL (or anything a server sent) for a message: at most `MAX_SHOWN_URL_CHARS`, since a
    redirect's Location can be many kilobytes long."""
    text = str(url)
    return text if len(text) <= MAX_SHOWN_URL_CHARS else text[: MAX_SHOWN_URL_CHARS - 1] + "…"


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


def _short_error(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
