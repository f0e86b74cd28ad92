"""Which code runs, and on which thread, when a tool call is awaited.

ToolNode's async path awaits `tool.ainvoke`. LangChain then runs a tool's coroutine on the
event loop, and a tool with only a sync function on the loop's default executor. Two things
follow that the agent does not want, and the innermost layer (`execution.abounded`) swaps the
tool for one of the forms below:

- a sync run awaits its calls on its thread's own loop (`graph.support.thread_loop`): a tool
  with a function must run that function, as a sync call would, even where it has a coroutine
  too, and in the run's own thread with the loop stopped, as a plain call would, with no hand-off
  to another thread (`caller_form`; `sync_form` where the function takes LangChain's callback
  managers);
- in an async run the default executor belongs to the caller's loop: `asyncio.run` waits for
  its threads when it ends, and a few calls stuck past their deadline fill it, so every later
  sync call in the process queues behind them. A tool's function runs on daemon workers
  instead (`daemon_form`), as in a sync run.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, Tool

from graph.support import thread_loop
from graph.support.workers import BLOCKING

Forms = dict[str, tuple[BaseTool, BaseTool]]  # name -> (the tool, the form awaited instead)

_DEFAULT_ASYNC_FORMS = (BaseTool._arun, StructuredTool._arun, Tool._arun)
_FUNCTION_TOOLS = (StructuredTool._arun, Tool._arun)
_MANAGER_PARAMETERS = {"callbacks", "run_manager"}


def awaits_sync_code(tool: BaseTool | None) -> bool:
    """Whether a sync run can await the tool and still run the code a sync call runs: its
    function (on the loop's daemon executor; `sync_form` for a tool with a coroutine too) or
    its only implementation, a coroutine. Not a tool class with async code of its own."""
    return tool is None or type(tool)._arun in _DEFAULT_ASYNC_FORMS


def async_only(tool: BaseTool | None) -> bool:
    """A tool with only a coroutine: a sync run that cannot await it on its thread's loop
    sends it through ToolNode's async path on a loop of its own."""
    return (
        tool is not None
        and getattr(tool, "func", "") is None
        and bool(getattr(tool, "coroutine", None))
    )


def awaited_forms(tools: Sequence[BaseTool], sync_run: bool, timeout: float) -> Forms:
    """The tools awaited in another form, for a sync run or for an async one."""
    if sync_run:
        forms = {tool.name: (tool, caller_form(tool, timeout)) for tool in tools}
    else:
        forms = {tool.name: (tool, daemon_form(tool)) for tool in tools}
    return {name: pair for name, pair in forms.items() if pair[1] is not None}


def caller_form(tool: BaseTool, timeout: float) -> BaseTool | None:
    """A tool with a function, whose coroutine runs that function in the awaiting run's thread
    with its loop stopped, cut at `timeout` (`thread_loop.outside`). A function that takes
    LangChain's callback managers keeps the executor (`sync_form`): awaited, it would be
    handed the async ones. None for any other tool."""
    func = _function(tool)
    if func is None:
        return None
    if _takes_managers(func):
        return sync_form(tool)
    return tool.model_copy(update={"coroutine": in_this_thread(func, timeout)})


def sync_form(tool: BaseTool) -> BaseTool | None:
    """A tool with a function and a coroutine, without its coroutine: awaited, it runs its
    function. None for any other tool."""
    if getattr(tool, "func", None) is None or getattr(tool, "coroutine", None) is None:
        return None
    return tool.model_copy(update={"coroutine": None})


def daemon_form(tool: BaseTool) -> BaseTool | None:
    """A tool with only a function, whose coroutine runs that function on daemon workers. None
    for any other tool, and for a function that takes LangChain's callback managers (awaited,
    it would be handed the async ones)."""
    func = _function(tool)
    if func is None or getattr(tool, "coroutine", None) is not None or _takes_managers(func):
        return None
    return tool.model_copy(update={"coroutine": on_daemon_workers(func)})


def _function(tool: BaseTool) -> Callable[..., Any] | None:
    """The function of a LangChain function tool (`StructuredTool`, `Tool`), or None."""
    if type(tool)._arun not in _FUNCTION_TOOLS:
        return None
    return getattr(tool, "func", None)


def _takes_managers(func: Callable[..., Any]) -> bool:
    return bool(_MANAGER_PARAMETERS & set(_parameters(func)))


def on_daemon_workers(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` as a coroutine function that runs it on daemon workers."""
    return _awaitable(func, lambda call: asyncio.wrap_future(BLOCKING.submit(call)))


def in_this_thread(func: Callable[..., Any], timeout: float) -> Callable[..., Any]:
    """`func` as a coroutine function that runs it in the awaiting thread with its loop
    stopped, cut at `timeout`."""
    return _awaitable(func, lambda call: thread_loop.outside(call, timeout))


def _awaitable(
    func: Callable[..., Any], runner: Callable[[Callable[[], Any]], Awaitable[Any]]
) -> Callable[..., Any]:
    """`func` as a coroutine function that hands `runner` the call, bound to its arguments
    and the awaiting task's context; its signature is `func`'s, so LangChain passes it the
    same arguments."""

    @functools.wraps(func)
    async def run(*args: Any, **kwargs: Any) -> Any:
        return await runner(
            functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
        )

    return run


def _parameters(func: Callable[..., Any]) -> Sequence[str]:
    try:
        return list(inspect.signature(func).parameters)
    except (TypeError, ValueError):  # a callable without a signature: pass it nothing extra
        return []
