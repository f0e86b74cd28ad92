"""Middleware wrappers composed around one model call. (Tool-call wrappers are composed by
`graph.tooling.execution`, into the one `wrap_tool_call` `ToolNode` takes.)

The first middleware is the outermost layer, as in `create_agent`. A layer may call the
handler several times (retries, fallbacks) or not at all (a canned reply); the `Command`s a
layer returns with `ExtendedModelResponse` are kept from the inner layers' last call only, so a
discarded attempt leaves nothing behind. LangChain's own composition helpers are private, so
this is ours: small, and tested against LangChain's documented semantics.

A layer that has only the sync form (`@wrap_model_call` / `@wrap_tool_call` on a plain function,
as the docs show) still runs in an async run (the CLI's `astream`, the served graph): its sync
form runs on a worker thread, and the handler it calls hands the inner, async layers back to the
run's event loop and waits for them (`async_form`). A layer with an async form of its own runs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage
from langgraph.types import Command

from graph.middleware.hooks import implements

ModelCall = Callable[[ModelRequest], ModelResponse]
AsyncModelCall = Callable[[ModelRequest], Awaitable[ModelResponse]]
Composed = tuple[ModelResponse, list[Command]]


def as_response(result: Any) -> tuple[ModelResponse, list[Command]]:
    """A layer's result as a response and the commands it carries."""
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result]), []
    if isinstance(result, ExtendedModelResponse):
        return result.model_response, [result.command] if result.command is not None else []
    if isinstance(result, ModelResponse):
        return result, []
    raise TypeError(
        f"wrap_model_call returned {type(result).__name__}; expected a ModelResponse, an "
        "AIMessage or an ExtendedModelResponse."
    )


def model_layers(middleware: Sequence[AgentMiddleware]) -> list[AgentMiddleware]:
    return [m for m in middleware if implements(m, "wrap_model_call")]


def tool_layers(middleware: Sequence[AgentMiddleware]) -> list[AgentMiddleware]:
    return [m for m in middleware if implements(m, "wrap_tool_call")]


Wrap = Callable[[ModelRequest, ModelCall], Any]  # a layer's `wrap_model_call`
AsyncWrap = Callable[[ModelRequest, AsyncModelCall], Awaitable[Any]]


def chain_model_call(wraps: Sequence[Wrap], base: ModelCall) -> Callable[..., Composed]:
    """`request -> (response, commands)` through every layer's `wrap_model_call` (`wraps`,
    outermost first). Built from the innermost layer out, with no closure that refers to
    itself: a chain is built at every model call, and a self-referencing one would be a
    reference cycle holding the call's request and config until the cyclic garbage collector
    ran."""

    def bottom(request: ModelRequest) -> Composed:
        return base(request), []

    call: Callable[[ModelRequest], Composed] = bottom
    for wrap in reversed(wraps):
        call = _model_layer(wrap, call)
    return call


def _model_layer(
    wrap: Wrap, inner: Callable[[ModelRequest], Composed]
) -> Callable[[ModelRequest], Composed]:
    def run(request: ModelRequest) -> Composed:
        kept: list[Command] = []

        def handler(req: ModelRequest) -> ModelResponse:
            response, commands = inner(req)
            kept[:] = commands
            return response

        response, own = as_response(wrap(request, handler))
        return response, [*kept, *own]

    return run


def achain_model_call(
    wraps: Sequence[AsyncWrap], base: AsyncModelCall
) -> Callable[..., Awaitable[Composed]]:
    """The async form, through every layer's async wrap (`async_form`)."""

    async def bottom(request: ModelRequest) -> Composed:
        return await base(request), []

    call: Callable[[ModelRequest], Awaitable[Composed]] = bottom
    for wrap in reversed(wraps):
        call = _amodel_layer(wrap, call)
    return call


def _amodel_layer(
    wrap: AsyncWrap, inner: Callable[[ModelRequest], Awaitable[Composed]]
) -> Callable[[ModelRequest], Awaitable[Composed]]:
    async def run(request: ModelRequest) -> Composed:
        kept: list[Command] = []

        async def handler(req: ModelRequest) -> ModelResponse:
            response, commands = await inner(req)
            kept[:] = commands
            return response

        response, own = as_response(await wrap(request, handler))
        return response, [*kept, *own]

    return run


def async_form(layer: AgentMiddleware, hook: str) -> Callable[[Any, Any], Awaitable[Any]]:
    """The layer's async wrap (`a<hook>`): its own where it has one, else its sync form run on a
    worker thread (`in_worker`), as a user who wrote only the sync form expects."""
    if getattr(type(layer), f"a{hook}") is not getattr(AgentMiddleware, f"a{hook}"):
        return getattr(layer, f"a{hook}")
    if getattr(type(layer), hook) is getattr(AgentMiddleware, hook):
        return getattr(layer, f"a{hook}")  # neither: LangChain's own error says so
    sync_wrap = getattr(layer, hook)

    async def wrap(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await in_worker(sync_wrap, request, handler)

    return wrap


async def in_worker(
    sync_wrap: Callable[[Any, Callable[[Any], Any]], Any],
    request: Any,
    handler: Callable[[Any], Awaitable[Any]],
) -> Any:
    """`sync_wrap(request, h)` on a worker thread, where each `h(req)` runs `handler(req)` on
    this event loop and waits for its result. The worker runs in a copy of this context (the
    run's config, its stream writer; `asyncio.to_thread` copies it), and so does every
    handler call it makes."""
    loop = asyncio.get_running_loop()

    def sync_handler(req: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(handler(req), loop).result()

    return await asyncio.to_thread(sync_wrap, request, sync_handler)
