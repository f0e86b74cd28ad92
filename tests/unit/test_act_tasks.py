"""How a step's calls reach `act`: a step of one call by an edge (no task payload is stored), a
step of several by one task per call, and an edge to a step of several runs each of them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from graph import messages as m
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call


@tool
def echo(text: str) -> str:
    """Repeat the text back."""
    return f"echo: {text}"


def agent_for(script: list, protocol: str = "native") -> tuple[Any, InMemorySaver]:
    saver = InMemorySaver()
    agent = build_graph(
        model=ScriptedChatModel(script), tools=[echo], protocol=protocol, checkpointer=saver
    )
    return agent, saver


def task_writes(saver: InMemorySaver, thread: str) -> int:
    """Task payloads (`Send`s) the thread stored."""
    return sum(
        write[1] == "__pregel_tasks"
        for (thread_id, _, _), writes in saver.writes.items()
        if thread_id == thread
        for write in writes.values()
    )


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("protocol", ["native", "text"])
def test_a_step_of_one_call_reaches_act_by_an_edge(protocol: str, mode: str) -> None:
    if protocol == "native":
        script = [calls(tool_call("echo", {"text": f"t{i}"})) for i in range(3)] + ["done"]
    else:
        step = 'Thought: again\nAction: echo\nAction Input: {{"text": "t{}"}}'
        script = [step.format(i) for i in range(3)] + ["Thought: ok\nFinal Answer: done"]
    agent, conn = agent_for(script, protocol)
    question = {"messages": [("user", "echo three times")]}
    if mode == "async":
        out = asyncio.run(agent.ainvoke(question, cfg("one")))
    else:
        out = agent.invoke(question, cfg("one"))
    assert out["status"] == "answered"
    assert [s["observation"] for s in out["steps"][:3]] == ["echo: t0", "echo: t1", "echo: t2"]
    assert task_writes(conn, "one") == 0


def test_a_step_of_several_calls_sends_a_task_per_call() -> None:
    step = calls(tool_call("echo", {"text": "a"}), tool_call("echo", {"text": "b"}))
    agent, conn = agent_for([step, "done"])
    out = agent.invoke({"messages": [("user", "echo twice")]}, cfg("two"))
    assert [s["observation"] for s in out["steps"][:2]] == ["echo: a", "echo: b"]
    assert task_writes(conn, "two") == 2


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_edge_to_a_step_of_several_calls_runs_each(mode: str) -> None:
    """`Command(goto="act")` to a run paused before act sends one task per call: each runs
    once and one answer follows. (A thread with no run under way keeps its calls for the next
    turn: tests/security/test_approval_once.py.)"""
    step = AIMessage(
        "",
        tool_calls=[tool_call("echo", {"text": "x"}, id="x"), tool_call("echo", {"text": "y"})],
    )
    agent = build_graph(
        model=ScriptedChatModel([step, "done"]),
        tools=[echo],
        checkpointer=InMemorySaver(),
        interrupt_before=["act"],
    )
    agent.invoke({"messages": [("user", "go")]}, cfg("goto"))

    def run(payload: Any) -> None:
        if mode == "async":
            asyncio.run(agent.ainvoke(payload, cfg("goto")))
        else:
            agent.invoke(payload, cfg("goto"))

    run(Command(goto="act"))
    while agent.get_state(cfg("goto")).next:
        run(None)
    messages = agent.get_state(cfg("goto")).values["messages"]
    observed = sorted(x.content for x in messages if isinstance(x, ToolMessage))
    assert observed == ["echo: x", "echo: y"]
    answers = [x.text for x in messages if isinstance(x, AIMessage) and not x.tool_calls]
    assert answers == ["done"]


def test_an_observation_is_marked_as_ours_by_its_id_and_an_older_flag_still_counts() -> None:
    agent, _ = agent_for([calls(tool_call("echo", {"text": "a"})), "done"])
    out = agent.invoke({"messages": [("user", "echo")]}, cfg("ids"))
    [observed] = [x for x in out["messages"] if isinstance(x, ToolMessage)]
    assert m.is_our_observation(observed)
    assert m.OURS not in observed.response_metadata  # the id says it: no flag stored
    older = ToolMessage("x", tool_call_id="c", id="abc", response_metadata={m.OURS: True})
    assert m.is_our_observation(older)  # threads written before keep their marks
    assert not m.is_our_observation(ToolMessage("Successfully handled.", tool_call_id="c"))
