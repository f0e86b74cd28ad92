"""act: run one tool call (one task per call, sent by the router) through the middleware's
`wrap_tool_call` chain, and write its observation.

Each task writes its own ToolMessage, so a crash keeps every call that finished and a resume
runs only the ones that did not. The innermost handler is the agent's runner: timeouts, size
caps, arguments fitted to the schema, and a failure of any kind as an observation, never an
exception that escapes the graph.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_stream_writer
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolRuntime
from langgraph.runtime import get_runtime
from langgraph.types import Command

from graph import messages as m
from graph.middleware.approval_seal import sealed
from graph.middleware.approvals import approval_middleware, needs_approval
from graph.middleware.chain import achain_tool_call, chain_tool_call, tool_layers
from graph.nodes.bindings import Bindings
from graph.protocols.text.prompts import truncate
from graph.settings import AgentContext
from graph.state import ActInput
from graph.tooling.runner import ToolResult, run_tool_call, run_tool_call_sync


def make_act(b: Bindings) -> tuple[Any, Any]:
    def act(payload: ActInput, config: RunnableConfig) -> Any:
        ctx, tools, request = _setup(b, payload, config)
        refused = _unapproved(ctx, payload, tools, config)
        if refused is not None:
            return _written(refused)

        def base(req: ToolCallRequest) -> ToolMessage:
            call = _call(req, payload)
            result = run_tool_call_sync(call, _with(tools, req.tool), ctx.tool_timeout, config)
            return _observed(payload, call, result, ctx)

        return _written(chain_tool_call(_layers(b, ctx, payload, tools), base)(request))

    async def aact(payload: ActInput, config: RunnableConfig) -> Any:
        await b.atools(b.context(get_runtime().context))  # a resume may start here
        ctx, tools, request = _setup(b, payload, config)
        refused = _unapproved(ctx, payload, tools, config)
        if refused is not None:
            return _written(refused)

        async def base(req: ToolCallRequest) -> ToolMessage:
            call = _call(req, payload)
            result = await run_tool_call(call, _with(tools, req.tool), ctx.tool_timeout, config)
            return _observed(payload, call, result, ctx)

        chain = achain_tool_call(_layers(b, ctx, payload, tools), base)
        return _written(await chain(request))

    return act, aact


def _setup(
    b: Bindings, payload: ActInput, config: RunnableConfig
) -> tuple[AgentContext, dict[str, BaseTool], ToolCallRequest]:
    runtime = get_runtime()
    ctx = b.context(runtime.context)
    tools = {tool.name: tool for tool in b.tools(ctx)}
    call = dict(payload["call"])
    state = {"messages": [], **(payload.get("state") or {})}
    tool_runtime = ToolRuntime(
        state=state,
        context=runtime.context,
        config=config,
        stream_writer=runtime.stream_writer,
        tool_call_id=call.get("id"),
        store=runtime.store,
        tools=list(tools.values()),
    )
    request = ToolCallRequest(
        tool_call=call, tool=tools.get(call["name"]), state=state, runtime=tool_runtime
    )
    return ctx, tools, request


def _unapproved(
    ctx: AgentContext, payload: ActInput, tools: dict[str, BaseTool], config: RunnableConfig
) -> ToolMessage | None:
    """The refusal of a call that needs approval and carries no seal the review step made for
    exactly this call (whatever sent it here), or None. The policy is checked again here: the
    operator's and the run's, never less than what the payload claims."""
    call = payload["call"]
    policy = {*ctx.approve, *(payload.get("approve") or [])}
    if ctx.approval_mode == "per_call" or not needs_approval(tools.get(call["name"]), policy):
        return None  # per call, the approval middleware itself pauses inside this node
    thread = (config.get("configurable") or {}).get("thread_id")
    if sealed(thread, call, payload.get("seal")):
        return None
    text = (
        f"The call to {call['name']} was not run: it needs approval, and no decision was "
        "recorded for this call with these arguments."
    )
    return m.observation(call, text, is_error=True)


def _layers(b: Bindings, ctx: AgentContext, payload: ActInput, tools: dict[str, BaseTool]) -> list:
    """The run's approval middleware (it applies a reviewer's edit and tells the model), then
    the user's tool wrappers, outermost first."""
    policy = payload.get("approve")
    approvals = approval_middleware(
        ctx.approve if policy is None else policy, list(tools.values()), ctx.approval_mode
    )
    return [*([approvals] if approvals else []), *tool_layers(b.middleware)]


def _call(request: ToolCallRequest, payload: ActInput) -> dict[str, Any]:
    call = dict(request.tool_call)
    if payload.get("error"):
        call["error"] = payload["error"]
    return call


def _with(tools: dict[str, BaseTool], tool: BaseTool | None) -> dict[str, BaseTool]:
    """The run's tools, with the one a middleware chose for this call (it may add one)."""
    if tool is None or tools.get(tool.name) is tool:
        return tools
    return {**tools, tool.name: tool}


def _observed(
    payload: ActInput, call: dict[str, Any], result: ToolResult, ctx: AgentContext
) -> ToolMessage:
    text = truncate(result["output"], ctx.observation_limit)
    note = payload.get("note")
    if note:
        text = f"{text}\n(Note: {note})"
    return m.observation(call, text, is_error=result["is_error"], duration_ms=result["duration_ms"])


def _written(result: ToolMessage | Command) -> Any:
    """The observation as the node's update (a `Command` a tool or middleware returned is
    passed on), told to stream listeners."""
    if isinstance(result, Command):
        return result
    if not m.is_our_observation(result):  # a middleware answered instead of the tool
        result = m.observation(
            {"id": result.tool_call_id, "name": result.name},
            result.text,
            is_error=result.status == "error",
        )
    get_stream_writer()(
        {
            "event": "observation",
            "tool": result.name,
            "text": result.text,
            "is_error": result.status == "error",
        }
    )
    return {"messages": [result]}
