"""The scripted OpenAI server, proven with real clients (httpx, openai, ChatOpenAI) over HTTP."""

from __future__ import annotations

import asyncio
import json
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.support.openai_server import (
    HTTPError,
    Reply,
    ScriptedOpenAIServer,
    ToolCall,
    scripted_server,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(30)]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return expression


def chat(server: ScriptedOpenAIServer, **kwargs) -> ChatOpenAI:
    kwargs.setdefault("max_retries", 0)
    return ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="scripted", **kwargs)


def sse_events(text: str) -> list[str]:
    """The ``data:`` payloads of an SSE body, asserting the framing is well formed."""
    assert text.endswith("\n\n")
    events = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: "), block
        events.append(block.removeprefix("data: "))
    return events


def aggregate(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


# --------------------------------------------------------------------------- raw HTTP


def test_raw_httpx_non_streaming_and_keep_alive():
    with ScriptedOpenAIServer([Reply(content="hello"), Reply(content="again", usage=(3, 2))]) as s:
        assert s.base_url.startswith("http://127.0.0.1:") and s.base_url.endswith("/v1")
        with httpx.Client(base_url=s.base_url, timeout=5) as client:
            body = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}
            first = client.post("/chat/completions", json=body)
            second = client.post("/chat/completions", json=body)  # same pooled connection
        assert first.status_code == 200
        assert first.headers["content-length"] == str(len(first.content))
        data = first.json()
        assert data["object"] == "chat.completion"
        assert data["id"].startswith("chatcmpl-")
        assert data["model"] == "m-1"
        choice = data["choices"][0]
        assert choice["message"] == {"role": "assistant", "content": "hello", "refusal": None}
        assert choice["finish_reason"] == "stop"
        usage = data["usage"]
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert second.json()["usage"] == {
            "prompt_tokens": 3,
            "completion_tokens": 2,
            "total_tokens": 5,
        }
        assert [r.body["messages"][0]["content"] for r in s.requests] == ["hi", "hi"]
        assert s.remaining == []


def test_raw_httpx_streaming_chunks():
    script = [
        Reply(
            content="Let me compute that now.",
            tool_calls=[ToolCall("calculator", {"expression": "17*23"}, id="call_fixed")],
            usage=(11, 7),
        ),
        Reply(content="no usage requested"),
    ]
    with ScriptedOpenAIServer(script) as s, httpx.Client(base_url=s.base_url, timeout=5) as client:
        response = client.post(
            "/chat/completions",
            json={
                "model": "scripted",
                "messages": [{"role": "user", "content": "17*23?"}],
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.text)
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
        assert len({c["id"] for c in chunks}) == 1
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        pieces = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
        pieces = [p for p in pieces if p]
        assert len(pieces) >= 4 and "".join(pieces) == "Let me compute that now."
        calls = [
            tc
            for c in chunks
            if c["choices"]
            for tc in c["choices"][0]["delta"].get("tool_calls", [])
        ]
        assert calls[0] == {
            "index": 0,
            "id": "call_fixed",
            "type": "function",
            "function": {"name": "calculator", "arguments": ""},
        }
        assert len(calls) >= 3  # arguments arrive in several pieces
        args = "".join(tc["function"]["arguments"] for tc in calls)
        assert json.loads(args) == {"expression": "17*23"}
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"] == {
            "prompt_tokens": 11,
            "completion_tokens": 7,
            "total_tokens": 18,
        }

        # Without include_usage there is no usage chunk; the connection is reused after chunked.
        plain = client.post(
            "/chat/completions",
            json={
                "model": "scripted",
                "messages": [{"role": "user", "content": "x"}],
                "stream": True,
            },
        )
        chunks = [json.loads(e) for e in sse_events(plain.text)[:-1]]
        assert all(c["choices"] and "usage" not in c for c in chunks)
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_models_endpoint_and_unknown_paths():
    with ScriptedOpenAIServer() as s, httpx.Client(base_url=s.base_url, timeout=5) as client:
        models = client.get("/models").json()
        assert [m["id"] for m in models["data"]] == ["scripted"]
        assert client.get("/models/scripted").json()["id"] == "scripted"
        for response in (client.get("/nope"), client.post("/responses", json={"input": "hi"})):
            assert response.status_code == 404
            error = response.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert "no route" in error["message"]
        assert client.get("/chat/completions").status_code == 405
        assert [r.path for r in s.requests] == [
            "/v1/models",
            "/v1/models/scripted",
            "/v1/nope",
            "/v1/responses",
            "/v1/chat/completions",
        ]
        assert s.chat_requests == []  # only POSTs to chat/completions count


def test_callable_items_default_and_add():
    def echo(body):
        body["messages"].clear()  # mutating the copy must not change the recorded request
        return Reply(content="echo")

    s = scripted_server(
        [lambda body: Reply(content="echo: " + body["messages"][-1]["content"]), echo],
        default=lambda body: Reply(content=f"default for {body['model']}"),
    )
    with s:
        llm = chat(s)
        assert llm.invoke("ping").content == "echo: ping"
        assert llm.invoke("pong").content == "echo"
        assert s.requests[1].messages[-1]["content"] == "pong"
        s.add(Reply(content="added"), HTTPError(400, "later"))
        assert len(s.remaining) == 2
        assert llm.invoke("x").content == "added"
        with pytest.raises(openai.BadRequestError):
            llm.invoke("x")
        assert llm.invoke("x").content == "default for scripted"
        assert s.remaining == []


def test_callable_that_raises_is_a_clear_500():
    def broken(body):
        raise KeyError("oops")

    with ScriptedOpenAIServer([broken, lambda body: "not a reply"]) as s:
        with pytest.raises(openai.InternalServerError, match="script callable raised"):
            chat(s, max_retries=2).invoke("x")
        with pytest.raises(openai.InternalServerError, match="not Reply/HTTPError"):
            chat(s).invoke("x")
        assert len(s.requests) == 2  # x-should-retry: false stops the client retrying
        assert len(s.errors) == 2


# --------------------------------------------------------------------------- ChatOpenAI


def test_chat_openai_invoke_usage_and_headers():
    with ScriptedOpenAIServer([Reply(content="Final Answer: 391", usage=(120, 8))]) as s:
        message = chat(s).invoke("What is 17*23?")
        assert message.content == "Final Answer: 391"
        assert message.usage_metadata["input_tokens"] == 120
        assert message.usage_metadata["output_tokens"] == 8
        assert message.usage_metadata["total_tokens"] == 128
        (request,) = s.requests
        assert request.headers["authorization"] == "Bearer sk-test"
        assert request.body["model"] == "scripted"
        assert request.body["stream"] is False
        assert request.messages == [{"role": "user", "content": "What is 17*23?"}]
        # The key travels only in the Authorization header, never in the body or elsewhere.
        assert b"sk-test" not in request.raw
        assert [k for k, v in request.headers.items() if "sk-test" in v] == ["authorization"]


def test_chat_openai_tool_calls_and_tools_in_body():
    call = ToolCall("calculator", {"expression": "17*23"})
    with ScriptedOpenAIServer(
        [Reply(tool_calls=[call], content=""), Reply(tool_calls=[call])]
    ) as s:
        llm = chat(s).bind_tools([calculator])
        first, second = llm.invoke("17*23?"), llm.invoke("again")
        for message in (first, second):
            assert message.tool_calls == [
                {
                    "name": "calculator",
                    "args": {"expression": "17*23"},
                    "id": message.tool_calls[0]["id"],
                    "type": "tool_call",
                }
            ]
            assert message.response_metadata["finish_reason"] == "tool_calls"
            assert message.usage_metadata["total_tokens"] > 0
        assert first.tool_calls[0]["id"].startswith("call_")
        assert first.tool_calls[0]["id"] != second.tool_calls[0]["id"]  # fresh id per response
        tools = s.requests[0].body["tools"]
        assert [t["function"]["name"] for t in tools] == ["calculator"]
        assert tools[0]["function"]["parameters"]["required"] == ["expression"]


def test_chat_openai_broken_json_arguments_become_invalid_tool_calls():
    broken = ToolCall("calculator", '{"expression": "17*23"', id="call_broken")
    with ScriptedOpenAIServer([Reply(tool_calls=[broken])]) as s:
        message = chat(s).bind_tools([calculator]).invoke("x")
        assert message.tool_calls == []
        (invalid,) = message.invalid_tool_calls
        assert invalid["name"] == "calculator"
        assert invalid["id"] == "call_broken"
        assert invalid["args"] == '{"expression": "17*23"'


def test_chat_openai_stream_content_and_usage():
    content = "Thought: I need the calculator to multiply these numbers."
    with ScriptedOpenAIServer(
        [Reply(content=content, usage=(50, 12)), Reply(content=content)]
    ) as s:
        chunks = list(chat(s, stream_usage=True).stream("x"))
        texts = [c.content for c in chunks if c.content]
        assert len(texts) >= 5
        assert "".join(texts) == content
        total = aggregate(chunks)
        assert total.content == content
        assert total.usage_metadata["input_tokens"] == 50
        assert total.usage_metadata["output_tokens"] == 12
        assert s.requests[0].body["stream"] is True
        assert s.requests[0].body["stream_options"] == {"include_usage": True}

        # With a custom base_url ChatOpenAI does not ask for usage unless stream_usage=True.
        plain = aggregate(list(chat(s).stream("x")))
        assert plain.content == content and plain.usage_metadata is None
        assert "stream_options" not in s.requests[1].body


def test_chat_openai_stream_tool_call_chunks_assemble():
    calls = [
        ToolCall("calculator", {"expression": "17*23"}, id="call_a"),
        ToolCall("calculator", {"expression": "(1 + 2) * 3"}, id="call_b"),
    ]
    with ScriptedOpenAIServer([Reply(tool_calls=calls)]) as s:
        chunks = list(chat(s, stream_usage=True).bind_tools([calculator]).stream("x"))
        assert sum(len(c.tool_call_chunks) for c in chunks) >= 4
        total = aggregate(chunks)
        assert total.tool_calls == [
            {
                "name": "calculator",
                "args": {"expression": "17*23"},
                "id": "call_a",
                "type": "tool_call",
            },
            {
                "name": "calculator",
                "args": {"expression": "(1 + 2) * 3"},
                "id": "call_b",
                "type": "tool_call",
            },
        ]
        assert total.response_metadata["finish_reason"] == "tool_calls"
        assert total.usage_metadata["total_tokens"] > 0


def test_stop_sequences_are_sent_and_honoured():
    text = (
        "Thought: use it.\nAction: calculator\nAction Input: 1+1\nObservation: 2\nFinal Answer: 2"
    )
    with ScriptedOpenAIServer([Reply(content=text), Reply(content=text)]) as s:
        llm = chat(s).bind(stop=["Observation:"])
        message = llm.invoke("x")
        assert message.content == "Thought: use it.\nAction: calculator\nAction Input: 1+1\n"
        assert s.requests[0].body["stop"] == ["Observation:"]
        streamed = aggregate(list(llm.stream("x")))
        assert streamed.content == message.content


def test_stop_sequences_ignored_when_honor_stop_false():
    text = "Action: calculator\nObservation: made up\nFinal Answer: 2"
    with ScriptedOpenAIServer([Reply(content=text)], honor_stop=False) as s:
        assert chat(s).bind(stop=["Observation:"]).invoke("x").content == text
        assert s.requests[0].body["stop"] == ["Observation:"]


# --------------------------------------------------------------------------- errors


def test_400_is_bad_request_and_the_failed_request_is_recorded():
    error = HTTPError(400, "tools are not supported by this model", code="unsupported_tools")
    with ScriptedOpenAIServer([error]) as s:
        with pytest.raises(openai.BadRequestError, match="tools are not supported") as info:
            chat(s, max_retries=2).bind_tools([calculator]).invoke("x")
        assert info.value.status_code == 400
        assert info.value.code == "unsupported_tools"
        assert info.value.body == {
            "message": "tools are not supported by this model",
            "type": "invalid_request_error",
            "param": None,
            "code": "unsupported_tools",
        }
        (request,) = s.requests  # 4xx are not retried
        assert request.body["tools"][0]["function"]["name"] == "calculator"


def test_401_is_authentication_error():
    bad_key = HTTPError(401, "Incorrect API key provided", code="invalid_api_key")
    with ScriptedOpenAIServer([bad_key]) as s:
        with pytest.raises(openai.AuthenticationError, match="Incorrect API key"):
            chat(s, max_retries=2).invoke("x")
        assert len(s.requests) == 1  # 401 is not retried


def test_429_is_rate_limit_error_with_headers():
    limited = HTTPError(429, "Rate limit reached", type="requests", headers={"retry-after": "0"})
    with ScriptedOpenAIServer([limited]) as s:
        with pytest.raises(openai.RateLimitError) as info:
            chat(s).invoke("x")
        assert info.value.response.headers["retry-after"] == "0"


def test_503_then_success_is_retried():
    busy = HTTPError(
        503,
        "The server is overloaded",
        type="server_error",
        # `retry-after: 0` alone is NOT fast: the SDK only honours delays > 0 and otherwise
        # backs off ~0.5 s; `retry-after-ms: 1` makes the retry immediate.
        headers={"retry-after": "0", "retry-after-ms": "1"},
    )
    with ScriptedOpenAIServer([busy, Reply(content="recovered")]) as s:
        llm = chat(s, max_retries=2)
        started = time.monotonic()
        assert llm.invoke("x").content == "recovered"
        assert time.monotonic() - started < 0.35  # the default backoff would be >= 0.375 s
        assert len(s.requests) == 2
        assert [r.headers["x-stainless-retry-count"] for r in s.requests] == ["0", "1"]
        assert s.requests[0].body == s.requests[1].body


def test_retry_after_zero_still_backs_off():
    """Documents an SDK detail for test authors: retry-after: 0 means the default backoff."""
    busy = HTTPError(503, "busy", type="server_error", headers={"retry-after": "0"})
    with ScriptedOpenAIServer([busy, Reply(content="ok")]) as s:
        started = time.monotonic()
        assert chat(s, max_retries=1).invoke("x").content == "ok"
        assert time.monotonic() - started >= 0.3


def test_exhausted_script_is_a_clear_500_and_not_retried():
    with ScriptedOpenAIServer([Reply(content="only one")]) as s:
        llm = chat(s, max_retries=2)
        assert llm.invoke("first").content == "only one"
        with pytest.raises(openai.InternalServerError) as info:
            llm.invoke("second")
        assert info.value.status_code == 500
        assert "scripted server: script exhausted after 1 requests" in str(info.value)
        assert "second" in str(info.value)
        assert len(s.requests) == 2  # x-should-retry: false -> no retries


def test_error_on_a_streaming_request_and_timeout_via_delay():
    script = [HTTPError(400, "nope while streaming"), Reply(content="too late", delay=2)]
    with ScriptedOpenAIServer(script) as s:
        with pytest.raises(openai.BadRequestError, match="nope while streaming"):
            list(chat(s).stream("x"))
        impatient = chat(s, timeout=0.2)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            impatient.invoke("x")
        assert time.monotonic() - started < 1.5
        assert s.requests[1].headers["x-stainless-read-timeout"] == "0.2"
    assert s.errors == []


def test_stream_is_incremental_and_client_can_hang_up():
    with ScriptedOpenAIServer([Reply(content="one two three four five", chunk_delay=0.05)]) as s:
        body = {"model": "scripted", "messages": [], "stream": True}
        arrivals = []
        with (
            httpx.Client(base_url=s.base_url, timeout=5) as client,
            client.stream("POST", "/chat/completions", json=body) as response,
        ):
            started = time.monotonic()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    arrivals.append(time.monotonic() - started)
                if len(arrivals) == 3:
                    break  # hang up mid-stream
        assert len(arrivals) == 3 and arrivals[2] - arrivals[0] >= 0.08
        time.sleep(0.2)  # let the server hit the closed socket
        assert s.errors == []


# --------------------------------------------------------------------------- async / concurrency


async def test_chat_openai_ainvoke_and_astream():
    with ScriptedOpenAIServer(
        [Reply(content="async hello"), Reply(content="async stream ok")]
    ) as s:
        llm = chat(s)
        assert (await llm.ainvoke("x")).content == "async hello"
        chunks = [c async for c in llm.astream("x")]
        assert aggregate(chunks).content == "async stream ok"
        assert s.requests[0].headers["x-stainless-async"].startswith("async")


async def test_concurrent_ainvoke_is_served_in_parallel():
    replies = [Reply(content=f"answer {i}", delay=0.2) for i in range(20)]
    with ScriptedOpenAIServer(replies) as s:
        llm = chat(s)
        started = time.monotonic()
        results = await asyncio.gather(*(llm.ainvoke(f"q{i}") for i in range(20)))
        elapsed = time.monotonic() - started
        assert elapsed < 2.0, elapsed  # serial would take 4 s
        assert sorted(r.content for r in results) == sorted(f"answer {i}" for i in range(20))
        assert len(s.requests) == 20 and s.remaining == []


async def test_hundred_concurrent_raw_requests_with_default():
    with ScriptedOpenAIServer(default=Reply(content="bench", delay=0.05)) as s:
        async with httpx.AsyncClient(base_url=s.base_url, timeout=10) as client:
            body = {"model": "scripted", "messages": [{"role": "user", "content": "go"}]}
            responses = await asyncio.gather(
                *(client.post("/chat/completions", json=body) for _ in range(100))
            )
        assert {r.status_code for r in responses} == {200}
        assert len(s.requests) == 100
        assert sorted(r.index for r in s.requests) == list(range(100))


def test_close_is_quick_with_requests_in_flight():
    s = ScriptedOpenAIServer([Reply(content="slow", delay=30)]).start()
    client = httpx.Client(base_url=s.base_url, timeout=10)
    client.get("/models")  # leaves an idle keep-alive connection in the pool
    outcome: list[object] = []

    def slow_call():
        try:
            outcome.append(client.post("/chat/completions", json={"messages": []}))
        except httpx.HTTPError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=slow_call)
    worker.start()
    s.wait_for_requests(2)
    started = time.monotonic()
    s.close()
    s.close()  # idempotent
    assert time.monotonic() - started < 1.0
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert isinstance(outcome[0], httpx.HTTPError)  # the connection was dropped
    with pytest.raises(httpx.HTTPError):  # nothing keeps serving on pooled connections
        client.get("/models")
    client.close()


# --------------------------------------------------------------------------- script formats / CLI


def test_from_json_items():
    s = ScriptedOpenAIServer.from_json(
        [
            {"content": "hi", "usage": [10, 5], "delay": 0.01},
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1"}}]},
            {
                "error": 429,
                "message": "slow down",
                "type": "requests",
                "headers": {"retry-after": "0"},
            },
        ]
    )
    first, second, third = s.remaining
    assert first == Reply(content="hi", usage=(10, 5), delay=0.01)
    assert second.tool_calls[0] == ToolCall("calculator", {"expression": "1"})
    assert third == HTTPError(429, "slow down", type="requests", headers={"retry-after": "0"})
    with pytest.raises(ValueError, match="unknown keys"):
        ScriptedOpenAIServer.from_json([{"contents": "typo"}])


def test_command_line_mode(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "from a subprocess", "usage": [10, 5]}]))
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.openai_server",
            "--script",
            str(script),
            "--port",
            "0",
            "--default-content",
            "default reply",
            "--record",
            str(record),
        ],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        assert ready, "server did not print READY within 10 s"
        line = proc.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:") and line.endswith("/v1\n")
        base_url = line.split()[1]
        llm = ChatOpenAI(base_url=base_url, api_key="sk-sub", model="scripted", max_retries=0)
        first = llm.invoke("hello")
        assert first.content == "from a subprocess"
        assert first.usage_metadata["total_tokens"] == 15
        assert llm.invoke("again").content == "default reply"
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=5)
    assert proc.returncode == 0, err
    assert out == ""  # READY is the only line on stdout
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["body"]["messages"][-1]["content"] for r in recorded] == ["hello", "again"]
    assert recorded[0]["headers"]["authorization"] == "Bearer sk-sub"
