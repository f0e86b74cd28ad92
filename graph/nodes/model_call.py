"""One model call with a real deadline and a bounded reply.

A per-read timeout is not a deadline: a server that trickles a byte every half second, or
streams without end, keeps a run alive forever. The call is streamed under one total deadline
(connect, every read, the whole stream) and stops reading once the reply passes the length cap.
The sync form waits for a reader thread with the same deadline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable, RunnableConfig


class ReplyTooLong(ValueError):
    """The model kept writing past the reply cap."""


async def acall_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    *,
    timeout: float,
    max_chars: int,
) -> AIMessage:
    """The model's whole reply, or TimeoutError / ReplyTooLong."""
    reply: Any = None
    size = 0
    async with asyncio.timeout(timeout):
        async for chunk in runnable.astream(list(messages), config):
            reply = chunk if reply is None else reply + chunk
            size += len(chunk.content) if isinstance(getattr(chunk, "content", None), str) else 0
            if size > max_chars:
                raise ReplyTooLong(
                    f"the model's reply passed {max_chars:,} characters and was cut off "
                    "(REACT_AGENT_MAX_REPLY_CHARS)"
                )
    return as_message(reply)


def call_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    *,
    timeout: float,
    max_chars: int,
) -> AIMessage:
    """The sync form: the stream is read on a thread of its own and waited for with the
    deadline (a sync HTTP client cannot be interrupted mid-read, so the run stops waiting at the
    deadline and the reader stops at its next chunk). Not a pool: a reader stuck on an endpoint
    that trickles forever would hold a slot every later call waits for."""
    stop = threading.Event()

    def read() -> Any:
        reply: Any = None
        size = 0
        for chunk in runnable.stream(list(messages), config):
            if stop.is_set():
                break
            reply = chunk if reply is None else reply + chunk
            size += len(chunk.content) if isinstance(getattr(chunk, "content", None), str) else 0
            if size > max_chars:
                raise ReplyTooLong(
                    f"the model's reply passed {max_chars:,} characters and was cut off "
                    "(REACT_AGENT_MAX_REPLY_CHARS)"
                )
        return reply

    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            future.set_result(context.run(read))
        except BaseException as exc:  # handed to the waiting run, which reports it
            future.set_exception(exc)

    threading.Thread(target=run, name="model-reader", daemon=True).start()
    try:
        return as_message(future.result(timeout))
    except concurrent.futures.TimeoutError:
        stop.set()
        raise TimeoutError(f"no complete reply within {timeout:g} s") from None


def as_message(reply: Any) -> AIMessage:
    if isinstance(reply, BaseMessageChunk):
        reply = message_chunk_to_message(reply)
    if isinstance(reply, AIMessage):
        return reply
    return AIMessage(content=getattr(reply, "content", "" if reply is None else str(reply)))
