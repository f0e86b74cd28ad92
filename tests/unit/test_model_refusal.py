"""A provider's refusal reaches `ModelRefusalMiddleware`: the model is invoked, not streamed,
unless the caller streams (langchain-openai's stream drops the `refusal` field, so a streamed
call made behind an `invoke` hid every refusal and the run re-asked a refusing model).

The endpoint is a small OpenAI-compatible server that refuses: a whole reply carries
`"refusal"`, a streamed one (as the provider streams it) only empty content.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain.agents.middleware import ModelRefusalMiddleware
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph

REFUSAL = "I can't help with that."


class _Refusing(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    streamed: list[bool]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.streamed.append(bool(body.get("stream")))  # type: ignore[attr-defined]
        base = {"id": "chatcmpl-r", "created": 0, "model": body.get("model", "m")}
        if body.get("stream"):
            delta = {"role": "assistant", "content": ""}
            event = {**base, "object": "chat.completion.chunk"}
            events = [
                {**event, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {**event, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            self._send(data.encode(), "text/event-stream")
            return
        message = {"role": "assistant", "content": None, "refusal": REFUSAL}
        reply = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }
        self._send(json.dumps(reply).encode(), "application/json")

    def _send(self, data: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """A refusing endpoint; yields whether each request asked for a stream."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    server.daemon_threads = True
    server.streamed = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-refusal-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    try:
        yield server.streamed  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_refusal_reaches_the_refusal_middleware(refusing: list[bool], mode: str) -> None:
    agent = build_graph(
        protocol="native",
        checkpointer=InMemorySaver(),
        middleware=[ModelRefusalMiddleware()],
        max_retries=0,
    )
    inputs = {"messages": [("user", "How do I pick a lock?")]}
    config = {"configurable": {"thread_id": f"refusal-{mode}"}}
    if mode == "sync":
        out = agent.invoke(inputs, config)
    else:
        out = asyncio.run(agent.ainvoke(inputs, config))
    assert refusing == [False]  # one whole reply, asked once: the refusal is not re-asked
    assert out["status"] == "error", out
    assert "refus" in (out["error"] or "").lower(), out["error"]
