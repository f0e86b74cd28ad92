"""The shared HTTP layer: retries, timeouts, the size cap, JSON errors and the transport hook."""

from __future__ import annotations

import asyncio
import gzip
import time
import zlib
from collections.abc import AsyncIterator

import httpx
import pytest
import zstandard
from langchain_core.tools import StructuredTool, ToolException

from tools import content_decoding, http_client
from tools.support.blocking import run_sync


@pytest.fixture(autouse=True)
def fast_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0")
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "2")
    monkeypatch.delenv("REACT_AGENT_HTTP_MAX_BYTES", raising=False)
    monkeypatch.delenv("REACT_AGENT_HTTP_RETRIES", raising=False)


def sequence(*responses: httpx.Response | Exception) -> tuple[httpx.MockTransport, list]:
    """A transport answering with `responses` in turn (the last one repeats); requests kept."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = responses[min(len(seen), len(responses)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handler), seen


async def test_get_json_sends_user_agent_and_params() -> None:
    transport, seen = sequence(httpx.Response(200, json={"ok": True}))
    with http_client.use_transport(transport):
        data = await http_client.get_json("http://api.test/v1/x", params={"q": "北京", "n": 1})
    assert data == {"ok": True}
    assert seen[0].headers["user-agent"] == "react-agent/0.1 (+LangGraph ReAct agent)"
    assert seen[0].url.params["q"] == "北京"
    assert seen[0].url.params["n"] == "1"


async def test_use_transport_is_scoped_to_the_with_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")
    transport, seen = sequence(httpx.Response(200, text="mocked"))
    with http_client.use_transport(transport):
        assert await http_client.get_text("http://127.0.0.1:9/") == "mocked"
    with pytest.raises(http_client.HTTPFailure) as caught:  # the real network: nothing listens
        await http_client.get_text("http://127.0.0.1:9/")
    assert caught.value.kind == "unreachable"
    assert len(seen) == 1


async def test_500_then_success_is_retried() -> None:
    transport, seen = sequence(httpx.Response(500), httpx.Response(200, json=[1, 2]))
    with http_client.use_transport(transport):
        assert await http_client.get_json("http://api.test/") == [1, 2]
    assert len(seen) == 2


async def test_persistent_503_fails_after_three_attempts() -> None:
    transport, seen = sequence(httpx.Response(503))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.get_json("http://api.test/")
    assert caught.value.reason == "HTTP 503 Service Unavailable"
    assert caught.value.sentence("Weather service") == (
        "Weather service error: HTTP 503 Service Unavailable."
    )
    assert len(seen) == 3


async def test_retry_count_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")
    transport, seen = sequence(httpx.Response(502), httpx.Response(200))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure):
        await http_client.fetch("http://api.test/")
    assert len(seen) == 1


async def test_404_is_not_retried() -> None:
    transport, seen = sequence(httpx.Response(404))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("http://api.test/missing")
    assert caught.value.reason == "HTTP 404 Not Found"
    assert caught.value.status == 404
    assert len(seen) == 1


async def test_connection_refused_is_retried_then_reported() -> None:
    transport, seen = sequence(httpx.ConnectError("[Errno 111] Connection refused"))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("http://api.test/")
    assert caught.value.sentence("Weather service") == (
        "Weather service unreachable: connection refused."
    )
    assert len(seen) == 3


async def test_connect_error_then_success() -> None:
    transport, seen = sequence(httpx.ConnectError("boom"), httpx.Response(200, text="hi"))
    with http_client.use_transport(transport):
        assert await http_client.get_text("http://api.test/") == "hi"
    assert len(seen) == 2


async def test_backoff_doubles_between_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0.02")
    transport, _ = sequence(httpx.Response(500), httpx.Response(500), httpx.Response(200))
    started = time.monotonic()
    with http_client.use_transport(transport):
        await http_client.fetch("http://api.test/")
    assert time.monotonic() - started >= 0.06  # 0.02 + 0.04


async def test_a_slow_server_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "0.05")
    calls = []

    async def slow(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        await asyncio.sleep(5)
        return httpx.Response(200)

    started = time.monotonic()
    with (
        http_client.use_transport(httpx.MockTransport(slow)),
        pytest.raises(http_client.HTTPFailure) as caught,
    ):
        await http_client.fetch("http://api.test/")
    assert caught.value.kind == "timeout"
    assert caught.value.sentence("Wikipedia") == "Wikipedia timed out after 0.05 s."
    assert len(calls) == 3
    assert time.monotonic() - started < 2


async def test_httpx_timeout_exception_counts_as_timeout() -> None:
    transport, _ = sequence(httpx.ReadTimeout("read timed out"))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("http://api.test/")
    assert caught.value.reason == "timed out after 2 s"


async def test_declared_oversize_body_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1024")
    transport, seen = sequence(httpx.Response(200, content=b"x" * 5000))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("http://api.test/")
    assert caught.value.sentence("Wikipedia") == "Wikipedia error: response larger than 1 KB."
    assert len(seen) == 1  # not retried


async def test_streamed_oversize_body_stops_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1000")
    produced = []

    async def endless():
        while True:
            produced.append(1)
            yield b"y" * 100

    transport, _ = sequence(httpx.Response(200, content=endless()))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("http://api.test/")
    assert caught.value.reason == "response larger than 1000 bytes"
    assert len(produced) <= 12


async def test_truncate_keeps_the_first_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "10")
    transport, _ = sequence(httpx.Response(200, content=b"0123456789abcdef"))
    with http_client.use_transport(transport):
        response = await http_client.fetch("http://api.test/", truncate=True)
    assert response.content == b"0123456789"
    assert response.truncated


async def test_invalid_json() -> None:
    transport, _ = sequence(httpx.Response(200, text="<html>maintenance</html>"))
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.get_json("http://api.test/")
    assert caught.value.sentence("Weather service (CMA)") == (
        "Weather service (CMA) error: invalid JSON."
    )


async def test_text_uses_the_declared_charset() -> None:
    body = "天气".encode("gbk")
    transport, _ = sequence(
        httpx.Response(200, content=body, headers={"content-type": "text/plain; charset=gbk"})
    )
    with http_client.use_transport(transport):
        assert await http_client.get_text("http://api.test/") == "天气"


async def test_unsupported_scheme_is_a_bad_url() -> None:
    with pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("ftp://example.test/file")
    assert caught.value.kind == "bad_url"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "REACT_AGENT_HTTP_TIMEOUT",
            "soon",
            "REACT_AGENT_HTTP_TIMEOUT must be a number of at least 0.001, not 'soon'.",
        ),
        (
            "REACT_AGENT_HTTP_MAX_BYTES",
            "-5",
            "REACT_AGENT_HTTP_MAX_BYTES must be a whole number of at least 1, not '-5'.",
        ),
        (
            "REACT_AGENT_HTTP_RETRIES",
            "0",
            "REACT_AGENT_HTTP_RETRIES must be a whole number of at least 1, not '0'.",
        ),
    ],
)
def test_bad_settings_are_clear_errors(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ToolException) as caught:
        http_client.settings()
    assert str(caught.value) == message


def test_default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TIMEOUT", "MAX_BYTES", "RETRIES", "BACKOFF"):
        monkeypatch.delenv(f"REACT_AGENT_HTTP_{name}", raising=False)
    assert http_client.settings() == http_client.HTTPSettings(
        timeout=10.0, max_bytes=2 * 1024 * 1024, attempts=3, backoff=0.2
    )


@pytest.mark.parametrize(
    ("count", "text"),
    [(2 * 1024 * 1024, "2 MB"), (1536 * 1024, "1.5 MB"), (4096, "4 KB"), (999, "999 bytes")],
)
def test_human_size(count: int, text: str) -> None:
    assert http_client.human_size(count) == text


async def test_run_sync_works_inside_a_running_loop() -> None:
    transport, _ = sequence(httpx.Response(200, text="from the worker thread"))

    async def body() -> str:
        return await http_client.get_text("http://api.test/")

    tool = StructuredTool.from_function(func=lambda: run_sync(body), name="t", description="t")
    with http_client.use_transport(transport):
        assert tool.invoke({}) == "from the worker thread"


def test_run_sync_without_a_loop() -> None:
    async def body() -> int:
        await asyncio.sleep(0)
        return 42

    assert run_sync(body) == 42


# --- bounded decompression and charsets ----------------------------------------------------------

PAYLOAD = b"".join(b"line %d of a compressible page\n" % i for i in range(20_000))


def compressed(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "raw-deflate":
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    if coding == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    return data


async def chunks_of(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "zstd", "identity", ""])
@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
async def test_bounded_decoding_round_trips(coding: str, chunk: int) -> None:
    body = compressed(coding, PAYLOAD)
    if chunk == 1:
        body_chunks = chunks_of(body[:3000], 1)  # a prefix, byte by byte
        content, over = await content_decoding.read_bounded(body_chunks, _header(coding), 10**9)
        assert not over and PAYLOAD.startswith(content)
        return
    content, over = await content_decoding.read_bounded(
        chunks_of(body, chunk), _header(coding), len(PAYLOAD)
    )
    assert (content, over) == (PAYLOAD, False)
    content, over = await content_decoding.read_bounded(
        chunks_of(body, chunk), _header(coding), len(PAYLOAD) - 1
    )
    assert (content, over) == (PAYLOAD[:-1], True)


def _header(coding: str) -> str:
    return "deflate" if coding == "raw-deflate" else coding


@pytest.mark.parametrize("coding", ["gzip", "deflate", "zstd"])
async def test_a_bomb_chunk_is_never_inflated_past_the_cap(coding: str) -> None:
    bomb = compressed(coding, bytes(64 * 1024 * 1024))
    assert len(bomb) < 100_000
    decoder = content_decoding.decoder_for(coding)
    assert len(decoder.decode(bomb, 1000)) == 1000  # one call, whatever the chunk holds
    content, over = await content_decoding.read_bounded(chunks_of(bomb, 1 << 20), coding, 5000)
    assert (len(content), over) == (5000, True)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("br", "the body is in the unsupported 'br' encoding"),
        ("compress", "the body is in the unsupported 'compress' encoding"),
        ("gzip, gzip", "the body is compressed several times (gzip, gzip)"),
    ],
)
def test_unsupported_encodings_are_refused(header: str, message: str) -> None:
    with pytest.raises(content_decoding.UnsupportedEncoding) as caught:
        content_decoding.decoder_for(header)
    assert str(caught.value) == message


async def test_corrupt_compressed_data_is_an_invalid_response() -> None:
    transport, _ = sequence(
        httpx.Response(
            200, content=_stream(b"not gzip at all"), headers={"content-encoding": "gzip"}
        )
    )
    with http_client.use_transport(transport), pytest.raises(http_client.HTTPFailure) as caught:
        await http_client.fetch("http://api.test/")
    assert caught.value.kind == "invalid"
    assert caught.value.reason.startswith("undecodable response (")


async def test_streamed_compressed_body_through_a_transport() -> None:
    body = compressed("zstd", PAYLOAD)
    transport, seen = sequence(
        httpx.Response(200, content=_stream(body), headers={"content-encoding": "zstd"})
    )
    with http_client.use_transport(transport):
        response = await http_client.fetch("http://api.test/")
    assert response.content == PAYLOAD
    assert seen[0].headers["accept-encoding"] == content_decoding.ACCEPT_ENCODING


def _stream(data: bytes) -> AsyncIterator[bytes]:
    return chunks_of(data, 1000)


@pytest.mark.parametrize(
    "charset", ["idna", "base64", "rot13", "hex", "zlib", "nonsense", "", "utf-8\x00"]
)
def test_decode_text_never_raises(charset: str) -> None:
    assert http_client.decode_text("café 北京".encode(), charset) == "café 北京"
    response = http_client.Response(
        "http://x/",
        200,
        httpx.Headers({"content-type": f"text/plain; charset={charset}"}),
        "café".encode(),
        False,
    )
    assert response.text() == "café"


def test_decode_text_uses_a_real_charset() -> None:
    assert http_client.decode_text("天气".encode("gbk"), "gbk") == "天气"
    assert http_client.decode_text(b"caf\xe9", "latin-1") == "café"


async def test_compressed_input_is_capped_too() -> None:
    packer = zlib.compressobj()
    start = packer.compress(b"x") + packer.flush(zlib.Z_SYNC_FLUSH)  # header and "x"
    empty_blocks = b"\x00\x00\x00\xff\xff"  # an empty stored block: inflates to nothing
    fed: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        yield start
        while len(fed) < 10_000:
            fed.append(1)
            yield empty_blocks * 1000

    content, over = await content_decoding.read_bounded(endless(), "deflate", 100_000)
    assert (content, over) == (b"x", True)
    assert len(fed) * len(empty_blocks) * 1000 < 200_000 + 64 * 1024
