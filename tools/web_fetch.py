"""Fetch a web page and return its readable text, behind an SSRF guard.

The model chooses the URL, and the URL may come from a page the model just read, so the tool
refuses anything that is not a public http(s) address:

- only `http` and `https` URLs (no `file:`, `ftp:`, `gopher:`, `data:` ...);
- the host name is resolved (`loop.getaddrinfo`, replaceable with `use_resolver` for tests) and
  EVERY address it resolves to must be public: loopback, private, link-local, multicast,
  reserved, unspecified, carrier-grade NAT (100.64.0.0/10), other non-global ranges and cloud
  metadata addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16) are
  refused, including IPv4 addresses embedded in IPv6 (`::ffff:127.0.0.1`, 6to4, Teredo, NAT64);
- redirects are followed by hand, at most `MAX_REDIRECTS`, and every hop is checked again.

DNS rebinding: the request is sent to the address that was checked, not to the name (the URL
carries the IP; the `Host` header and the TLS SNI carry the name, so certificates are still
verified against the name), so a second, different DNS answer cannot redirect the connection.
For the same reason this tool ignores proxy environment variables (a proxy would resolve the
name itself).

`REACT_AGENT_FETCH_ALLOW` (comma-separated) opens the guard for trusted targets: host names
(`localhost`, `wiki.internal`; `.corp.example` for every subdomain), addresses or networks
(`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`). `REACT_AGENT_FETCH_MAX_CHARS` (default 8000) caps the
returned text; the body is also capped by `REACT_AGENT_HTTP_MAX_BYTES` (the rest is not read).
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
from html.parser import HTMLParser
from typing import TypeAlias
from urllib.parse import urlsplit

import httpx
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools import http
from tools._support import env_int, env_str, run_sync

MAX_REDIRECTS = 5
DEFAULT_MAX_CHARS = 8000
MAX_URL_CHARS = 2000
ALLOW_VARIABLE = "REACT_AGENT_FETCH_ALLOW"

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver: TypeAlias = Callable[[str, int], Awaitable[list[str]]]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16")
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/x-ndjson",
        "application/rss+xml",
        "application/atom+xml",
    }
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")
_ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.1"


# --- the guard ---------------------------------------------------------------------------------


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


async def check_url(url: httpx.URL, allow: AllowList, refusal: str) -> Target:
    """Resolve and check `url`; a refusal is a ToolException starting with `refusal`."""
    if url.scheme not in ("http", "https"):
        raise ToolException(f"{refusal}: only http and https URLs are allowed.")
    host = url.raw_host.decode("ascii", errors="replace").strip("[]")
    if not host:
        raise ToolException(f"{refusal}: the URL has no host name.")
    literal = _literal_address(host)
    if literal is not None:
        candidates = [str(literal)]
    else:
        try:
            async with asyncio.timeout(http.settings().timeout):
                candidates = await _resolver.get()(host, url.port or _default_port(url))
        except (OSError, UnicodeError, TimeoutError) as exc:
            raise ToolException(
                f"Could not fetch {url}: the host name {host} could not be resolved "
                f"({_short_error(exc)})."
            ) from None
        if not candidates:
            raise ToolException(f"Could not fetch {url}: the host name {host} has no address.")
    host_allowed = allow.permits_host(host)
    addresses: list[str] = []
    for candidate in candidates:
        address = _literal_address(candidate)
        if address is None:
            raise ToolException(f"{refusal}: {host} resolved to {candidate!r}, not an address.")
        reason = blocked_reason(address)
        if reason and not (host_allowed or allow.permits_address(address)):
            where = f"{address} is" if literal is not None else f"{host} resolves to {address},"
            raise ToolException(
                f"{refusal}: {where} {_article(reason)} {reason} address (allowed only if "
                f"listed in {ALLOW_VARIABLE})."
            )
        addresses.append(str(address))
    return Target(url, tuple(addresses))


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


def _short_error(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# --- HTML to text ------------------------------------------------------------------------------

_SKIP_TAGS = frozenset(
    {
        "script", "style", "noscript", "svg", "math", "template", "nav", "aside",
        "iframe", "object", "canvas", "select", "button", "dialog",
    }
)  # fmt: skip
_CHROME_TAGS = frozenset({"header", "footer"})  # dropped unless inside <article> / <main>
_CONTENT_TAGS = frozenset({"article", "main"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "blockquote", "br", "caption", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
        "h5", "h6", "header", "hr", "legend", "li", "main", "ol", "p", "pre", "section",
        "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
_VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
     "track", "wbr"}
)  # fmt: skip


_WHITESPACE = re.compile(r"\s+")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title_parts: list[str] = []
        self.first_h1: list[str] = []
        self.parts: list[str] = []
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._content_depth = 0
        self._in_title = False
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag and tag not in _VOID_TAGS:
                self._skip_depth += 1
            return
        hidden = any(
            name == "hidden" or (name == "aria-hidden" and (value or "").lower() == "true")
            for name, value in attrs
        )
        chrome = tag in _CHROME_TAGS and self._content_depth == 0
        if (tag in _SKIP_TAGS or chrome or hidden) and tag not in _VOID_TAGS:
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in _CONTENT_TAGS:
            self._content_depth += 1
        if tag == "title":
            self._in_title = True
        if tag == "h1":
            self._in_h1 = True
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            return
        if tag in _CONTENT_TAGS and self._content_depth:
            self._content_depth -= 1
        if tag == "title":
            self._in_title = False
        if tag == "h1":
            self._in_h1 = False
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip_tag is not None:
            return
        if self._in_title:
            self.title_parts.append(data)
            return
        data = _WHITESPACE.sub(" ", data)
        if self._in_h1 and len(self.first_h1) < 50:
            self.first_h1.append(data)
        self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, text) of an HTML document; blocks on their own lines, whitespace collapsed."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    text = "\n".join(line for line in lines if line and line != "-")
    title = " ".join("".join(parser.title_parts).split()) or " ".join(
        "".join(parser.first_h1).split()
    )
    return title, text


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def _decode_html(response: http.Response) -> str:
    encoding = response.charset
    if not encoding:
        match = _META_CHARSET.search(response.content[:4096])
        encoding = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return response.content.decode(encoding, errors="replace")
    except LookupError:
        return response.content.decode("utf-8", errors="replace")


def _kind(response: http.Response) -> str:
    """'html', 'text' or 'binary'."""
    kind = response.content_type
    if kind in _HTML_TYPES:
        return "html"
    if kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml")):
        return "text"
    if kind:
        return "binary"
    head = response.content[:1024].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    if b"\x00" in head:
        return "binary"
    try:
        response.content[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 4090:  # a character cut at the end of the sample is fine
            return "binary"
    return "text"


# --- the tool ----------------------------------------------------------------------------------


async def fetch_page(url: str) -> str:
    """The readable text of the page at `url` (see the module docstring for the guard)."""
    raw = url.strip()
    if not raw:
        raise ToolException("Give the URL of the page to fetch, e.g. 'https://example.com/'.")
    if len(raw) > MAX_URL_CHARS:
        raise ToolException(f"The URL is longer than {MAX_URL_CHARS} characters.")
    if "://" not in raw and not _SCHEME.match(raw):
        raw = f"https://{raw}"  # 'example.com/page' or 'localhost:8080/x'; 'mailto:x' is refused
    max_chars = env_int("REACT_AGENT_FETCH_MAX_CHARS", DEFAULT_MAX_CHARS, minimum=1)
    allow = AllowList.parse(env_str(ALLOW_VARIABLE, ""))
    current = _parse_url(raw)
    refusal = f"Refusing to fetch {raw}"
    async with http.make_client(follow_redirects=False, trust_env=False) as client:
        for hop in range(MAX_REDIRECTS + 1):
            target = await check_url(current, allow, refusal)
            response = await _get(client, target)
            location = response.headers.get("location")
            if response.status not in _REDIRECT_STATUSES or not location:
                if response.status >= 300:
                    raise ToolException(f"Could not fetch {current}: HTTP {response.status}.")
                return _render(current, response, max_chars)
            if hop == MAX_REDIRECTS:
                break
            try:
                following = current.join(location)
            except httpx.InvalidURL:
                raise ToolException(
                    f"Could not fetch {current}: it redirects to an invalid URL {location!r}."
                ) from None
            shown = location if urlsplit(location).scheme else str(following)
            refusal = f"Refusing to follow the redirect from {current} to {shown}"
            current = following
    raise ToolException(f"Could not fetch {raw}: more than {MAX_REDIRECTS} redirects.")


def _parse_url(raw: str) -> httpx.URL:
    try:
        parsed = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        raise ToolException(f"Refusing to fetch {raw}: not a valid URL ({exc}).") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolException(f"Refusing to fetch {raw}: only http and https URLs are allowed.")
    return parsed


async def _get(client: httpx.AsyncClient, target: Target) -> http.Response:
    """GET the target from its checked addresses in turn (the next one if unreachable)."""
    url = target.url
    host = url.raw_host.decode("ascii", errors="replace")
    headers = {"Host": url.netloc.decode("ascii", errors="replace"), "Accept": _ACCEPT}
    extensions = {"sni_hostname": host} if url.scheme == "https" else None
    failure: http.HTTPFailure | None = None
    for address in target.addresses:
        try:
            return await http.fetch(
                str(url.copy_with(host=address)),
                headers=headers,
                client=client,
                truncate=True,
                extensions=extensions,
            )
        except http.HTTPFailure as exc:
            failure = exc
            if exc.kind != "unreachable":
                break
    assert failure is not None
    raise ToolException(f"Could not fetch {url}: {failure.reason}.")


def _render(url: httpx.URL, response: http.Response, max_chars: int) -> str:
    kind = _kind(response)
    if kind == "binary":
        raise ToolException(
            f"Refusing to read {url}: its content type {response.content_type or 'unknown'} is "
            f"not text (web_fetch reads HTML, plain text and JSON)."
        )
    if kind == "html":
        title, text = html_to_text(_decode_html(response))
    else:
        title, text = "", response.text().strip()
    lines = []
    if title:
        lines.append(f"Title: {title}")
    lines.append(f"URL: {url}")
    if response.truncated:
        size = http.human_size(len(response.content))
        lines.append(f"[The page is larger than {size}; only the first {size} were read.]")
    body = text or "(the page has no readable text)"
    if len(body) > max_chars:
        body = body[:max_chars].rstrip() + (
            f"\n[Cut: showing the first {max_chars:,} of {len(text):,} characters.]"
        )
    return "\n".join(lines) + "\n\n" + body


class WebFetchInput(BaseModel):
    url: str = Field(
        description="The http(s) URL of the page to read, e.g. 'https://example.com/'."
    )


def _web_fetch(url: str) -> str:
    return run_sync(lambda: fetch_page(url))


web_fetch = StructuredTool.from_function(
    func=_web_fetch,
    coroutine=fetch_page,
    name="web_fetch",
    description=(
        "Download one public web page (http or https URL) and return its title and readable "
        "text, without scripts, menus or markup. Use it to read a page whose URL you already "
        "have, e.g. from a search result or the user; it cannot search and refuses private or "
        "local addresses."
    ),
    args_schema=WebFetchInput,
)
