"""The graph: five nodes, three routers, one builder. Read top to bottom:

START -> think -> review? -> act (one task per tool call) -> observe -> think ...
think: unusable reply -> observe (a correction); answer, error or limit -> finish -> END
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Send

from graph.checked import AgentGraph
from graph.nodes.act import make_act
from graph.nodes.bindings import Bindings
from graph.nodes.finish import make_finish
from graph.nodes.observe import make_observe
from graph.nodes.review import review
from graph.nodes.think import make_think
from graph.settings import ConfigError, RunContext, resolve_context
from graph.state import AgentState, InputState, OutputState
from graph.tooling.registry import registry_tools


def recursion_limit_for(max_steps: int) -> int:
    """Supersteps a run of `max_steps` iterations needs: think, act, observe per iteration, one
    approval pause per iteration at most, the first think, a wrap-up think and finish."""
    return 4 * max_steps + 6


def route_after_think(
    state: AgentState,
) -> list[Send] | Literal["review", "observe", "finish", "__end__"]:
    run = state.get("run") or {}
    if run.get("closed"):  # the recursion limit left no room even for finish
        return END
    if state.get("status") != "running":
        return "finish"
    if run.get("invalid"):
        return "observe"
    if run.get("review"):
        return "review"
    return tool_tasks(state) or "observe"


def route_after_review(state: AgentState) -> list[Send] | Literal["observe"]:
    return tool_tasks(state) or "observe"


def route_after_observe(state: AgentState) -> Literal["think", "finish"]:
    return "think" if state.get("status") == "running" else "finish"


def tool_tasks(state: AgentState) -> list[Send]:
    """One `act` task per call of the last step that has no observation yet."""
    messages = state.get("messages") or []
    index = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None
    )
    if index is None:
        return []
    step = messages[index]
    answered = {x.tool_call_id for x in messages[index + 1 :] if isinstance(x, ToolMessage)}
    protocol = (state.get("run") or {}).get("protocol") or "native"
    note = step.response_metadata.get("react_note")
    tasks = [
        Send(
            "act",
            {"call": call, "protocol": protocol, **({"note": note} if i == 0 and note else {})},
        )
        for i, call in enumerate(step.tool_calls)
        if call["id"] not in answered
    ]
    from graph.protocols.native import broken_call_error

    tasks += [
        Send(
            "act",
            {
                "call": {
                    "id": bad["id"],
                    "name": bad.get("name") or "?",
                    "args": bad.get("args") or "",
                },
                "protocol": protocol,
                "error": broken_call_error(bad),
            },
        )
        for bad in step.invalid_tool_calls
        if bad.get("id") and bad["id"] not in answered
    ]
    return tasks


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
    endpoint and model come from the environment). `tools` is any list of LangChain tools; None
    means the registry's tools named by the settings (all built-in tools by default).
    `settings` are further operator settings (`AgentContext` fields, e.g. `tool_timeout=5`).
    Nothing here touches the network or needs a key: the model is resolved per run.
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
    b = Bindings(model, tools, overrides, registry_tools)

    builder = StateGraph(
        AgentState, context_schema=RunContext, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("think", both(*make_think(b), name="think"))
    builder.add_node("review", both(review))
    builder.add_node("act", both(*make_act(b), name="act"))
    builder.add_node("observe", Inline(make_observe(b)))
    builder.add_node("finish", both(make_finish(b), name="finish"))
    builder.add_edge(START, "think")
    builder.add_conditional_edges(
        "think", Inline(route_after_think), ["review", "act", "observe", "finish", END]
    )
    builder.add_conditional_edges("review", Inline(route_after_review), ["act", "observe"])
    builder.add_edge("act", "observe")
    builder.add_conditional_edges("observe", Inline(route_after_observe), ["think", "finish"])
    builder.add_edge("finish", END)
    compiled = builder.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=list(interrupt_before) if interrupt_before else None,
        name=name,
    )
    compiled.__class__ = AgentGraph  # the same graph; inputs and updates are checked first
    return compiled.with_config(recursion_limit=recursion_limit_for(ctx.max_steps))


@functools.lru_cache(maxsize=1)
def served_graph() -> CompiledStateGraph:
    """What `langgraph.json` serves (a graph factory, so nothing is built at import): the default
    graph, compiled once per process. The server supplies the checkpointer."""
    return build_graph()


def both(func: Any, afunc: Any = None, *, name: str | None = None) -> RunnableLambda:
    """A node with a sync and an async form, traced like any runnable (so the messages it
    writes reach clients streaming `messages`). Bookkeeping runs inline in async runs too (a
    plain function would be sent to a worker thread for every call)."""
    if afunc is None:

        async def afunc(state: Any) -> Any:
            return func(state)

    return RunnableLambda(func, afunc=afunc, name=name or func.__name__)


class Inline(Runnable):
    """A router or pure bookkeeping node, called inline in sync and async runs alike: no
    tracing, no signature inspection on every call (a RunnableLambda's cost, paid three times
    per iteration otherwise). It writes nothing a client streams."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.name = func.__name__

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.func(input)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.func(input)
