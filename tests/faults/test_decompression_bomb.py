"""Decompression bombs and hostile charsets from a real HTTP server on 127.0.0.1 (issue 17.2).

A 32 KB zstd body that inflates to 1 GiB drove the process to 2.1 GB because the 2 MB cap was
checked after each chunk had been inflated. Here each bomb (zstd, gzip, zlib and raw deflate,
1/2 GiB or more when inflated) goes through the real stack, sockets included, and the test
measures how much memory the fetch needed: the Python allocations at their peak (tracemalloc)
and the growth of the process's peak resident size (getrusage). Both must stay far below the
inflated size: a bounded decoder needs a few megabytes. No timing is asserted.
"""

from __future__ import annotations

import contextlib
import gc
import resource
import struct
import threading
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, TypeVar

import pytest
import zstandard
from langchain_core.tools import ToolException

from tools import http_client
from tools.web_fetch import web_fetch

T = TypeVar("T")
MB = 1024 * 1024
BOUND = 100 * MB
ZSTD_INFLATED = 1024 * MB
ZLIB_INFLATED = 512 * MB


def zstd_bomb() -> bytes:
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    zeros = bytes(MB)
    parts = [compressor.compress(zeros) for _ in range(ZSTD_INFLATED // MB)]
    return b"".join([*parts, compressor.flush()])


def gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MB)
    parts = [compressor.compress(zeros) for _ in range(ZLIB_INFLATED // MB)]
    return b"".join([*parts, compressor.flush()])


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    gzip = gzip_bomb()
    raw = gzip[10:-8]  # a gzip member is a 10-byte header, raw deflate, an 8-byte trailer
    checksum = 1
    zeros = bytes(MB)
    for _ in range(ZLIB_INFLATED // MB):
        checksum = zlib.adler32(zeros, checksum)
    wrapped = b"\x78\xda" + raw + struct.pack(">I", checksum)
    return {"zstd": zstd_bomb(), "gzip": gzip, "deflate": wrapped, "raw-deflate": raw}


class Handler(BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[dict[str, str], bytes]]] = {}

    def do_GET(self) -> None:
        headers, body = self.routes.get(self.path, ({}, b""))
        self.send_response(200 if self.path in self.routes else 404)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(OSError):  # the client stops reading at its cap
            for start in range(0, len(body), 16 * 1024):
                self.wfile.write(body[start : start + 16 * 1024])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("REACT_AGENT_FETCH_ALLOW", "127.0.0.1")
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda *args: None  # type: ignore[method-assign]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        Handler.routes = {}


async def measured(run: Callable[[], Awaitable[T]]) -> tuple[T, int, int]:
    """(result, peak traced bytes, growth of the process's peak RSS in bytes)."""
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    tracemalloc.start()
    try:
        result = await run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
    return result, peak, rss_growth


@pytest.mark.parametrize("coding", ["zstd", "gzip", "deflate", "raw-deflate"])
async def test_web_fetch_reads_a_bomb_only_up_to_the_cap(
    server: str, bombs: dict[str, bytes], coding: str
) -> None:
    header = "deflate" if coding == "raw-deflate" else coding
    Handler.routes["/bomb"] = (
        {"Content-Type": "text/plain; charset=utf-8", "Content-Encoding": header},
        bombs[coding],
    )
    result, peak, rss_growth = await measured(lambda: web_fetch.ainvoke({"url": f"{server}/bomb"}))
    print(
        f"{coding}: {len(bombs[coding]):,} bytes sent, peak {peak / MB:.1f} MB traced, "
        f"peak RSS +{rss_growth / MB:.1f} MB"
    )
    assert "[The page is larger than 2 MB; only the first 2 MB were read.]" in result
    assert len(result) < 9000
    assert peak < BOUND
    assert rss_growth < BOUND


async def test_an_api_call_refuses_a_bomb_as_too_large(
    server: str, bombs: dict[str, bytes]
) -> None:
    Handler.routes["/api"] = (
        {"Content-Type": "application/json", "Content-Encoding": "zstd"},
        bombs["zstd"],
    )

    async def call() -> str:
        with pytest.raises(http_client.HTTPFailure) as caught:
            await http_client.get_json(f"{server}/api")
        return caught.value.sentence("Weather service")

    sentence, peak, rss_growth = await measured(call)
    assert sentence == "Weather service error: response larger than 2 MB."
    assert peak < BOUND
    assert rss_growth < BOUND


async def test_an_unadvertised_encoding_is_refused_without_decoding(server: str) -> None:
    Handler.routes["/br"] = (
        {"Content-Type": "text/html", "Content-Encoding": "br"},
        b"\x1b\xff\xff" * 1000,
    )
    with pytest.raises(ToolException) as caught:
        await web_fetch.ainvoke({"url": f"{server}/br"})
    assert str(caught.value) == (
        f"Could not fetch {server}/br: the body is in the unsupported 'br' encoding."
    )


async def test_the_advertised_encodings_are_the_bounded_ones(server: str) -> None:
    seen: list[str] = []

    class Recording(Handler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Accept-Encoding", ""))
            super().do_GET()

    Handler.routes["/page"] = ({"Content-Type": "text/plain"}, b"hello")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        port = httpd.server_address[1]
        assert await web_fetch.ainvoke({"url": f"http://127.0.0.1:{port}/page"}) == (
            f"URL: http://127.0.0.1:{port}/page\n\nhello"
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert seen == ["gzip, deflate, zstd"]


@pytest.mark.parametrize("charset", ["idna", "base64", "rot13", "no-such-charset", "utf-8'"])
async def test_a_hostile_charset_falls_back_to_utf8(server: str, charset: str) -> None:
    body = "<title>Caf\u00e9</title><p>\u00e9t\u00e9 \u5317\u4eac</p>".encode()
    Handler.routes["/page"] = ({"Content-Type": f"text/html; charset={charset}"}, body)
    Handler.routes["/meta"] = (
        {"Content-Type": "text/html"},
        f'<meta charset="{charset}">'.encode() + body,
    )
    Handler.routes["/text"] = ({"Content-Type": f"text/plain; charset={charset}"}, b"caf\xc3\xa9")
    assert await web_fetch.ainvoke({"url": f"{server}/page"}) == (
        f"Title: Caf\u00e9\nURL: {server}/page\n\n\u00e9t\u00e9 \u5317\u4eac"
    )
    assert (await web_fetch.ainvoke({"url": f"{server}/meta"})).endswith(
        "\u00e9t\u00e9 \u5317\u4eac"
    )
    assert (await web_fetch.ainvoke({"url": f"{server}/text"})).endswith("\n\ncaf\u00e9")
