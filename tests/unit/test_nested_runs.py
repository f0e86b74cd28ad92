"""The agent inside other LangGraph code: a parent graph's node, a subagent a parent's tool
calls, and a thread bound once with `with_config`.

LangGraph hands a parent's runtime context down to a graph run inside it. That context is the
parent's, not addressed to the agent: its run settings apply, and its other keys are not
refused as unknown settings (a direct caller's unknown key still is). A thread bound with
`with_config` is the thread the pre-run checks read, as LangGraph reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.store.memory import InMemoryStore

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call


@dataclass
class Tenant:
    user_id: str


class Parent(TypedDict):
    messages: Annotated[list, add_messages]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def agent(**kw: Any) -> Any:
    script = [calls(tool_call("add", {"a": 1, "b": 2}, id="c1")), "done"]
    return build_graph(ScriptedChatModel(script), [add], **kw)


QUESTION = {"messages": [HumanMessage("add one and two")]}


@pytest.mark.parametrize("given", [Tenant("u1"), {"user_id": "u1"}], ids=["dataclass", "dict"])
def test_a_node_of_a_parent_with_its_own_context_runs(given: Any) -> None:
    builder = StateGraph(Parent, context_schema=Tenant)
    builder.add_node("agent", agent())
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    out = builder.compile().invoke(QUESTION, context=given)
    assert [x.text for x in out["messages"][-2:]] == ["3", "done"]


def test_a_parents_run_setting_reaches_the_agent_below_it() -> None:
    """A key the parent's context shares with the run settings is one: a parent that caps the
    steps of everything below it caps the agent's."""
    script = [calls(tool_call("add", {"a": i, "b": 1})) for i in range(5)]
    inner = build_graph(ScriptedChatModel(script), [add])
    builder = StateGraph(Parent)
    builder.add_node("agent", inner)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    out = builder.compile().invoke(QUESTION, context={"user_id": "u1", "max_steps": 2})
    assert "after 2 steps" in out["messages"][-1].text


def test_a_subagent_called_by_a_parents_tool_runs() -> None:
    inner = agent()

    @tool
    def delegate(task: str) -> str:
        """Hand a task to the arithmetic agent."""
        return inner.invoke({"messages": [("user", task)]})["messages"][-1].text

    outer_script = [calls(tool_call("delegate", {"task": "add one and two"})), "ok"]
    outer = create_agent(ScriptedChatModel(outer_script), [delegate], context_schema=Tenant)
    out = outer.invoke(QUESTION, context=Tenant("u1"))
    results = [x.text for x in out["messages"] if isinstance(x, ToolMessage)]
    assert results == ["done"]


def test_a_direct_callers_unknown_setting_is_still_refused() -> None:
    out = agent().invoke(QUESTION, context={"user_id": "u1"})
    assert out["status"] == "error" and "unknown setting(s) user_id" in out["error"]


@pytest.mark.parametrize("mode", ["per_call", "batched"])
def test_a_thread_bound_with_with_config_keeps_the_results_of_calls_that_ran(mode: str) -> None:
    """A per_call pause after one call ran, then a new message instead of a decision: the
    call that ran keeps its result whether the thread came with each call or was bound once
    (the bound thread once went unseen by the pre-run checks: "cut short")."""
    step = calls(
        tool_call("add", {"a": 1, "b": 2}, id="c1"), tool_call("mul", {"a": 3, "b": 4}, id="c2")
    )
    results = {}
    for bound in (False, True):
        graph = build_graph(
            ScriptedChatModel([step, AIMessage("ok"), AIMessage("second")]),
            [add, mul],
            checkpointer=InMemorySaver(),
            store=InMemoryStore(),
            approve=["mul"],
            approval_mode=mode,
        )
        thread = {"configurable": {"thread_id": f"{mode}-{bound}"}}
        runner = graph.with_config(thread) if bound else graph
        called = {} if bound else thread
        assert runner.invoke(QUESTION, called)["__interrupt__"]
        out = runner.invoke({"messages": [HumanMessage("never mind")]}, called)
        tools = [x for x in out["messages"] if x.type == "tool"]
        results[bound] = [(x.tool_call_id, x.text[:24]) for x in tools]
    assert results[True] == results[False]
    if mode == "per_call":
        assert results[True][0] == ("c1", "3")


def test_a_continue_after_a_failed_model_call_says_how_to_run_it_again() -> None:
    """`create_agent` raises the model's error and `invoke(None)` retries; here the run ends
    with status error, and the refusal of a bare continue names the route that retries."""
    from graph.continuing import NothingToResume
    from graph.persistence.resume import resume_config

    script = [calls(tool_call("add", {"a": 1, "b": 2})), ConnectionError("endpoint down"), "done"]
    graph = build_graph(ScriptedChatModel(script), [add], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "failed"}}
    assert graph.invoke(QUESTION, thread)["status"] == "error"
    with pytest.raises(NothingToResume, match=r"resume_config\(agent, config\)"):
        graph.invoke(None, thread)
    out = graph.invoke(None, resume_config(graph, thread))
    assert (out["status"], out["answer"]) == ("answered", "done")
    assert [x.text for x in out["messages"] if x.type == "tool"] == ["3"]  # not run again
