"""The shared HTTP layer: retries, timeouts, the size cap, JSON errors and the transport hook."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from langchain_core.tools import StructuredTool, ToolException

from tools import http
from tools._support import run_sync


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
    with http.use_transport(transport):
        data = await http.get_json("http://api.test/v1/x", params={"q": "北京", "n": 1})
    assert data == {"ok": True}
    assert seen[0].headers["user-agent"] == "react-agent/0.1 (+LangGraph ReAct agent)"
    assert seen[0].url.params["q"] == "北京"
    assert seen[0].url.params["n"] == "1"


async def test_use_transport_is_scoped_to_the_with_block() -> None:
    transport, _ = sequence(httpx.Response(200))
    with http.use_transport(transport):
        async with http.make_client() as client:
            assert client._transport is transport
    async with http.make_client() as client:
        assert client._transport is not transport


async def test_500_then_success_is_retried() -> None:
    transport, seen = sequence(httpx.Response(500), httpx.Response(200, json=[1, 2]))
    with http.use_transport(transport):
        assert await http.get_json("http://api.test/") == [1, 2]
    assert len(seen) == 2


async def test_persistent_503_fails_after_three_attempts() -> None:
    transport, seen = sequence(httpx.Response(503))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.get_json("http://api.test/")
    assert caught.value.reason == "HTTP 503 Service Unavailable"
    assert caught.value.sentence("Weather service") == (
        "Weather service error: HTTP 503 Service Unavailable."
    )
    assert len(seen) == 3


async def test_retry_count_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_RETRIES", "1")
    transport, seen = sequence(httpx.Response(502), httpx.Response(200))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure):
        await http.fetch("http://api.test/")
    assert len(seen) == 1


async def test_404_is_not_retried() -> None:
    transport, seen = sequence(httpx.Response(404))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("http://api.test/missing")
    assert caught.value.reason == "HTTP 404 Not Found"
    assert caught.value.status == 404
    assert len(seen) == 1


async def test_connection_refused_is_retried_then_reported() -> None:
    transport, seen = sequence(httpx.ConnectError("[Errno 111] Connection refused"))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("http://api.test/")
    assert caught.value.sentence("Weather service") == (
        "Weather service unreachable: connection refused."
    )
    assert len(seen) == 3


async def test_connect_error_then_success() -> None:
    transport, seen = sequence(httpx.ConnectError("boom"), httpx.Response(200, text="hi"))
    with http.use_transport(transport):
        assert await http.get_text("http://api.test/") == "hi"
    assert len(seen) == 2


async def test_backoff_doubles_between_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_BACKOFF", "0.02")
    transport, _ = sequence(httpx.Response(500), httpx.Response(500), httpx.Response(200))
    started = time.monotonic()
    with http.use_transport(transport):
        await http.fetch("http://api.test/")
    assert time.monotonic() - started >= 0.06  # 0.02 + 0.04


async def test_a_slow_server_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_TIMEOUT", "0.05")
    calls = []

    async def slow(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        await asyncio.sleep(5)
        return httpx.Response(200)

    started = time.monotonic()
    with http.use_transport(httpx.MockTransport(slow)), pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("http://api.test/")
    assert caught.value.kind == "timeout"
    assert caught.value.sentence("Wikipedia") == "Wikipedia timed out after 0.05 s."
    assert len(calls) == 3
    assert time.monotonic() - started < 2


async def test_httpx_timeout_exception_counts_as_timeout() -> None:
    transport, _ = sequence(httpx.ReadTimeout("read timed out"))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("http://api.test/")
    assert caught.value.reason == "timed out after 2 s"


async def test_declared_oversize_body_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "1024")
    transport, seen = sequence(httpx.Response(200, content=b"x" * 5000))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("http://api.test/")
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
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("http://api.test/")
    assert caught.value.reason == "response larger than 1000 bytes"
    assert len(produced) <= 12


async def test_truncate_keeps_the_first_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_AGENT_HTTP_MAX_BYTES", "10")
    transport, _ = sequence(httpx.Response(200, content=b"0123456789abcdef"))
    with http.use_transport(transport):
        response = await http.fetch("http://api.test/", truncate=True)
    assert response.content == b"0123456789"
    assert response.truncated


async def test_invalid_json() -> None:
    transport, _ = sequence(httpx.Response(200, text="<html>maintenance</html>"))
    with http.use_transport(transport), pytest.raises(http.HTTPFailure) as caught:
        await http.get_json("http://api.test/")
    assert caught.value.sentence("Weather service (CMA)") == (
        "Weather service (CMA) error: invalid JSON."
    )


async def test_text_uses_the_declared_charset() -> None:
    body = "天气".encode("gbk")
    transport, _ = sequence(
        httpx.Response(200, content=body, headers={"content-type": "text/plain; charset=gbk"})
    )
    with http.use_transport(transport):
        assert await http.get_text("http://api.test/") == "天气"


async def test_unsupported_scheme_is_a_bad_url() -> None:
    with pytest.raises(http.HTTPFailure) as caught:
        await http.fetch("ftp://example.test/file")
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
        http.settings()
    assert str(caught.value) == message


def test_default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TIMEOUT", "MAX_BYTES", "RETRIES", "BACKOFF"):
        monkeypatch.delenv(f"REACT_AGENT_HTTP_{name}", raising=False)
    assert http.settings() == http.HTTPSettings(
        timeout=10.0, max_bytes=2 * 1024 * 1024, attempts=3, backoff=0.2
    )


@pytest.mark.parametrize(
    ("count", "text"),
    [(2 * 1024 * 1024, "2 MB"), (1536 * 1024, "1.5 MB"), (4096, "4 KB"), (999, "999 bytes")],
)
def test_human_size(count: int, text: str) -> None:
    assert http.human_size(count) == text


async def test_run_sync_works_inside_a_running_loop() -> None:
    transport, _ = sequence(httpx.Response(200, text="from the worker thread"))

    async def body() -> str:
        return await http.get_text("http://api.test/")

    tool = StructuredTool.from_function(func=lambda: run_sync(body), name="t", description="t")
    with http.use_transport(transport):
        assert tool.invoke({}) == "from the worker thread"


def test_run_sync_without_a_loop() -> None:
    async def body() -> int:
        await asyncio.sleep(0)
        return 42

    assert run_sync(body) == 42
