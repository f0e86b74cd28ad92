"""Tool calls run by LangGraph's own `ToolNode`, with the agent's guarantees as its outermost
and innermost wrapper layers.

`ToolNode` brings what every LangChain tool expects: injected state (read from the graph, not
copied into each task), store and call id, `ToolRuntime`, tools that return a `Command`, and
the middleware's `wrap_tool_call` layers. Around them:

- outermost, `guarded`: any exception (after every retry a middleware made) becomes an error
  observation in a sentence the model can act on; interrupts pass through;
- innermost, `bounded`: an unknown tool is named with the valid ones, the model's arguments are
  fitted to the schema (a plain string, a lone misnamed key, JSON text), and the call gets the
  run's timeout as a *wait*: a call past it is abandoned (its thread finishes, or not, alone;
  a coroutine is cancelled) and the run goes on with "Tool 'x' timed out after N s."; nothing
  is raised into a sync tool.

Where a call runs: a sync run's call runs on a daemon worker the run waits for; an async run
awaits the tool's coroutine, and a tool with only a function runs it on a daemon worker too, not
on the loop's default executor (`asyncio.run` joins that executor's threads when it ends, so a
tool stuck past its deadline would hold up the caller's exit, and a few would fill it). A tool
with only a coroutine, in a sync run, is run to its end on a loop of its own there.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, Tool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from graph.support.workers import BLOCKING
from graph.tooling.runner import (
    ArgumentsError,
    ToolDeadline,
    coerce_arguments,
    describe_arguments,
    failure_text,
)
from tools.support.blocking import run_sync

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
) -> ToolNode:
    """A ToolNode running `tools` through the middleware's layers (outermost first), between
    the agent's guard and bounds."""
    names = [t.name for t in tools]
    return ToolNode(
        list(tools),
        handle_tool_errors=False,  # every failure reaches the layers, then the guard
        wrap_tool_call=compose([guarded(timeout), *layers, bounded(timeout, names, tools)]),
        awrap_tool_call=acompose([aguarded(timeout), *alayers, abounded(timeout, names, tools)]),
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


def bounded(timeout: float, names: Sequence[str], tools: Sequence[BaseTool] = ()) -> Wrapper:
    forms = _forms(tools, sync_form)

    def bound(request: ToolCallRequest, execute: Execute) -> Result:
        fitted = _fitted(request, names)
        if isinstance(fitted, ToolMessage):
            return fitted
        fitted = _in_form(fitted, forms)
        future = BLOCKING.submit(contextvars.copy_context().run, execute, fitted)
        try:
            return future.result(timeout)
        except TimeoutError as exc:
            if future.done() and future.exception() is exc:
                raise  # the tool's own
            raise ToolDeadline from None  # past the deadline: the thread is left to itself
        finally:
            # a failure's traceback holds this frame, and the future holds the failure: a
            # reference cycle that only the garbage collector would free
            del future

    return bound


def abounded(timeout: float, names: Sequence[str], tools: Sequence[BaseTool] = ()) -> AsyncWrapper:
    forms = _forms(tools, daemon_form)

    async def bound(request: ToolCallRequest, execute: AsyncExecute) -> Result:
        fitted = _fitted(request, names)
        if isinstance(fitted, ToolMessage):
            return fitted
        deadline = asyncio.timeout(timeout)  # in this task: no task of its own per call
        try:
            async with deadline:
                return await execute(_in_form(fitted, forms))
        except TimeoutError:
            if deadline.expired():
                raise ToolDeadline from None
            raise  # the tool's own

    return bound


Forms = dict[str, tuple[BaseTool, BaseTool]]  # name -> (the tool, the form run instead)


def _forms(tools: Sequence[BaseTool], form: Callable[[BaseTool], BaseTool | None]) -> Forms:
    pairs = {tool.name: (tool, form(tool)) for tool in tools}
    return {name: (tool, other) for name, (tool, other) in pairs.items() if other is not None}


def _in_form(request: ToolCallRequest, forms: Forms) -> ToolCallRequest:
    tool, form = forms.get(request.tool_call["name"], (None, None))
    return request.override(tool=form) if form is not None and request.tool is tool else request


_FUNCTION_TOOLS = (StructuredTool._run, Tool._run)
_MANAGERS = {"callbacks", "run_manager"}


def daemon_form(tool: BaseTool) -> BaseTool | None:
    """A function tool with only a function, whose coroutine runs that function on daemon
    workers (see the module's docstring). None for any other tool, and for a function that
    takes LangChain's callback managers (awaited, it would be handed the async ones)."""
    func = getattr(tool, "func", None)
    if type(tool)._run not in _FUNCTION_TOOLS or func is None or tool.coroutine is not None:
        return None
    if _MANAGERS & set(_parameters(func)):
        return None

    @functools.wraps(func)
    async def run(*args: Any, **kwargs: Any) -> Any:
        call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
        return await asyncio.wrap_future(BLOCKING.submit(call))

    return tool.model_copy(update={"coroutine": run})


def sync_form(tool: BaseTool) -> BaseTool | None:
    """A function tool with only a coroutine, whose function runs that coroutine to its end
    (`tools.support.blocking.run_sync`), so a sync run can call it. None for any other tool."""
    coroutine = getattr(tool, "coroutine", None)
    if type(tool)._run not in _FUNCTION_TOOLS or tool.func is not None or coroutine is None:
        return None

    @functools.wraps(coroutine)
    def run(*args: Any, **kwargs: Any) -> Any:
        return run_sync(lambda: coroutine(*args, **kwargs))

    return tool.model_copy(update={"func": run})


def _parameters(func: Callable[..., Any]) -> Sequence[str]:
    try:
        return list(inspect.signature(func).parameters)
    except (TypeError, ValueError):  # a callable without a signature: pass it nothing extra
        return []


def outputs(result: Any) -> list[Any]:
    """ToolNode's result for one call as a flat list of updates (dicts and Commands)."""
    return list(result) if isinstance(result, list) else [result]


def tool_update_refusal(result: Any, guarded: Collection[str]) -> str | None:
    """The sentence a tool's observation says instead, when the tool returned a `Command`
    whose update writes a key only the agent's own steps write (`guarded`: `LOOP_KEYS` and the
    middleware's private keys, `Bindings.guarded`); None for any other result. A tool runs
    inside act, so its update would otherwise be written as act's own."""
    update = result.update if isinstance(result, Command) else None
    if isinstance(update, Mapping):
        keys = list(update)
    elif isinstance(update, (list, tuple)):
        keys = [item[0] for item in update if isinstance(item, (list, tuple)) and item]
    else:
        return None
    written = sorted({key for key in keys if key in guarded})
    if not written:
        return None
    return (
        f"The tool's update was not applied: it writes {', '.join(map(repr, written))}, which "
        "only the agent's own steps write."
    )
