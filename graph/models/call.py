"""One model call, made the way `create_agent` makes it, with a deadline and a bounded reply.

The model is called with `invoke` / `ainvoke`: LangChain's chat models stream by themselves when
the caller streams (stream_mode "messages", `astream_events`: a streaming callback handler is
attached), and otherwise make one request, so provider fields that only a whole reply carries
(langchain-openai's `refusal`) reach the middleware.

A per-read timeout is not a deadline (an endpoint that trickles a byte every half second answers
every read in time), so the call is also *waited for* with one total deadline: the async form
under `asyncio.timeout`, the sync form on a daemon worker the run stops waiting for. Nothing is
raised into the client's code: a call past its deadline is abandoned, never interrupted. The
run's own deadline is checked between steps (`graph.policies.run_deadline`). The reply cap is
checked on the whole reply.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable, RunnableConfig

from graph.support.workers import DaemonWorkers


class Limits(NamedTuple):
    """One call's bounds: its deadline in seconds and the longest reply taken, in characters."""

    timeout: float
    max_chars: int


class ReplyTooLong(ValueError):
    """The model wrote past the reply cap."""


class ModelDeadline(TimeoutError):
    """No whole reply within `model_timeout`: the call was abandoned (not a client's own
    timeout, which is reported as the failure it is)."""


async def acall_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    limits: Limits,
) -> AIMessage:
    """The model's whole reply, or TimeoutError / ReplyTooLong."""
    deadline = asyncio.timeout(limits.timeout)
    try:
        async with deadline:
            reply = await runnable.ainvoke(list(messages), config)
    except TimeoutError:
        if not deadline.expired():  # the client's own
            raise
        raise ModelDeadline(f"no complete reply within {limits.timeout:g} s") from None
    return capped(as_message(reply), limits.max_chars)


def call_model(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    config: RunnableConfig | None,
    limits: Limits,
) -> AIMessage:
    """The sync form: a sync HTTP read cannot be interrupted, so the call runs on a daemon
    worker and the run waits for it until the deadline (the worker finishes, or not, alone)."""
    call = contextvars.copy_context().run
    future = _CALLERS.submit(call, runnable.invoke, list(messages), config)
    try:
        reply = future.result(limits.timeout)
    except concurrent.futures.TimeoutError as exc:
        if future.done() and future.exception() is exc:
            raise  # the client's own timeout, before the deadline
        raise ModelDeadline(f"no complete reply within {limits.timeout:g} s") from None
    finally:
        # a failure's traceback holds this frame, and the future holds the failure: a
        # reference cycle that only the garbage collector would free
        del future
    return capped(as_message(reply), limits.max_chars)


_CALLERS = DaemonWorkers("model-call")


def capped(reply: AIMessage, max_chars: int) -> AIMessage:
    """The reply, or ReplyTooLong when its text and tool-call arguments pass `max_chars`."""
    size = len(reply.text) + sum(len(str(call.get("args") or "")) for call in reply.tool_calls)
    if size > max_chars:
        raise ReplyTooLong(
            f"the model's reply passed {max_chars:,} characters and was cut off "
            "(REACT_AGENT_MAX_REPLY_CHARS)"
        )
    return reply


def as_message(reply: Any) -> AIMessage:
    if isinstance(reply, BaseMessageChunk):
        reply = message_chunk_to_message(reply)
    if isinstance(reply, AIMessage):
        return reply
    return AIMessage(content=getattr(reply, "content", "" if reply is None else str(reply)))
