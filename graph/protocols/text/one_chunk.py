"""`OneChunkStream`: the stream of a chat model whose reply is made whole (TextReAct reads the
inner model's text whole; the embedded model builds its step from several constrained
requests). `stream`, `astream` and `stream_events` give one `AIMessageChunk`, the last, that
adds up to what `invoke` returns, as LangChain's conformance suites expect of a stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult


class OneChunkStream:
    """Mixed in before `BaseChatModel`: `_stream`/`_astream` from `_generate`/`_agenerate`."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        raise NotImplementedError

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        result = self._generate(messages, stop, run_manager, **kwargs)
        yield as_chunk(cast(AIMessage, result.generations[0].message))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        result = await self._agenerate(messages, stop, run_manager, **kwargs)
        yield as_chunk(cast(AIMessage, result.generations[0].message))


def as_chunk(message: AIMessage) -> ChatGenerationChunk:
    """A whole message as the one chunk of a stream: the calls as `tool_call_chunks` (their
    arguments as JSON), so adding the chunks up gives the message back."""
    chunk = AIMessageChunk(
        content=message.content,
        id=message.id,
        tool_calls=message.tool_calls,
        invalid_tool_calls=message.invalid_tool_calls,
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
        chunk_position="last",
    )
    return ChatGenerationChunk(message=chunk)
