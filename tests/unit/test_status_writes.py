"""`status` is written where it changes: when a run ends, and when a later run starts over the
last one's status. A thread's first run reads as `running` from its bookkeeping."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from graph.persistence.resume import resume_from
from graph.state import run_status
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call


@tool
def pay(to: str) -> str:
    """Pay someone."""
    return f"paid {to}"


def status_writes(saver: InMemorySaver, thread: str) -> list[Any]:
    return [
        saver.serde.loads_typed(write[2])
        for (thread_id, _, _), writes in sorted(saver.writes.items())
        if thread_id == thread
        for write in writes.values()
        if write[1] == "status"
    ]


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_a_first_run_writes_its_status_once_when_it_ends_and_reads_as_running_before() -> None:
    saver = InMemorySaver()
    script = [calls(tool_call("pay", {"to": "ann"})), "paid", calls(tool_call("pay", {"to": "bo"}))]
    agent = build_graph(
        model=ScriptedChatModel([*script, "paid too"]),
        tools=[pay],
        checkpointer=saver,
        approve=["pay"],
    )
    paused = agent.invoke({"messages": [("user", "pay ann")]}, cfg("t"))
    assert paused["__interrupt__"]
    snapshot = agent.get_state(cfg("t"))
    assert snapshot.values.get("status") is None
    assert run_status(snapshot.values) == "running"
    assert resume_from(snapshot, []) is not None
    assert status_writes(saver, "t") == []
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("t"))
    assert done["status"] == "answered"
    assert status_writes(saver, "t") == ["answered"]
    # a later run starts over the last status, and reads as running while it is paused
    agent.invoke({"messages": [("user", "pay bo")]}, cfg("t"))
    values = agent.get_state(cfg("t")).values
    assert values["status"] == "running" and run_status(values) == "running"
    assert status_writes(saver, "t") == ["answered", "running"]


def test_a_thread_with_no_run_has_no_status() -> None:
    assert run_status({}) is None
    assert run_status({"messages": []}) is None
    assert run_status({"status": "answered", "run": {"question_id": "q"}}) == "answered"


@pytest.mark.parametrize(
    ("update", "refusal"),
    [
        ({"status": "weird"}, "'status' must be one of"),
        ({"answer": 42}, "'answer' and 'error' must be text or null"),
        ({"error": ["x"]}, "'answer' and 'error' must be text or null"),
        ({"approvals": ["x"]}, "'approvals' must map call ids to seals"),
    ],
)
def test_the_first_write_of_a_field_is_checked_too(update: dict[str, Any], refusal: str) -> None:
    """A run paused for approval has written none of these yet: the first value is checked
    like any later one (a reducer channel takes its first value unchecked; these fields are
    `Checked` channels), and nothing is stored."""
    saver = InMemorySaver()
    agent = build_graph(
        model=ScriptedChatModel([calls(tool_call("pay", {"to": "ann"})), "paid"]),
        tools=[pay],
        checkpointer=saver,
        approve=["pay"],
    )
    assert agent.invoke({"messages": [("user", "pay ann")]}, cfg("t"))["__interrupt__"]
    before = agent.get_state(cfg("t"))
    assert not {"status", "answer", "error"} & set(before.values)
    with pytest.raises(ValueError, match=refusal):
        agent.update_state(cfg("t"), update)
    assert agent.get_state(cfg("t")).values == before.values
