"""Fetch a web page and return its readable text, behind an SSRF guard.

The model chooses the URL, and the URL may come from a page the model just read, so every URL
(and every redirect hop, followed by hand, at most `MAX_REDIRECTS`) goes through the guard in
`tools/fetch_guard.py`: public http(s) addresses only unless `REACT_AGENT_FETCH_ALLOW` says so.
What the body becomes (HTML to text, charsets, binary refusal) is `tools/fetch_body.py`; this
module is the tool: requests, redirects and the observation.

DNS rebinding: the request is sent to the address that was checked, not to the name (the URL
carries the IP; the `Host` header and the TLS SNI carry the name, so certificates are still
verified against the name), so a second, different DNS answer cannot redirect the connection.
For the same reason this tool ignores proxy environment variables (a proxy would resolve the
name itself).

Sizes: the body is read up to `REACT_AGENT_HTTP_MAX_BYTES` (2 MB, counted after a bounded
decompression: see `tools/http_client.py`); the text returned is cut at
`REACT_AGENT_FETCH_MAX_CHARS` (default 8000) with a note saying how much was cut, and the title
and URL lines are shortened too, so the observation stays small whatever the page.

Hosts: `REACT_AGENT_FETCH_ALLOW_HOSTS` (e.g. `example.com,*.wikipedia.org`), when set, is the
only hosts this tool fetches from, redirect targets included (see `tools/fetch_guard.py`).

Time: the HTML reader is linear in the page and reads at most `fetch_body.MAX_MARKUP_CHARS`, and
it runs in a worker thread (`asyncio.to_thread`), never on the event loop.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlsplit

import httpx
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools import http_client
from tools.fetch_body import decode_html, html_to_text, page_kind
from tools.fetch_guard import (
    ALLOW_VARIABLE,
    HOSTS_VARIABLE,
    AllowList,
    HostPatterns,
    Target,
    check_url,
    shown,
)
from tools.support.blocking import run_sync
from tools.support.settings import env_int, env_str

MAX_REDIRECTS = 5
DEFAULT_MAX_CHARS = 8000
MAX_URL_CHARS = 2000
MAX_TITLE_CHARS = 200

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")
_ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.1"


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
    hosts = HostPatterns.parse(env_str(HOSTS_VARIABLE, ""))
    current = _parse_url(raw)
    refusal = f"Refusing to fetch {raw}"
    async with http_client.make_client(follow_redirects=False, trust_env=False) as client:
        for hop in range(MAX_REDIRECTS + 1):
            target = await check_url(current, allow, refusal, hosts)
            response = await _get(client, target)
            location = response.headers.get("location")
            if response.status not in _REDIRECT_STATUSES or not location:
                if response.status >= 300:
                    raise ToolException(
                        f"Could not fetch {shown(current)}: HTTP {response.status}."
                    )
                # HTML to text is CPU work that grows with the page: in a worker thread, so the
                # event loop (the served graph, the other calls of this step) keeps running and
                # the tool's deadline can cancel the wait; the work itself is linear and capped.
                return await asyncio.to_thread(_render, current, response, max_chars)
            if hop == MAX_REDIRECTS:
                break
            try:
                following = current.join(location)
            except httpx.InvalidURL:
                raise ToolException(
                    f"Could not fetch {shown(current)}: it redirects to an invalid URL "
                    f"{shown(location)!r}."
                ) from None
            target_text = location if urlsplit(location).scheme else str(following)
            refusal = (
                f"Refusing to follow the redirect from {shown(current)} to {shown(target_text)}"
            )
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


async def _get(client: httpx.AsyncClient, target: Target) -> http_client.Response:
    """GET the target from its checked addresses in turn (the next one if unreachable)."""
    url = target.url
    host = url.raw_host.decode("ascii", errors="replace")
    headers = {"Host": url.netloc.decode("ascii", errors="replace"), "Accept": _ACCEPT}
    extensions = {"sni_hostname": host} if url.scheme == "https" else None
    failure: http_client.HTTPFailure | None = None
    for address in target.addresses:
        try:
            return await http_client.fetch(
                str(url.copy_with(host=address)),
                headers=headers,
                client=client,
                truncate=True,
                extensions=extensions,
            )
        except http_client.HTTPFailure as exc:
            failure = exc
            if exc.kind != "unreachable":
                break
    assert failure is not None
    raise ToolException(f"Could not fetch {shown(url)}: {failure.reason}.")


def _render(url: httpx.URL, response: http_client.Response, max_chars: int) -> str:
    kind = page_kind(response)
    if kind == "binary":
        kind_text = shown(response.content_type or "unknown")
        raise ToolException(
            f"Refusing to read {shown(url)}: its content type {kind_text} is not text "
            f"(web_fetch reads HTML, plain text and JSON)."
        )
    if kind == "html":
        title, text = html_to_text(decode_html(response))
    else:
        title, text = "", response.text().strip()
    lines = []
    if title:
        lines.append(f"Title: {_clip(title, MAX_TITLE_CHARS)}")
    lines.append(f"URL: {shown(url)}")
    if response.truncated:
        size = http_client.human_size(len(response.content))
        lines.append(f"[The page is larger than {size}; only the first {size} were read.]")
    body = text or "(the page has no readable text)"
    if len(body) > max_chars:
        body = body[:max_chars].rstrip() + (
            f"\n[Cut: showing the first {max_chars:,} of {len(text):,} characters.]"
        )
    return "\n".join(lines) + "\n\n" + body


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
