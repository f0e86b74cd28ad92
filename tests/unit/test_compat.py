"""Upgrade canaries for graph/_compat.py, the one module that leans on other packages'
internals: if a LangChain or LangGraph release moves any of them, these fail loudly here instead
of every jump, every input check or every tool's injected state silently stopping to work."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents.middleware import AgentMiddleware, AgentState, before_model, hook_config
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import InjectedState, ToolNode
from typing_extensions import TypedDict

from graph._compat import checkpointed, compiled_as, declared_jumps, tool_input


def test_declared_jumps_are_read_from_langchains_decorators() -> None:
    @before_model(can_jump_to=["end", "model"])
    def decorated(state: AgentState, runtime: Any) -> None:
        return None

    class Configured(AgentMiddleware):
        @hook_config(can_jump_to=["tools"])
        def after_model(self, state, runtime):
            return None

    assert declared_jumps(decorated, "before_model") == ["end", "model"]
    assert declared_jumps(Configured(), "after_model") == ["tools"]
    assert declared_jumps(Configured(), "before_model") == []


class Counter(TypedDict):
    n: int


class Checked(CompiledStateGraph):
    """A subclass that only adds a method, as graph.checked.AgentGraph does."""

    def marker(self) -> str:
        return "checked"


def test_a_compiled_graph_rebuilt_as_a_subclass_is_the_same_graph() -> None:
    builder = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    compiled = builder.compile(name="counter").with_config(recursion_limit=7)
    checked = compiled_as(compiled, Checked)
    assert type(checked) is Checked and type(compiled) is not Checked
    assert checked.marker() == "checked"
    assert set(vars(checked)) == set(vars(compiled))  # every field carried over
    assert checked.config == compiled.config and checked.name == "counter"
    assert checked.invoke({"n": 1}) == {"n": 2}
    assert type(checked.with_config(tags=["x"])) is Checked  # copies keep the class


def test_an_untraced_runs_both_forms_and_its_messages_still_stream() -> None:
    """`untraced` is LangGraph's RunnableCallable with `trace=False` (as `create_agent`
    builds its nodes): the sync form in `invoke`, the async one in `ainvoke`, no callback run
    of its own, and the messages it writes still reach a client streaming `messages`."""
    import asyncio

    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage
    from langgraph.graph import MessagesState

    from graph._compat import untraced

    forms: list[str] = []

    def sync(state: MessagesState) -> dict[str, Any]:
        forms.append("sync")
        return {"messages": [AIMessage("from the node", id="m1")]}

    async def both(state: MessagesState) -> dict[str, Any]:
        forms.append("async")
        return {"messages": [AIMessage("from the node", id="m1")]}

    class Runs(BaseCallbackHandler):
        def __init__(self) -> None:
            self.names: list[str] = []

        def on_chain_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
            self.names.append(kw.get("name"))

    builder = StateGraph(MessagesState)
    builder.add_node("speak", untraced(sync, both, "speak"))
    builder.add_edge(START, "speak")
    builder.add_edge("speak", END)
    graph = builder.compile()
    runs = Runs()
    streamed = list(graph.stream({"messages": []}, {"callbacks": [runs]}, stream_mode="messages"))
    assert [chunk.text for chunk, _ in streamed] == ["from the node"]
    assert runs.names.count("speak") == 1  # the task's run only: none of the node's own
    asyncio.run(graph.ainvoke({"messages": []}))
    assert forms == ["sync", "async"]


def test_an_untraced_router_runs_on_the_event_loop_thread() -> None:
    """A plain function as a router is sent to a worker thread in async runs; `untraced`
    with no async form runs it inline, as `create_agent` runs its own routers."""
    import asyncio
    import threading

    from graph._compat import untraced

    threads: list[str] = []

    def route(state: Counter) -> str:
        threads.append(threading.current_thread().name)
        return END

    builder = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", untraced(route, None, "route"), [END])
    assert asyncio.run(builder.compile().ainvoke({"n": 1})) == {"n": 2}
    assert threads == [threading.current_thread().name]


class Chat(TypedDict):
    messages: list
    note: str


def test_a_tool_call_with_the_state_reaches_injected_tools_without_a_second_read() -> None:
    """`tool_input` hands the ToolNode the state act read: a tool with `InjectedState` gets
    exactly that, and the node never reads the graph's channels again (it would copy each)."""

    @tool
    def echo(word: str, state: Annotated[dict, InjectedState]) -> str:
        """Echo the word and the state's note."""
        return f"{word} {state['note']}"

    reads: list[Any] = []

    def act(state: Chat, config: RunnableConfig) -> dict:
        config["configurable"]["__pregel_read"] = lambda *a, **k: reads.append(a) or {}
        call = {"name": "echo", "args": {"word": "hi"}, "id": "c1", "type": "tool_call"}
        out = ToolNode([echo]).invoke(tool_input(call, state), config)
        return {"messages": out["messages"] if isinstance(out, dict) else out}

    builder = StateGraph(Chat)
    builder.add_node("act", act)
    builder.add_edge(START, "act")
    builder.add_edge("act", END)
    result = builder.compile().invoke({"messages": [], "note": "from the state"})
    (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert message.content == "hi from the state"
    assert reads == []
    bare = ToolNode([echo])._parse_input(
        tool_input({"name": "echo", "args": {}, "id": "c", "type": "tool_call"}, None)
    )
    assert bare[1] == "tool_calls"  # without a state: the bare call, and the node reads it


def test_a_runs_checkpointer_is_seen_in_its_config() -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.config import get_config

    seen: list[bool] = []

    def node(state: Counter) -> Counter:
        seen.append(checkpointed(get_config()))
        return {"n": state["n"] + 1}

    builder = StateGraph(Counter)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    builder.compile().invoke({"n": 0})
    builder.compile(checkpointer=InMemorySaver()).invoke(
        {"n": 0}, {"configurable": {"thread_id": "t"}}
    )
    assert seen == [False, True]


def test_the_subagent_transformer_is_langchains_and_projects_subagents() -> None:
    """`create_agent` registers `SubagentTransformer` from a private module: if a release
    moves it or renames its projection, this fails instead of `run.subagents` vanishing."""
    from langchain.agents import factory

    from graph._compat import subagent_transformer

    transformer = subagent_transformer()
    assert transformer is factory.SubagentTransformer  # the one create_agent registers
    assert set(transformer(()).init()) == {"subagents"}


def test_a_routers_config_carries_the_runs_runtime() -> None:
    """`config_runtime` reads the run's `Runtime` from a task's config, where LangGraph keeps it
    (`CONFIG_KEY_RUNTIME`): if a release moves it, routers lose the run's settings silently."""
    from langgraph.runtime import Runtime

    from graph._compat import config_runtime

    seen: list[Any] = []

    def route(state: Counter, config: RunnableConfig) -> str:
        seen.append(config_runtime(config))
        return END

    builder = StateGraph(Counter, context_schema=dict)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", route, [END])
    builder.compile().invoke({"n": 1}, context={"user": "u1"})
    assert isinstance(seen[0], Runtime) and seen[0].context == {"user": "u1"}
    assert config_runtime({}) is None


def test_a_wrap_span_and_a_node_policy_are_langchains() -> None:
    from langchain.agents.middleware import TracePolicy, configure_trace_policy
    from langgraph.types import omit_payload

    from graph._compat import node_trace_policy, wrap_span

    class Named(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

    ware = Named()
    span = wrap_span(ware, "wrap_model_call", ware.wrap_model_call)
    assert span("request", lambda r: f"{r} handled") == "request handled"
    own = node_trace_policy(TracePolicy(process_inputs=omit_payload))
    assert own.process_inputs({"messages": [1]}) == {}
    configure_trace_policy(TracePolicy(process_inputs=lambda _: "default"))
    try:
        assert node_trace_policy(None).process_inputs({"messages": [1]}) == "default"
    finally:
        configure_trace_policy(None)
    assert node_trace_policy(None).process_inputs({"messages": [1]}) == {"messages": [1]}


def test_a_failed_aiosqlite_connection_has_a_worker_thread_to_wait_for(tmp_path: Path) -> None:
    """`aiosqlite_worker`: the thread a connection that failed to open leaves running."""
    import asyncio
    import sqlite3

    import aiosqlite

    from graph._compat import aiosqlite_worker

    async def failing() -> Any:
        conn = aiosqlite.connect(str(tmp_path))  # a folder: SQLite cannot open it
        with pytest.raises(sqlite3.Error):
            await conn
        worker = aiosqlite_worker(conn)
        assert isinstance(worker, threading.Thread)
        await asyncio.to_thread(worker.join, 5)
        return worker

    assert not asyncio.run(failing()).is_alive()


def test_a_paused_checkpoint_is_seen_in_its_pending_writes() -> None:
    """`holds_interrupt` reads the channel LangGraph stores an interrupt under among a
    checkpoint's pending writes: if a release renames it, a new question on a per_call pause
    would silently drop the results of the step's finished calls again."""
    from langgraph._internal._constants import INTERRUPT
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command, interrupt

    from graph._compat import INTERRUPT_CHANNEL, holds_interrupt

    assert INTERRUPT_CHANNEL == INTERRUPT

    def node(state: Counter) -> Counter:
        return {"n": state["n"] + int(interrupt("more?"))}

    builder = StateGraph(Counter)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 0}, config)
    assert holds_interrupt(saver.get_tuple(config))
    graph.invoke(Command(resume=1), config)
    assert not holds_interrupt(saver.get_tuple(config)) and not holds_interrupt(None)


def test_provider_output_beside_tools_is_create_agents_rule() -> None:
    """`provider_output_with_tools` is `create_agent`'s private check: if a release moves it,
    this fails instead of every structured run choosing the wrong strategy."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from graph._compat import provider_output_with_tools

    class Named(FakeListChatModel):
        model_name: str = ""

    def model(name: str) -> Named:
        made = Named(responses=["x"], model_name=name)
        made.profile = {"structured_output": True, "tool_calling": True}
        return made

    assert provider_output_with_tools(model("gpt-4o-mini"), ["a tool"]) is True
    assert provider_output_with_tools(model("gemini-2.5-flash"), []) is True
    assert provider_output_with_tools(model("gemini-2.5-flash"), ["a tool"]) is False
    assert provider_output_with_tools(model("gemini-3-pro"), ["a tool"]) is True


def test_a_resume_by_ids_is_seen_by_the_task_and_its_first_answer_reaches_later_questions() -> None:
    """`resume_keys` reads the ids a resume answers from the task's config; LangGraph hands a
    value keyed by a task's first interrupt to its next unanswered one (what the approval check
    guards against, `graph.middleware.approvals.answers_it`)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command, interrupt

    from graph._compat import resume_keys

    seen: list[Any] = []

    class Asked(TypedDict):
        answers: list

    def ask_twice(state: Asked, config: RunnableConfig) -> dict:
        seen.append(resume_keys(config))
        return {"answers": [interrupt("first"), interrupt("second")]}

    builder = StateGraph(Asked)
    builder.add_node("ask", ask_twice)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    [first] = graph.invoke({"answers": []}, config)["__interrupt__"]
    [second] = graph.invoke(Command(resume={first.id: "yes"}), config)["__interrupt__"]
    assert second.id != first.id
    done = graph.invoke(Command(resume={first.id: "again"}), config)  # keyed to the first
    assert done["answers"] == ["yes", "again"]  # ...and it answered the second
    assert seen == [None, frozenset({first.id}), frozenset({first.id})]
