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
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
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
    deadline and the reader stops at its next chunk)."""
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

    future = _READERS.submit(contextvars.copy_context().run, read)
    try:
        return as_message(future.result(timeout))
    except concurrent.futures.TimeoutError:
        stop.set()
        raise TimeoutError(f"no complete reply within {timeout:g} s") from None


class DaemonReaders:
    """Reader threads, reused while idle and never a fixed number: a reader stuck on an endpoint
    that trickles forever must not hold a slot every later call waits for (a fixed pool would
    starve), and a daemon thread never keeps the process from exiting."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, func: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((lambda: func(*args), future))
        with self._lock:
            if self._idle:
                self._idle -= 1
                return future
        threading.Thread(target=self._work, name="model-reader", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            job, future = self._jobs.get()
            try:
                future.set_result(job())
            except BaseException as exc:  # handed to the waiting run, which reports it
                future.set_exception(exc)
            with self._lock:
                self._idle += 1


_READERS = DaemonReaders()


def as_message(reply: Any) -> AIMessage:
    if isinstance(reply, BaseMessageChunk):
        reply = message_chunk_to_message(reply)
    if isinstance(reply, AIMessage):
        return reply
    return AIMessage(content=getattr(reply, "content", "" if reply is None else str(reply)))
