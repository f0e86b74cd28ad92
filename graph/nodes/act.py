"""act: run one tool call (one task per call, sent by the router) and write its observation.

Each task writes its own ToolMessage, so a crash keeps every call that finished and a resume
runs only the ones that did not. A failure of any kind is an observation, never an exception
that escapes the graph.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.runtime import get_runtime

from graph import messages as m
from graph.nodes.bindings import Bindings
from graph.protocols.text.prompts import truncate
from graph.settings import AgentContext
from graph.state import ActInput
from graph.tooling.runner import ToolResult, run_tool_call, run_tool_call_sync


def make_act(b: Bindings) -> tuple[Any, Any]:
    def act(payload: ActInput, config: RunnableConfig) -> dict[str, Any]:
        ctx, tools, call = _setup(b, payload)
        return _written(payload, run_tool_call_sync(call, tools, ctx.tool_timeout, config), ctx)

    async def aact(payload: ActInput, config: RunnableConfig) -> dict[str, Any]:
        await b.atools(b.context(get_runtime().context))  # a resume may start here
        ctx, tools, call = _setup(b, payload)
        result = await run_tool_call(call, tools, ctx.tool_timeout, config)
        return _written(payload, result, ctx)

    return act, aact


def _setup(b: Bindings, payload: ActInput) -> tuple[AgentContext, dict[str, Any], dict[str, Any]]:
    ctx = b.context(get_runtime().context)
    tools = {tool.name: tool for tool in b.tools(ctx)}
    call = dict(payload["call"])
    if payload.get("error"):
        call["error"] = payload["error"]
    return ctx, tools, call


def _written(payload: ActInput, result: ToolResult, ctx: AgentContext) -> dict[str, Any]:
    text = truncate(result["output"], ctx.observation_limit)
    note = payload.get("note")
    if note:
        text = f"{text}\n(Note: {note})"
    get_stream_writer()(
        {
            "event": "observation",
            "tool": result["name"],
            "text": text,
            "is_error": result["is_error"],
        }
    )
    message = m.observation(
        payload["call"], text, is_error=result["is_error"], duration_ms=result["duration_ms"]
    )
    return {"messages": [message]}
