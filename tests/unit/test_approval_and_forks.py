"""Approval pauses from code (`Command(resume=...)`), resume targets, and forks with edits."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from graph.tooling.approval import read_verdict
from graph.persistence.forks import edited_update, fork_with_input
from graph.persistence.resume import resume_config
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

published: list[str] = []


@tool
def publish(text: str) -> str:
    """Publish a text."""
    published.append(text)
    return f"published {text}"


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"found {term}"


guarded = lookup.model_copy(update={"name": "guarded", "metadata": {"requires_approval": True}})


@pytest.fixture(autouse=True)
def _reset() -> None:
    published.clear()


def agent_with(script: list, **kw):
    model = ScriptedChatModel(script)
    agent = build_graph(
        model=model,
        tools=[publish, lookup, guarded],
        protocol="native",
        checkpointer=InMemorySaver(),
        **kw,
    )
    return model, agent


def config(name: str) -> dict:
    return {"configurable": {"thread_id": name}}


@pytest.mark.parametrize(
    ("verdict", "expected", "observation"),
    [
        ("approve", ["hi"], "published hi"),
        ({"action": "edit", "input": {"text": "edited"}}, ["edited"], "published edited"),
        (
            {"action": "reject", "reason": "too loud"},
            [],
            "The user rejected the call to publish: too loud.",
        ),
        (
            "reject",
            [],
            "The user rejected the call to publish. Do not try it again; find another way.",
        ),
    ],
    ids=["approve", "edit", "reject-with-reason", "reject"],
)
def test_approval_pause_and_resume(verdict, expected: list[str], observation: str) -> None:
    _, agent = agent_with([calls(tool_call("publish", {"text": "hi"})), "ok"], approve=["publish"])
    paused = agent.invoke({"messages": [("user", "publish hi")]}, config("a"))
    pause = paused["__interrupt__"][0].value
    assert pause["kind"] == "approval" and pause["tool"] == "publish"
    assert pause["input"] == {"text": "hi"}
    assert published == []
    assert agent.get_state(config("a")).next == ("act",)
    done = agent.invoke(Command(resume=verdict), config("a"))
    assert done["status"] == "answered"
    assert published == expected
    assert done["steps"][0]["observation"] == observation
    if expected:
        assert done["steps"][0]["tool_input"] == {"text": expected[0]}


def test_tool_metadata_asks_for_approval_and_others_run() -> None:
    script = [calls(tool_call("guarded", {"term": "x"}), tool_call("lookup", {"term": "y"})), "ok"]
    _, agent = agent_with(script)
    paused = agent.invoke({"messages": [("user", "go")]}, config("meta"))
    assert [i.value["tool"] for i in paused["__interrupt__"]] == ["guarded"]
    done = agent.invoke(Command(resume=True), config("meta"))
    assert [s["observation"] for s in done["steps"][:2]] == ["found x", "found y"]


def test_parallel_approvals_are_answered_by_id() -> None:
    script = [
        calls(tool_call("publish", {"text": "one"}), tool_call("publish", {"text": "two"})),
        "ok",
    ]
    _, agent = agent_with(script, approve=["publish"])
    paused = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config("par")))
    pauses = {i.value["input"]["text"]: i.id for i in paused["__interrupt__"]}
    assert set(pauses) == {"one", "two"}
    verdicts = {pauses["one"]: "approve", pauses["two"]: "reject"}
    done = asyncio.run(agent.ainvoke(Command(resume=verdicts), config("par")))
    assert published == ["one"]
    assert done["steps"][1]["observation"].startswith("The user rejected the call to publish")


def test_unclear_verdicts_never_approve() -> None:
    assert read_verdict("yes").action == "approve"
    assert read_verdict(True).action == "approve"
    assert read_verdict({"action": "edit"}).action == "reject"  # edit without input
    assert read_verdict("maybe later").reason == "maybe later"
    assert read_verdict(42).action == "reject"
    assert read_verdict(None).action == "reject"


def test_resume_after_crash_targets_the_latest_checkpoint() -> None:
    _, agent = agent_with([calls(tool_call("publish", {"text": "x"})), "ok"], approve=["publish"])
    agent.invoke({"messages": [("user", "go")]}, config("r"))
    assert resume_config(agent, config("r")) == config("r")  # paused: continue at the head
    agent.invoke(Command(resume="approve"), config("r"))
    assert resume_config(agent, config("r")) is None  # answered: nothing to resume


def test_fork_with_an_edited_input_keeps_the_original() -> None:
    _, agent = agent_with([calls(tool_call("lookup", {"term": "old"}, id="c1")), "first", "second"])
    agent.invoke({"messages": [("user", "look")]}, config("f"))
    before_act = next(s for s in agent.get_state_history(config("f")) if s.next == ("act",))
    target = asyncio.run(fork_with_input(agent, before_act, {"term": "new"}))
    forked = agent.invoke(None, target)
    assert forked["answer"] == "second"
    assert forked["steps"][0]["observation"] == "found new"
    edited = [m for m in forked["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert edited[0].tool_calls[0]["args"] == {"term": "new"}
    history = list(agent.get_state_history(config("f")))
    answers = {s.values.get("answer") for s in history if s.values.get("status") == "answered"}
    assert answers == {"first", "second"}


def test_forking_where_no_call_is_pending_is_refused() -> None:
    with pytest.raises(ValueError, match="not before a tool call"):
        edited_update({"decision": "answer", "pending": []}, {"x": 1})
    with pytest.raises(ValueError, match="out of range"):
        edited_update(
            {"decision": "act", "pending": [{"id": "a", "name": "n", "args": {}}]},
            {"x": 1},
            index=3,
        )
