"""One model call with a real deadline and a bounded reply.

A per-read timeout is not a deadline: a server that trickles a byte every half second, or
streams without end, keeps a run alive forever. The call is streamed under one total deadline
(connect, every read, the whole stream) and stops reading once the reply passes the length cap.
The sync form breaks a blocked read with a timer signal in the main thread, and elsewhere waits
for a reader thread with the same deadline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    BaseMessageChunk,
    message_chunk_to_message,
)
from langchain_core.messages.ai import add_ai_message_chunks
from langchain_core.runnables import Runnable, RunnableConfig

from graph.support import alarm
from graph.support.workers import DaemonWorkers


class ReplyTooLong(ValueError):
    """The model kept writing past the reply cap."""


class ReplyBuffer:
    """The reply as it streams in, refused once it passes the cap (text and tool-call
    arguments both count). Chunks are merged once at the end: adding each to the running
    reply re-parses the tool-call arguments every time, quadratic in their size."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chunks: list[Any] = []
        self.size = 0

    @property
    def reply(self) -> Any:
        if not self.chunks:
            return None
        first, *rest = self.chunks
        if isinstance(first, AIMessageChunk) and all(isinstance(c, AIMessageChunk) for c in rest):
            return add_ai_message_chunks(first, *rest) if rest else first
        merged = first
        for chunk in rest:
            merged = merged + chunk
        return merged

    def add(self, chunk: Any) -> None:
        self.chunks.append(chunk)
        content = getattr(chunk, "content", None)
        self.size += len(content) if isinstance(content, str) else 0
        for part in getattr(chunk, "tool_call_chunks", None) or ():
            self.size += len(part.get("args") or "")
        if self.size > self.max_chars:
            raise ReplyTooLong(
                f"the model's reply passed {self.max_chars:,} characters and was cut off "
                "(REACT_AGENT_MAX_REPLY_CHARS)"
            )


async def acall_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    *,
    timeout: float,
    max_chars: int,
) -> AIMessage:
    """The model's whole reply, or TimeoutError / ReplyTooLong."""
    buffer = ReplyBuffer(max_chars)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with asyncio.timeout_at(deadline):
        async for chunk in runnable.astream(list(messages), config):
            buffer.add(chunk)
            # chunks already buffered are read without suspending, so the timeout's
            # cancellation may never be delivered: check the deadline on every chunk too
            if loop.time() >= deadline:
                raise TimeoutError(f"no complete reply within {timeout:g} s")
    return as_message(buffer.reply)


def call_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    *,
    timeout: float,
    max_chars: int,
) -> AIMessage:
    """The sync form. A sync HTTP client cannot be interrupted mid-read, so the deadline needs
    help: in the main thread a timer signal breaks the read (`graph.support.alarm`, no thread
    hand-off at every step); elsewhere the stream is read on a thread of its own and waited for
    with the deadline (the run stops waiting, the reader stops at its next chunk)."""
    if alarm.available():

        def reply() -> AIMessage:
            return as_message(_read(runnable, messages, config, max_chars))

        return alarm.within(timeout, reply, "no complete reply")
    stop = threading.Event()
    read = partial(_read, runnable, messages, config, max_chars, stop)
    future = _READERS.submit(contextvars.copy_context().run, read)
    try:
        return as_message(future.result(timeout))
    except concurrent.futures.TimeoutError:
        stop.set()
        raise TimeoutError(f"no complete reply within {timeout:g} s") from None


def _read(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    max_chars: int,
    stop: threading.Event | None = None,
) -> Any:
    buffer = ReplyBuffer(max_chars)
    for chunk in runnable.stream(list(messages), config):
        if stop is not None and stop.is_set():
            break
        buffer.add(chunk)
    return buffer.reply


_READERS = DaemonWorkers("model-reader")


def as_message(reply: Any) -> AIMessage:
    if isinstance(reply, BaseMessageChunk):
        reply = message_chunk_to_message(reply)
    if isinstance(reply, AIMessage):
        return reply
    return AIMessage(content=getattr(reply, "content", "" if reply is None else str(reply)))
