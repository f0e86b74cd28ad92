"""The graph wiring: four nodes, three routes, one builder.

START -> think -(act)-> act (one task per tool call) -> observe -(continue)-> think
               -(invalid)-----------------------------> observe -(limit)-> finish -> END
               -(answer | error | limit)--------------------------------> finish
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Send

from graph.settings import AgentContext, ConfigError, resolve_context
from graph.nodes import AgentNodes
from graph.tooling.registry import registry_tools
from graph.state import AgentState, InputState, OutputState, flat


def recursion_limit_for(max_steps: int) -> int:
    """Supersteps a run of `max_steps` iterations needs: think, act, observe per iteration, plus
    the first think, a wrap-up think and finish, with room to spare."""
    return 3 * max_steps + 6


def route_after_think(state: AgentState) -> list[Send] | str:
    state = flat(state)
    decision = state.get("decision")
    if decision == "act":
        shared = {
            "step": state.get("iteration", 0) + 1,
            "protocol": state.get("protocol") or "native",
            "thought": state.get("thought", ""),
            "approve": state.get("approve") or [],
        }
        return [
            Send(
                "act",
                {
                    "call": call,
                    "index": index,
                    **shared,
                    **(
                        {"usage": state.get("usage"), "note": state.get("note")}
                        if index == 0
                        else {}
                    ),
                },
            )
            for index, call in enumerate(state.get("pending", []))
        ]
    if decision == "invalid":
        return "observe"
    if decision == "stopped":  # the recursion limit left no room even for finish
        return END
    return "finish"


def route_after_observe(state: AgentState) -> str:
    return "think" if flat(state).get("decision") in ("continue", "wrap_up") else "finish"


def build_graph(
    model: BaseChatModel | str | None = None,
    tools: Sequence[BaseTool] | None = None,
    checkpointer: BaseCheckpointSaver | bool | None = None,
    protocol: str | None = None,
    max_steps: int | None = None,
    *,
    store: BaseStore | None = None,
    interrupt_before: Sequence[str] | None = None,
    name: str = "react-agent",
    **settings: Any,
) -> CompiledStateGraph:
    """Compile the agent.

    `model` is a chat model instance, a model name for the configured endpoint, or None (the
    endpoint and model come from the run's context and the environment). `tools` is any list of
    LangChain tools; None means the built-in tools named by the context (all by default).
    `settings` are further `AgentContext` fields (e.g. `observation_limit=2000`). Nothing here
    touches the network or needs a key: the model is resolved per run.
    """
    overrides: dict[str, Any] = dict(settings)
    if isinstance(model, str):
        overrides["model"] = model
        model = None
    if protocol is not None:
        overrides["protocol"] = protocol
    if max_steps is not None:
        overrides["max_steps"] = max_steps
    ctx = resolve_context(overrides, env={})  # a bad argument fails now, in one sentence
    with contextlib.suppress(ConfigError):  # a bad env variable is reported by the run
        ctx = resolve_context(overrides)
    nodes = AgentNodes(model, tools, overrides, registry_tools)

    builder = StateGraph(
        AgentState,
        context_schema=AgentContext,
        input_schema=InputState,
        output_schema=OutputState,
    )
    builder.add_node("think", RunnableCallable(nodes.think, nodes.athink, name="think"))
    builder.add_node("act", RunnableCallable(nodes.act, nodes.aact, name="act"))
    builder.add_node("observe", _sync_and_async(nodes.observe))
    builder.add_node("finish", _sync_and_async(nodes.finish))
    builder.add_edge(START, "think")
    builder.add_conditional_edges(
        "think", _sync_and_async(route_after_think), ["act", "observe", "finish", END]
    )
    builder.add_edge("act", "observe")
    builder.add_conditional_edges(
        "observe", _sync_and_async(route_after_observe), ["think", "finish"]
    )
    builder.add_edge("finish", END)
    compiled = builder.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=list(interrupt_before) if interrupt_before else None,
        name=name,
    )
    return compiled.with_config(recursion_limit=recursion_limit_for(ctx.max_steps))


def _sync_and_async(func: Any) -> RunnableCallable:
    """Bookkeeping nodes and routers run inline in async runs too: a plain function would be
    sent to a worker thread for every call."""
    if "runtime" in inspect.signature(func).parameters:

        async def afunc(state: AgentState, runtime: Any) -> Any:
            return func(state, runtime)

    else:

        async def afunc(state: AgentState) -> Any:  # type: ignore[misc]
            return func(state)

    return RunnableCallable(func, afunc, name=func.__name__, trace=False)
