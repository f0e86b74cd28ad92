"""The HTTP settings every tool shares: timeouts, User-Agent, a response-size cap and retries.

Configuration is read from the environment on every call:

- `REACT_AGENT_HTTP_TIMEOUT` (seconds, default 10): the connect timeout, the read timeout, and
  the deadline for a whole attempt (connect to last byte).
- `REACT_AGENT_HTTP_MAX_BYTES` (default 2 MiB): the most body bytes read, counted after
  decompression. The body is streamed, decompressed with an output bound
  (`tools/content_decoding.py`: a small compressed chunk can never inflate past the cap) and
  reading stops there. Only gzip, deflate and (if installed) zstd are accepted.
- `REACT_AGENT_HTTP_RETRIES` (default 3): attempts in all, for connection errors, timeouts,
  HTTP 429 and 5xx.
- `REACT_AGENT_HTTP_BACKOFF` (seconds, default 0.2): the wait before the second attempt,
  doubled for each later one (0 retries at once, as tests do).

Failures are `HTTPFailure` with a short reason ("unreachable: connection refused", "HTTP 503
Service Unavailable", "response larger than 2 MB", "invalid JSON"); `HTTPFailure.sentence(service)`
turns it into the one sentence a tool raises, prefixed with the tool's service name.

Text is decoded with the declared charset, falling back to UTF-8 with replacement characters for
an unknown or unusable one (`charset=idna` included): `decode_text`.

Named `http_client`, not `http`, so that it never shadows the standard library's `http`.

Tests route all tool traffic through any transport, e.g. `httpx.MockTransport`, with
`use_transport(transport)`: a context manager backed by a `ContextVar`, so nothing is patched.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx

from tools import content_decoding
from tools.support.settings import env_float, env_int

USER_AGENT = "react-agent/0.1 (+LangGraph ReAct agent)"
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF = 0.2
MAX_API_REDIRECTS = 5

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))

_transport: ContextVar[httpx.AsyncBaseTransport | None] = ContextVar(
    "react_agent_http_transport", default=None
)


@dataclass(frozen=True)
class HTTPSettings:
    timeout: float
    max_bytes: int
    attempts: int
    backoff: float
    user_agent: str = USER_AGENT


def settings() -> HTTPSettings:
    """The current settings, read from the environment now."""
    return HTTPSettings(
        timeout=env_float("REACT_AGENT_HTTP_TIMEOUT", DEFAULT_TIMEOUT, minimum=0.001),
        max_bytes=env_int("REACT_AGENT_HTTP_MAX_BYTES", DEFAULT_MAX_BYTES, minimum=1),
        attempts=env_int("REACT_AGENT_HTTP_RETRIES", DEFAULT_ATTEMPTS, minimum=1),
        backoff=env_float("REACT_AGENT_HTTP_BACKOFF", DEFAULT_BACKOFF, minimum=0.0),
    )


@contextlib.contextmanager
def use_transport(transport: httpx.AsyncBaseTransport | None) -> Iterator[None]:
    """Send every client made by `make_client` in this context through `transport`."""
    token = _transport.set(transport)
    try:
        yield
    finally:
        _transport.reset(token)


def make_client(
    *,
    follow_redirects: bool = True,
    trust_env: bool = True,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` with the project's timeouts and User-Agent.

    The transport is, in order: the argument, the one set by `use_transport`, httpx's default.
    """
    current = settings()
    return httpx.AsyncClient(
        timeout=httpx.Timeout(current.timeout),
        headers={
            "User-Agent": current.user_agent,
            "Accept-Encoding": content_decoding.ACCEPT_ENCODING,
        },
        follow_redirects=follow_redirects,
        max_redirects=MAX_API_REDIRECTS,
        trust_env=trust_env,
        transport=transport or _transport.get(),
    )


class HTTPFailure(Exception):
    """A request that did not produce a usable response; `reason` is a short human phrase."""

    def __init__(self, reason: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind  # unreachable | timeout | status | too_large | invalid | bad_url
        self.status = status

    def sentence(self, service: str) -> str:
        """One sentence for a ToolException: 'Weather service unreachable: connection refused.'"""
        if self.kind in ("unreachable", "timeout"):
            return f"{service} {self.reason}."
        return f"{service} error: {self.reason}."


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: httpx.Headers
    content: bytes
    truncated: bool

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None

    def text(self, default_encoding: str = "utf-8") -> str:
        return decode_text(self.content, self.charset or default_encoding)


def decode_text(data: bytes, encoding: str, fallback: str = "utf-8") -> str:
    """`data` as text in `encoding`; an unknown or unusable encoding (`idna` refuses
    `errors="replace"`, `base64` is no text encoding) means `fallback`, never an exception."""
    try:
        codecs.lookup(encoding)
        return data.decode(encoding, errors="replace")
    except (LookupError, UnicodeError, ValueError, TypeError):
        return data.decode(fallback, errors="replace")


def human_size(count: int) -> str:
    """2097152 -> '2 MB', 4096 -> '4 KB', 1000 -> '1000 bytes'."""
    for unit, size in (("MB", 1024 * 1024), ("KB", 1024)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


def _describe_transport_error(exc: httpx.TransportError) -> str:
    causes: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(causes) < 10:  # httpx wraps anyio wraps the OSError
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, ConnectionResetError):
            return "connection reset"
        if isinstance(cause, socket.gaierror):
            return "host name not found"
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if any(s in lowered for s in ("name or service not known", "nodename", "getaddrinfo")):
        return "host name not found"
    if "reset" in lowered:
        return "connection reset"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the server broke the HTTP protocol ({text})"
    return text


async def fetch(
    url: str,
    *,
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
    truncate: bool = False,
    extensions: dict[str, Any] | None = None,
) -> Response:
    """GET `url` with retries; the body is read up to the size cap.

    Over the cap: `HTTPFailure` ('response larger than 2 MB'), or with `truncate=True` the first
    bytes and `truncated=True`. A 3xx response is returned as it is when the client does not
    follow redirects; 4xx and (after the retries) 5xx raise `HTTPFailure`.
    """
    current = settings()
    if client is None:
        async with make_client() as own_client:
            return await fetch(
                url,
                params=params,
                headers=headers,
                client=own_client,
                truncate=truncate,
                extensions=extensions,
            )
    failure: HTTPFailure | None = None
    for attempt in range(1, current.attempts + 1):
        try:
            async with asyncio.timeout(current.timeout):
                response = await _attempt(
                    client, url, params, headers, extensions, current.max_bytes, truncate
                )
        except (TimeoutError, httpx.TimeoutException):
            failure = HTTPFailure(f"timed out after {current.timeout:g} s", kind="timeout")
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise HTTPFailure(f"invalid URL ({exc})", kind="bad_url") from None
        except httpx.TooManyRedirects:
            raise HTTPFailure(f"more than {MAX_API_REDIRECTS} redirects", kind="invalid") from None
        except (httpx.DecodingError, content_decoding.DecodingFailed) as exc:
            raise HTTPFailure(f"undecodable response ({exc})", kind="invalid") from None
        except content_decoding.UnsupportedEncoding as exc:
            raise HTTPFailure(str(exc), kind="invalid") from None
        except httpx.TransportError as exc:
            failure = HTTPFailure(
                f"unreachable: {_describe_transport_error(exc)}", kind="unreachable"
            )
        else:
            if response.status not in _RETRY_STATUSES:
                if response.status >= 400:
                    raise _status_failure(response.status)
                return response
            failure = _status_failure(response.status)
        if attempt < current.attempts and current.backoff > 0:
            await asyncio.sleep(current.backoff * 2 ** (attempt - 1))
    assert failure is not None
    raise failure


def _status_failure(status: int) -> HTTPFailure:
    try:
        phrase = httpx.codes(status).phrase
    except ValueError:
        phrase = ""
    return HTTPFailure(f"HTTP {status} {phrase}".strip(), kind="status", status=status)


async def _attempt(
    client: httpx.AsyncClient,
    url: str,
    params: Mapping[str, Any] | None,
    headers: Mapping[str, str] | None,
    extensions: dict[str, Any] | None,
    max_bytes: int,
    truncate: bool,
) -> Response:
    request = client.build_request(
        "GET", url, params=params, headers=headers, extensions=extensions
    )
    response = await client.send(request, stream=True)
    try:
        if response.status_code >= 300:
            return Response(str(response.url), response.status_code, response.headers, b"", False)
        too_large = HTTPFailure(f"response larger than {human_size(max_bytes)}", kind="too_large")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes and not truncate:
            raise too_large
        if response.is_stream_consumed:  # an in-memory response (a mock transport's): httpx
            raw, encoding = _in_memory(response.content), ""  # has read and decoded it already
        else:
            raw, encoding = response.aiter_raw(), response.headers.get("content-encoding", "")
        content, truncated = await content_decoding.read_bounded(raw, encoding, max_bytes)
        if truncated and not truncate:
            raise too_large
        return Response(
            str(response.url), response.status_code, response.headers, content, truncated
        )
    finally:
        await response.aclose()


async def _in_memory(content: bytes) -> AsyncIterator[bytes]:
    yield content


async def get_text(
    url: str,
    *,
    params: Mapping[str, Any] | None = None,
    client: httpx.AsyncClient | None = None,
) -> str:
    """The body of a GET as text (charset from Content-Type, else UTF-8)."""
    return (await fetch(url, params=params, client=client)).text()


async def get_json(
    url: str,
    *,
    params: Mapping[str, Any] | None = None,
    client: httpx.AsyncClient | None = None,
) -> Any:
    """The body of a GET parsed as JSON; a body that is not JSON is HTTPFailure('invalid JSON')."""
    response = await fetch(
        url, params=params, headers={"Accept": "application/json"}, client=client
    )
    try:
        return json.loads(response.content.decode(response.charset or "utf-8"))
    except (ValueError, LookupError):
        raise HTTPFailure("invalid JSON", kind="invalid") from None


__all__ = [
    "USER_AGENT",
    "HTTPFailure",
    "HTTPSettings",
    "Response",
    "decode_text",
    "fetch",
    "get_json",
    "get_text",
    "human_size",
    "make_client",
    "settings",
    "use_transport",
]
