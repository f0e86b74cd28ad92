"""Replies shaped as real chat-model providers' LangChain integrations return them, for the
provider-shapes probe (tests/unit/test_probe_provider_shapes.py).

`ShapedChatModel` replies from a script whose items are whole `AIMessage`s or streams (a list
of `AIMessageChunk`s): `invoke` merges a stream as LangChain merges one, and a caller that
streams (stream_mode "messages", `astream_events`) gets the chunks one by one from `_stream`.
Every request is recorded as a deep copy, so a later change to a message the model returned is
seen. The builders below write each provider's shapes (Anthropic's thinking / tool_use /
server-tool blocks, LangChain's v1 standard blocks, DeepSeek's `reasoning_content`, Qwen's
`<think>` prefix, Gemini's text parts with thought signatures) with the provider's
`response_metadata` and `usage_metadata`. OpenAI's Responses API is not faked here: the real
`ChatOpenAI` is run against `responses_transport` (an `httpx.MockTransport` serving scripted
Responses API bodies), so its own parsing and its own request serializer are what is tested.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from tests.support.scripted_model import ReplyingChatModel

Stream = list[AIMessageChunk]


class ShapedChatModel(ReplyingChatModel):
    """Replies in order from `script` (an `AIMessage`, or a stream: a list of chunks), each
    request recorded as a deep copy of its messages, with the tools bound."""

    script: list[Any]
    streaming: bool = False
    """LangChain's switch: `TextReAct` reads a model so set through its `_stream`."""
    _requests: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)
    _streamed: list[bool] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, script: Sequence[AIMessage | Stream], **kwargs: Any) -> None:
        super().__init__(script=list(script), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "provider-shaped"

    @property
    def requests(self) -> list[list[BaseMessage]]:
        return self._requests

    @property
    def streamed(self) -> list[bool]:
        """Per request: whether it was read as a stream (`_stream`)."""
        return self._streamed

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any], stream: bool) -> Any:
        with self._lock:
            self._requests.append([x.model_copy(deep=True) for x in messages])
            self._tools.append(list(kwargs.get("tools") or []))
            self._streamed.append(stream)
            if self._position >= len(self.script):
                raise RuntimeError(f"shaped model: script exhausted after {self._position}")
            item = self.script[self._position]
            self._position += 1
        # each run gets its own copy: the script's objects stay as written
        if isinstance(item, list):
            return [chunk.model_copy(deep=True) for chunk in item]
        return item.model_copy(deep=True)

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> ChatResult:
        item = self._next(messages, kwargs, stream=False)
        if isinstance(item, list):
            item = merged(item)
        return ChatResult(generations=[ChatGeneration(message=item)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        item = self._next(messages, kwargs, stream=True)
        chunks = item if isinstance(item, list) else [as_one_chunk(item)]
        for chunk in chunks:  # LangChain reports each chunk to the callbacks itself
            yield ChatGenerationChunk(message=chunk)


def merged(chunks: Stream) -> AIMessage:
    """A stream as LangChain merges it (`+`), as a whole message."""
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    fields = total.model_dump(exclude={"type", "tool_call_chunks", "chunk_position"})
    return AIMessage(**fields)


def as_one_chunk(message: AIMessage) -> AIMessageChunk:
    """A whole message as the one chunk of a stream (its calls as whole-argument chunks)."""
    chunks = [
        {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
        for i, c in enumerate(message.tool_calls)
    ]
    return AIMessageChunk(
        content=message.content,
        additional_kwargs=message.additional_kwargs,
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
        id=message.id,
        tool_call_chunks=chunks,
        chunk_position="last",
    )


def call(name: str, args: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def usage(
    input_tokens: int,
    output_tokens: int,
    *,
    cache_read: int | None = None,
    cache_creation: int | None = None,
    reasoning: int | None = None,
) -> dict[str, Any]:
    """`usage_metadata` with the detail fields a provider reports."""
    out: dict[str, Any] = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }
    details = {"cache_read": cache_read, "cache_creation": cache_creation}
    if any(v is not None for v in details.values()):
        out["input_token_details"] = {k: v for k, v in details.items() if v is not None}
    if reasoning is not None:
        out["output_token_details"] = {"reasoning": reasoning}
    return out


# -- Anthropic (langchain-anthropic: list content, tool_use beside tool_calls) -------------------


def anthropic_meta(stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "model": "claude-sonnet-4-5",
        "model_name": "claude-sonnet-4-5",
        "model_provider": "anthropic",
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }


def anthropic_step(
    thinking: str,
    text: str | None,
    calls: Sequence[dict[str, Any]],
    *,
    id: str,
    redacted: bool = False,
    tokens: dict[str, Any] | None = None,
) -> AIMessage:
    """A thinking block (or a redacted one), an optional text block, a `tool_use` block per
    call, and the same calls as `tool_calls`."""
    blocks: list[dict[str, Any]] = [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
        if redacted
        else {"type": "thinking", "thinking": thinking, "signature": f"sig-{id}=="}
    ]
    if text is not None:
        blocks.append({"type": "text", "text": text})
    blocks += [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]} for c in calls
    ]
    return AIMessage(
        content=blocks,
        tool_calls=list(calls),
        response_metadata=anthropic_meta("tool_use"),
        usage_metadata=tokens or usage(120, 40, cache_read=100, cache_creation=20),
        id=id,
    )


def anthropic_answer(thinking: str, text: str, *, id: str) -> AIMessage:
    return AIMessage(
        content=[
            {"type": "thinking", "thinking": thinking, "signature": f"sig-{id}=="},
            {"type": "text", "text": text},
        ],
        response_metadata=anthropic_meta("end_turn"),
        usage_metadata=usage(180, 30, cache_read=120),
        id=id,
    )


def anthropic_server_search(text: str, *, id: str) -> AIMessage:
    """Anthropic's own web search ran on its side: `server_tool_use` and its result blocks,
    the cited answer, no client `tool_calls`."""
    return AIMessage(
        content=[
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "capital of france"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://example.test/france",
                        "title": "France",
                        "encrypted_content": "EqgfCioIARgBIiQ3",
                        "page_age": None,
                    }
                ],
            },
            {"type": "text", "text": "According to the search, "},
            {
                "type": "text",
                "text": text,
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": "https://example.test/france",
                        "title": "France",
                        "encrypted_index": "Eo8BCioIAhgB",
                        "cited_text": "Paris is the capital of France.",
                    }
                ],
            },
        ],
        response_metadata=anthropic_meta("end_turn"),
        usage_metadata=usage(300, 60),
        id=id,
    )


def anthropic_stream(thinking: Sequence[str], text: str, call: dict[str, Any]) -> Stream:
    """langchain-anthropic's stream of a thinking step with one call: indexed content blocks
    (thinking deltas, the signature, text, `tool_use`, its `input_json_delta`s) and the call's
    arguments in pieces as `tool_call_chunks` of one index; usage and stop reason at the end."""
    args = json.dumps(call["args"])
    pieces = [
        args[: len(args) // 3],
        args[len(args) // 3 : 2 * len(args) // 3],
        args[2 * len(args) // 3 :],
    ]
    first = AIMessageChunk(
        content=[],
        id="msg_stream_01",
        usage_metadata=usage(120, 0, cache_read=100),
        response_metadata={"model_name": "claude-sonnet-4-5", "model_provider": "anthropic"},
    )
    chunks = [first]
    chunks += [
        AIMessageChunk(content=[{"type": "thinking", "thinking": part, "index": 0}])
        for part in thinking
    ]
    chunks.append(
        AIMessageChunk(content=[{"type": "thinking", "signature": "sig-s==", "index": 0}])
    )
    half = len(text) // 2
    chunks += [
        AIMessageChunk(content=[{"type": "text", "text": text[:half], "index": 1}]),
        AIMessageChunk(content=[{"type": "text", "text": text[half:], "index": 1}]),
        AIMessageChunk(
            content=[
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": call["name"],
                    "input": {},
                    "index": 2,
                }
            ],
            tool_call_chunks=[{"name": call["name"], "args": "", "id": call["id"], "index": 2}],
        ),
    ]
    chunks += [
        AIMessageChunk(
            content=[{"type": "input_json_delta", "partial_json": piece, "index": 2}],
            tool_call_chunks=[{"name": None, "args": piece, "id": None, "index": 2}],
        )
        for piece in pieces
    ]
    chunks.append(
        AIMessageChunk(
            content=[],
            usage_metadata={"input_tokens": 0, "output_tokens": 40, "total_tokens": 40},
            response_metadata={"stop_reason": "tool_use", "stop_sequence": None},
            chunk_position="last",
        )
    )
    return chunks


def text_stream(parts: Sequence[str], *, id: str) -> Stream:
    """An answer streamed as indexed text blocks (Anthropic's shape), usage at the end."""
    chunks = [
        AIMessageChunk(
            content=[{"type": "text", "text": part, "index": 0}],
            id=id,
            response_metadata={"model_name": "claude-sonnet-4-5"} if i == 0 else {},
        )
        for i, part in enumerate(parts)
    ]
    chunks.append(
        AIMessageChunk(
            content=[],
            usage_metadata=usage(200, 10),
            response_metadata={"stop_reason": "end_turn"},
            chunk_position="last",
        )
    )
    return chunks


# -- LangChain v1 standard content (output_version="v1") ----------------------------------------


def v1_meta() -> dict[str, Any]:
    return {"model_name": "gpt-5", "model_provider": "openai", "output_version": "v1"}


def v1_step(reasoning: str, text: str, calls: Sequence[dict[str, Any]], *, id: str) -> AIMessage:
    blocks: list[dict[str, Any]] = [
        {"type": "reasoning", "reasoning": reasoning, "id": f"rs_{id}"},
        {"type": "text", "text": text},
    ]
    blocks += [
        {"type": "tool_call", "id": c["id"], "name": c["name"], "args": c["args"]} for c in calls
    ]
    return AIMessage(
        content=blocks,
        tool_calls=list(calls),
        response_metadata=v1_meta(),
        usage_metadata=usage(50, 30, reasoning=20),
        id=id,
    )


def v1_answer(reasoning: str, text: str, *, id: str) -> AIMessage:
    return AIMessage(
        content=[
            {"type": "reasoning", "reasoning": reasoning, "id": f"rs_{id}"},
            {
                "type": "text",
                "text": text,
                "annotations": [
                    {"type": "citation", "url": "https://example.test", "title": "Example"}
                ],
            },
        ],
        response_metadata=v1_meta(),
        usage_metadata=usage(70, 12, reasoning=4),
        id=id,
    )


# -- OpenAI-compatible reasoning: DeepSeek's reasoning_content, Qwen's <think> -------------------


def deepseek(content: str, calls: Sequence[dict[str, Any]] = (), *, id: str) -> AIMessage:
    """langchain-deepseek: the reasoning in `additional_kwargs["reasoning_content"]`."""
    return AIMessage(
        content=content,
        tool_calls=list(calls),
        additional_kwargs={"reasoning_content": f"Reasoning of {id}: the user wants a lookup."},
        response_metadata={
            "model_name": "deepseek-reasoner",
            "model_provider": "deepseek",
            "finish_reason": "tool_calls" if calls else "stop",
        },
        usage_metadata=usage(40, 25, cache_read=32, reasoning=18),
        id=id,
    )


THINK = "<think>\nThe user asks for the capital; a lookup will tell.\n</think>\n\n"


def qwen(content: str, calls: Sequence[dict[str, Any]] = (), *, id: str) -> AIMessage:
    """An OpenAI-compatible server without a reasoning parser: `<think>` in the content."""
    return AIMessage(
        content=THINK + content,
        tool_calls=list(calls),
        response_metadata={"model_name": "qwen3-32b", "finish_reason": "stop"},
        usage_metadata=usage(30, 20),
        id=id,
    )


# -- Gemini (langchain-google-genai) ------------------------------------------------------------


def gemini(text: str, calls: Sequence[dict[str, Any]] = (), *, id: str) -> AIMessage:
    """Text parts as list content (with a thought signature), calls with generated ids and the
    signatures by call id; text ends with a newline, as Gemini's often does."""
    return AIMessage(
        content=[{"type": "text", "text": text, "extras": {"signature": f"c2ln-{id}"}}],
        tool_calls=list(calls),
        additional_kwargs={
            "__gemini_function_call_thought_signatures__": {
                c["id"]: f"c2ln-{c['id']}" for c in calls
            }
        }
        if calls
        else {},
        response_metadata={
            "model_name": "gemini-2.5-flash",
            "model_provider": "google_genai",
            "finish_reason": "STOP",
            "safety_ratings": [],
        },
        usage_metadata=usage(60, 15, cache_read=0, reasoning=9),
        id=id,
    )


# -- OpenAI Responses API, served to the real ChatOpenAI -----------------------------------------


def responses_body(rid: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    """One Responses API response (what `POST /v1/responses` returns)."""
    return {
        "id": rid,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": "o4-mini-2025-04-16",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens": 50,
            "output_tokens_details": {"reasoning_tokens": 30},
            "total_tokens": 150,
        },
    }


def responses_call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A reasoning item with a summary, then a function call."""
    return responses_body(
        f"resp_{n}",
        [
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": f"Summary {n}: I should look it up."}],
                "encrypted_content": f"gAAAA{n}",
            },
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            },
        ],
    )


def responses_answer(n: int, text: str) -> dict[str, Any]:
    """A reasoning item, then a message whose text cites a URL."""
    return responses_body(
        f"resp_{n}",
        [
            {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"gAAAA{n}"},
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": text,
                        "annotations": [
                            {
                                "type": "url_citation",
                                "start_index": 0,
                                "end_index": 5,
                                "url": "https://example.test/paris",
                                "title": "Paris",
                            }
                        ],
                    }
                ],
            },
        ],
    )


class ResponsesServer:
    """Scripted Responses API bodies behind an `httpx.MockTransport`; each request's JSON
    body is recorded."""

    def __init__(self, bodies: Sequence[dict[str, Any]]) -> None:
        self.bodies = list(bodies)
        self.requests: list[dict[str, Any]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        if not self.bodies:
            return httpx.Response(500, json={"error": {"message": "script exhausted"}})
        return httpx.Response(200, json=self.bodies.pop(0))

    def model(self, **kwargs: Any) -> Any:
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model="o4-mini",
            api_key="sk-test",  # a placeholder: the transport answers, nothing is sent out
            use_responses_api=True,
            max_retries=0,
            http_client=httpx.Client(transport=httpx.MockTransport(self.handle)),
            **kwargs,
        )
