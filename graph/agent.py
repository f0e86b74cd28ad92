"""The graph: five nodes, their routers, one builder. Read top to bottom:

START -> think -> review? -> act (by an edge for one call, a task per call for several)
  -> observe? -> think ...
act -> think when there is nothing to observe (`route_after_act`), else -> observe
think: unusable reply -> think again (the corrections policy answers it first); no call left to
  run (a hook answered them) -> observe; answer, error or limit -> finish -> END; no room left
  even for finish -> END
review: every call rejected or answered -> observe

LangChain middleware's node hooks sit around them where `create_agent` puts its own (`wire`):
before_agent and before_model hooks before think, after_model hooks after it, after_agent hooks
after finish; wrap_model_call and wrap_tool_call run inside think and act.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.tools import BaseTool
from langgraph.cache.base import BaseCache
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Send

from graph._compat import both, compiled_as, inline
from graph.caller_schemas import context_schema_for
from graph.checked import SERVED_CONTEXT, AgentGraph
from graph.loop.bindings import Bindings
from graph.loop.tasks import hooks_answered, to_act
from graph.middleware.hooks import NODE_HOOKS, add_hook_nodes, jumps_of, node_name, with_hook
from graph.middleware.loading import check_names, load_middleware
from graph.middleware.schema import extended, private_keys
from graph.middleware.streaming import stream_transformers
from graph.node_names import our_node_names
from graph.nodes.act import make_act
from graph.nodes.finish import make_finish
from graph.nodes.observe import make_observe, make_route_after_act
from graph.nodes.review import make_review
from graph.nodes.think import make_think
from graph.settings import ConfigError, resolve_context
from graph.state import LOOP_KEYS, AgentState, InputState, OutputState, RouteState, run_status
from graph.tooling.registry import registry_tools
from graph.tracing import trace_from_environment

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime


def recursion_limit_for(max_steps: int, hooks_per_step: int = 0, hooks_once: int = 0) -> int:
    """Supersteps a run of `max_steps` iterations may need: think, act, observe per iteration, one
    approval pause per iteration at most, the first think, a wrap-up think and finish; plus one
    per middleware node hook each time it runs (before_model and after_model hooks every
    iteration, before_agent and after_agent hooks once)."""
    return (4 + hooks_per_step) * (max_steps + 2) - 2 + hooks_once


def route_after_think(
    state: RouteState,
) -> list[Send] | Literal["act", "review", "model", "observe", "finish", "__end__"]:
    """After think: an unusable reply goes back to the model (`model`, the loop's entry),
    where the corrections policy answers it first; a last model message with no call (a
    hook's reply, a client's `update_state` of the step) ends the run, as in `create_agent`."""
    run = state.get("run") or {}
    if run.get("closed"):  # the recursion limit left no room even for finish
        return END
    if run_status(state) != "running" or hooks_answered(state):
        return "finish"
    if run.get("invalid"):
        return "model"
    if run.get("review"):
        return "review"
    return to_act(state) or "observe"


def route_after_review(state: RouteState) -> list[Send] | Literal["act", "observe"]:
    return to_act(state) or "observe"


def build_graph(
    model: BaseChatModel | str | None = None,
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | None = None,
    checkpointer: BaseCheckpointSaver | bool | None = None,
    protocol: str | None = None,
    max_steps: int | None = None,
    *,
    system_prompt: str | SystemMessage | None = None,
    middleware: Sequence[AgentMiddleware] = (),
    state_schema: type | None = None,
    context_schema: type | None = None,
    response_format: Any = None,
    store: BaseStore | None = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    debug: bool = False,
    name: str = "react-agent",
    transformers: Sequence[Callable[[tuple[str, ...]], Any]] = (),
    cache: BaseCache | None = None,
    **settings: Any,
) -> CompiledStateGraph:
    """Compile the agent; it takes what `create_agent` takes. think plays `create_agent`'s
    `model` node and act its `tools` node (for stream consumers reading `langgraph_node`).

    `model`: a chat model, a model name for the configured endpoint, or None (both from the
    environment). `tools`: LangChain tools, plain functions (wrapped with `tool`) and provider
    tools' dicts (offered to native requests, run by the provider); None: the registry's tools
    the settings name. `system_prompt`: text (the setting) or a `SystemMessage`, sent as given
    unless a run sets another. `interrupt_before`/`interrupt_after` (think, review, act,
    observe, finish; `model` and `tools` as in `create_agent`), `debug`, `cache` and stream
    `transformers` go to `compile`. `middleware`: LangChain v1 `AgentMiddleware`, after the
    operator's `REACT_AGENT_MIDDLEWARE`, under either protocol. `state_schema` and
    `context_schema` add the caller's own keys (`graph.caller_schemas`). `response_format` (a
    pydantic model, TypedDict, JSON schema, `ToolStrategy` or `ProviderStrategy`) puts a typed
    result in `structured_response`. `settings`: further operator settings (`AgentContext`
    fields, e.g. `tool_timeout=5`). Nothing here touches the network or needs a key.
    """
    trace_from_environment()  # OpenTelemetry when the OTEL_* variables ask (docs/tracing.md)
    overrides: dict[str, Any] = dict(settings)
    if isinstance(model, str):
        overrides["model"] = model
        model = None
    if protocol is not None:
        overrides["protocol"] = protocol
    if max_steps is not None:
        overrides["max_steps"] = max_steps
    if system_prompt is not None:  # a SystemMessage's text is the setting; the message is kept
        text = system_prompt.text if isinstance(system_prompt, SystemMessage) else system_prompt
        overrides["system_prompt"] = text
    ctx = resolve_context(overrides, env={})  # a bad argument fails now, in one sentence
    with contextlib.suppress(ConfigError):  # a bad env variable is reported by the run
        ctx = resolve_context(overrides)
    wares = [*load_middleware(ctx.middleware), *middleware]
    check_names(wares)
    own_system = system_prompt if isinstance(system_prompt, SystemMessage) else None
    b = Bindings(model, tools, overrides, registry_tools, wares, response_format, own_system)
    context, b.caller_fields = context_schema_for(context_schema)
    own = [state_schema] if state_schema is not None else []
    state, input_state, output_state = extended(
        AgentState,
        InputState,
        OutputState,
        [*own, HumanInTheLoopMiddleware.state_schema, *(w.state_schema for w in wares)],
    )
    b.guarded = LOOP_KEYS | private_keys(state)
    builder = StateGraph(
        state, context_schema=context, input_schema=input_state, output_schema=output_state
    )
    builder.add_node("think", both(*make_think(b), name="think"))
    builder.add_node("review", both(*make_review(b), name="review"))
    # a Send's payload (ActInput) or, for a step of one call, the state (handed to the tools)
    builder.add_node("act", both(*make_act(b), name="act"))
    builder.add_node("observe", both(make_observe(b), name="observe"))
    builder.add_node("finish", make_finish(b))
    hooks = {hook: with_hook(wares, hook) for hook in NODE_HOOKS}
    add_hook_nodes(builder, hooks)
    wire(builder, hooks, b)
    b.step_hooks = len(hooks["before_model"]) + len(hooks["after_model"])
    b.closing_hooks = len(hooks["after_agent"])
    b.after_think_hooks = len(hooks["after_model"]) + b.closing_hooks
    compiled = builder.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=our_node_names(interrupt_before),
        interrupt_after=our_node_names(interrupt_after),
        debug=debug,
        name=name,
        transformers=stream_transformers(wares, transformers),
        cache=cache,
    )
    compiled = compiled_as(compiled, AgentGraph)  # the same graph; inputs checked first
    once = len(hooks["before_agent"]) + len(hooks["after_agent"])
    limit = recursion_limit_for(ctx.max_steps, b.step_hooks, once)
    # named as create_agent names its agent, so a client sees it as a subagent inside a tool
    return compiled.with_config(recursion_limit=limit, metadata={"lc_agent_name": name})


def wire(builder: StateGraph, hooks: dict[str, list[AgentMiddleware]], b: Bindings) -> None:
    """The edges, with each middleware node hook where `create_agent` runs it:

    START -> before_agent hooks -> [before_model hooks -> think -> after_model hooks (last
    first) -> review? -> act -> observe?] ... -> finish -> after_agent hooks (last first) -> END

    A hook that declared jumps gets a conditional edge: `model` goes to the loop's entry,
    `tools` to act (the calls of the last step), `end` to finish.
    """
    names = {hook: [node_name(w, hook) for w in found] for hook, found in hooks.items()}
    loop_entry = (names["before_model"] or ["think"])[0]
    before = [*names["before_agent"], *names["before_model"]]
    after_model = list(reversed(names["after_model"]))
    after_agent = list(reversed(names["after_agent"]))
    routes = {"model": loop_entry, "end": "finish"}

    builder.add_edge(START, (before or ["think"])[0])
    chain = [*before, "think"]
    owners = {node_name(w, h): (w, h) for h, found in hooks.items() for w in found}
    for node, following in itertools.pairwise(chain):
        _hook_edge(builder, node, following, owners[node], routes)
    think_exits = {x: x for x in ("review", "act", "observe", "finish", END)}
    think_exits["model"] = loop_entry
    if after_model:
        builder.add_edge("think", after_model[0])
        for node, following in itertools.pairwise(after_model):
            _hook_edge(builder, node, following, owners[node], routes)
        last = after_model[-1]
        ware, hook = owners[last]
        jumps = jumps_of(ware, hook)
        router = _after_hooks(jumps, loop_entry)
        builder.add_conditional_edges(last, inline(router), {**think_exits, loop_entry: loop_entry})
    else:
        builder.add_conditional_edges("think", inline(route_after_think), think_exits)
    builder.add_conditional_edges("review", inline(route_after_review), ["act", "observe"])
    after_act = make_route_after_act(b, loop_entry)
    builder.add_conditional_edges("act", inline(after_act), [loop_entry, "observe"])
    after_observe = _after_observe(loop_entry)
    builder.add_conditional_edges("observe", inline(after_observe), [loop_entry, "finish"])
    ends = [*after_agent, END]
    builder.add_edge("finish", ends[0])
    for node, following in itertools.pairwise([*after_agent, END]):
        _hook_edge(builder, node, following, owners[node], routes)


def _hook_edge(
    builder: StateGraph,
    node: str,
    following: str,
    owner: tuple[AgentMiddleware, str],
    routes: dict[str, str],
) -> None:
    jumps = jumps_of(*owner)
    if not jumps:
        builder.add_edge(node, following)
        return

    def route(state: AgentState) -> Any:
        jump = state.get("jump_to")
        if jump == "tools":
            return to_act(state) or following
        return routes.get(jump or "", following) if jump in jumps else following

    targets = {following, *(routes[j] for j in jumps if j in routes)}
    if "tools" in jumps:
        targets.add("act")
    route.__name__ = f"route_after_{node}"
    builder.add_conditional_edges(node, inline(route), sorted(targets))


def _after_hooks(jumps: list[str], loop_entry: str) -> Any:
    """After the after_model hooks: their jump if they declared one, else think's route."""

    def route_after_model_hooks(state: AgentState) -> Any:
        jump = state.get("jump_to")
        if jump in jumps:
            if jump == "model":
                return loop_entry
            if jump == "end":
                return "finish"
            return to_act(state) or "observe"
        return route_after_think(state)

    return route_after_model_hooks


def _after_observe(loop_entry: str) -> Any:
    def route_after_observe(state: RouteState) -> str:
        return loop_entry if run_status(state) == "running" else "finish"

    return route_after_observe


@functools.lru_cache(maxsize=1)
def _default_graph() -> CompiledStateGraph:
    return build_graph()


def served_graph(runtime: ServerRuntime | None = None) -> CompiledStateGraph:
    """What `langgraph.json` serves (a graph factory, so nothing is built at import): the default
    graph, compiled once per process. The server supplies the checkpointer.

    The server drops a run context's keys (or those of an older client's `configurable`) that
    the context schema does not list before the graph runs. The factory sees the context as
    sent: when it holds such a key, the run gets it whole (`graph.checked.SERVED_CONTEXT`) and
    is refused with one sentence, as in code."""
    graph = _default_graph()
    context = getattr(runtime, "context", None)
    if isinstance(context, Mapping) and context:
        listed = (graph.get_context_jsonschema() or {}).get("properties") or {}
        if not set(listed).issuperset(context):
            return graph.with_config(configurable={SERVED_CONTEXT: dict(context)})
    return graph
