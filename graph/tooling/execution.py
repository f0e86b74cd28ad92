"""Tool calls run by LangGraph's own `ToolNode`, with the agent's guarantees as its outermost
and innermost wrapper layers.

`ToolNode` brings what every LangChain tool expects: injected state (read from the graph, not
copied into each task), store and call id, `ToolRuntime`, tools that return a `Command`, and
the middleware's `wrap_tool_call` layers. Around them:

- outermost, `guarded`: any exception (after every retry a middleware made) becomes an error
  observation in a sentence the model can act on; interrupts pass through;
- innermost, `bounded`: an unknown tool is named with the valid ones, the model's arguments are
  fitted to the schema (a plain string, a lone misnamed key, JSON text), and the call gets the
  run's timeout.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from graph.support.workers import BLOCKING
from graph.tooling.awaited import Forms, awaited_forms
from graph.tooling.runner import ArgumentsError, coerce_arguments, describe_arguments, failure_text

Result = ToolMessage | Command
Execute = Callable[[ToolCallRequest], Result]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[Result]]
Wrapper = Callable[[ToolCallRequest, Execute], Result]
AsyncWrapper = Callable[[ToolCallRequest, AsyncExecute], Awaitable[Result]]


def tool_node(
    tools: Sequence[BaseTool],
    timeout: float,
    layers: Sequence[Wrapper] = (),
    alayers: Sequence[AsyncWrapper] = (),
    *,
    sync_run: bool = False,
) -> ToolNode:
    """A ToolNode running `tools` through the middleware's layers (outermost first), between
    the agent's guard and bounds. Awaited, a call runs the code its run expects, where that is
    a sync function in the sync run's own thread or on a daemon worker
    (`graph.tooling.awaited`); `sync_run` for a ToolNode a sync run awaits."""
    names = [t.name for t in tools]
    innermost = abounded(timeout, names, awaited_forms(tools, sync_run, timeout))
    return ToolNode(
        list(tools),
        handle_tool_errors=False,  # every failure reaches the layers, then the guard
        wrap_tool_call=compose([guarded(timeout), *layers, bounded(timeout, names)]),
        awrap_tool_call=acompose([aguarded(timeout), *alayers, innermost]),
    )


def compose(wrappers: Sequence[Wrapper]) -> Wrapper:
    def run(request: ToolCallRequest, execute: Execute) -> Result:
        call = execute
        for wrapper in reversed(wrappers):
            call = _bind(wrapper, call)
        return call(request)

    return run


def _bind(wrapper: Wrapper, inner: Execute) -> Execute:
    return lambda request: wrapper(request, inner)


def acompose(wrappers: Sequence[AsyncWrapper]) -> AsyncWrapper:
    async def run(request: ToolCallRequest, execute: AsyncExecute) -> Result:
        call = execute
        for wrapper in reversed(wrappers):
            call = _abind(wrapper, call)
        return await call(request)

    return run


def _abind(wrapper: AsyncWrapper, inner: AsyncExecute) -> AsyncExecute:
    async def run(request: ToolCallRequest) -> Result:
        return await wrapper(request, inner)

    return run


def error_message(request: ToolCallRequest, text: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")


def guarded(timeout: float) -> Wrapper:
    def guard(request: ToolCallRequest, execute: Execute) -> Result:
        try:
            return execute(request)
        except Exception as exc:
            return caught(request, exc, timeout)

    return guard


def aguarded(timeout: float) -> AsyncWrapper:
    async def guard(request: ToolCallRequest, execute: AsyncExecute) -> Result:
        try:
            return await execute(request)
        except Exception as exc:
            return caught(request, exc, timeout)

    return guard


def caught(request: ToolCallRequest, exc: Exception, timeout: float) -> ToolMessage:
    """The observation of a call that raised; LangGraph's interrupts pass on."""
    if isinstance(exc, GraphBubbleUp):
        raise exc
    name = request.tool_call["name"]
    return error_message(request, failure_text(exc, name, request.tool, timeout))


def _fitted(request: ToolCallRequest, names: Sequence[str]) -> ToolCallRequest | ToolMessage:
    """The request with arguments fitted to its tool, or the error the model is told."""
    tool, call = request.tool, request.tool_call
    if tool is None:
        valid = ", ".join(names) or "(none)"
        return error_message(request, f"Unknown tool '{call['name']}'. Valid tools: {valid}.")
    args = call["args"]
    try:
        fitted = coerce_arguments(tool, args.get("__arg1") if set(args) == {"__arg1"} else args)
    except ArgumentsError as exc:
        text = f"Invalid arguments: {exc}. Expected {describe_arguments(tool)}."
        return error_message(request, text)
    if fitted == args:
        return request
    return request.override(tool_call={**call, "args": fitted})


def bounded(timeout: float, names: Sequence[str]) -> Wrapper:
    def bound(request: ToolCallRequest, execute: Execute) -> Result:
        fitted = _fitted(request, names)
        if isinstance(fitted, ToolMessage):
            return fitted
        future = BLOCKING.submit(contextvars.copy_context().run, execute, fitted)
        try:
            return future.result(timeout)  # TimeoutError past the deadline; the thread is left
        finally:
            # a failure's traceback holds this frame, and the future holds the failure: a
            # reference cycle that only the garbage collector would free
            del future

    return bound


def abounded(
    timeout: float,
    names: Sequence[str],
    forms: Forms | None = None,
) -> AsyncWrapper:
    async def bound(request: ToolCallRequest, execute: AsyncExecute) -> Result:
        fitted = _fitted(request, names)
        if isinstance(fitted, ToolMessage):
            return fitted
        tool, form = (forms or {}).get(fitted.tool_call["name"], (None, None))
        if form is not None and fitted.tool is tool:
            fitted = fitted.override(tool=form)
        async with asyncio.timeout(timeout):  # in this task: no task of its own per call
            return await execute(fitted)

    return bound


def outputs(result: Any) -> list[Any]:
    """ToolNode's result for one call as a flat list of updates (dicts and Commands)."""
    return list(result) if isinstance(result, list) else [result]
