"""Approval pauses from code (`Command(resume=...)`), resume targets, and forks with edits."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
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


EDITED = {"type": "edit", "edited_action": {"name": "publish", "args": {"text": "edited"}}}


@pytest.mark.parametrize("protocol", ["native", "text"])
@pytest.mark.parametrize(
    ("decision", "expected", "observation"),
    [
        ({"type": "approve"}, ["hi"], "published hi"),
        (EDITED, ["edited"], "published edited"),
        (
            {"type": "reject", "message": "too loud"},
            [],
            "User rejected the tool call for `publish` with reason: too loud",
        ),
        ({"type": "respond", "message": "I published it myself"}, [], "I published it myself"),
    ],
    ids=["approve", "edit", "reject", "respond"],
)
def test_approval_pause_and_resume(protocol, decision, expected, observation) -> None:
    """LangChain's HumanInTheLoopMiddleware contract, under both protocols: the interrupt
    value, each decision, and the trace showing what ran (an edit's arguments, not the
    model's)."""
    text_step = 'Thought: publish it\nAction: publish\nAction Input: {"text": "hi"}'
    step = calls(tool_call("publish", {"text": "hi"})) if protocol == "native" else text_step
    final = "ok" if protocol == "native" else "Thought: done\nFinal Answer: ok"
    model = ScriptedChatModel([step, final])
    agent = build_graph(
        model=model,
        tools=[publish, lookup, guarded],
        protocol=protocol,
        checkpointer=InMemorySaver(),
        approve=["publish"],
    )
    paused = agent.invoke({"messages": [("user", "publish hi")]}, config("a"))
    assert len(paused["__interrupt__"]) == 1
    pause = paused["__interrupt__"][0].value
    assert pause["action_requests"] == [
        {
            "name": "publish",
            "args": {"text": "hi"},
            "description": pause["action_requests"][0]["description"],
        }
    ]
    assert pause["review_configs"] == [
        {"action_name": "publish", "allowed_decisions": ["approve", "edit", "reject", "respond"]}
    ]
    assert "action_request" not in pause  # no Agent Inbox fields: the current UI reads these
    assert published == []
    assert agent.get_state(config("a")).next == ("review",)
    done = agent.invoke(Command(resume={"decisions": [decision]}), config("a"))
    assert done["status"] == "answered"
    assert published == expected
    assert done["steps"][0]["observation"].endswith(observation)
    if expected:  # the trace and the stored step show the arguments that ran
        assert done["steps"][0]["tool_input"] == {"text": expected[0]}
        [ran] = [m for m in done["messages"] if isinstance(m, AIMessage) and m.tool_calls]
        assert ran.tool_calls[0]["args"] == {"text": expected[0]}
    if decision["type"] == "edit":  # the model is told the call was edited
        assert "Executed instead: publish" in done["steps"][0]["observation"]
        if protocol == "text":  # the transcript renders the call that ran
            sent = model.requests[-1].messages
            assert any('"edited"' in m.text and "Action:" in m.text for m in sent)


@pytest.mark.parametrize(
    ("resume", "why"),
    [
        ("approve", "was not run: the approval reply was not"),
        ({"decisions": [{"type": "maybe"}]}, "was not one of approve, edit"),
        (
            {"decisions": [{"type": "edit", "edited_action": {"name": "lookup", "args": {}}}]},
            "not the tool",
        ),
        (
            {"decisions": [{"type": "edit", "edited_action": {"name": "publish", "args": 5}}]},
            "JSON",
        ),
        ({"decisions": [{"type": "edit", "edited_action": "publish"}]}, "not run"),
    ],
    ids=["bare-word", "unknown-type", "edit-renames-tool", "edit-args-number", "edit-no-object"],
)
def test_unusable_decisions_run_nothing_and_say_why(resume, why: str) -> None:
    _, agent = agent_with([calls(tool_call("publish", {"text": "hi"})), "ok"], approve=["publish"])
    agent.invoke({"messages": [("user", "publish hi")]}, config("bad"))
    done = agent.invoke(Command(resume=resume), config("bad"))
    assert published == []
    assert done["status"] == "answered"
    step = done["steps"][0]
    assert step["is_error"] and why in step["observation"]
    assert step["observation"].count(". ") == 0  # one sentence
    assert agent.get_state(config("bad")).values["status"] == "answered"  # the thread is usable


def test_tool_metadata_asks_for_approval_and_others_run() -> None:
    script = [calls(tool_call("guarded", {"term": "x"}), tool_call("lookup", {"term": "y"})), "ok"]
    _, agent = agent_with(script)
    paused = agent.invoke({"messages": [("user", "go")]}, config("meta"))
    [pause] = paused["__interrupt__"]
    assert [r["name"] for r in pause.value["action_requests"]] == ["guarded"]
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config("meta"))
    assert [s["observation"] for s in done["steps"][:2]] == ["found x", "found y"]


def test_parallel_approvals_are_one_interrupt_answered_in_order() -> None:
    script = [
        calls(tool_call("publish", {"text": "one"}), tool_call("publish", {"text": "two"})),
        "ok",
    ]
    _, agent = agent_with(script, approve=["publish"])
    paused = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config("par")))
    [pause] = paused["__interrupt__"]
    assert [r["args"]["text"] for r in pause.value["action_requests"]] == ["one", "two"]
    decisions = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "not two"}]}
    done = asyncio.run(agent.ainvoke(Command(resume=decisions), config("par")))
    assert published == ["one"]
    assert done["steps"][1]["observation"].endswith("with reason: not two")


@pytest.mark.parametrize(
    "verdict",
    ["approve", {"decisions": [{"type": "approve"}]}, {"decisions": [{"type": "approve"}] * 3}],
    ids=["bare-verdict", "too-few", "too-many"],
)
def test_ambiguous_replies_to_several_calls_run_none(verdict) -> None:
    script = [
        calls(tool_call("publish", {"text": "one"}), tool_call("publish", {"text": "two"})),
        "ok",
    ]
    _, agent = agent_with(script, approve=["publish"])
    agent.invoke({"messages": [("user", "go")]}, config("amb"))
    done = agent.invoke(Command(resume=verdict), config("amb"))
    assert published == []
    assert done["status"] == "answered"
    for step in done["steps"][:2]:
        assert step["is_error"] and "was not run" in step["observation"]


def test_a_new_message_during_a_pause_never_runs_the_call() -> None:
    script = [calls(tool_call("publish", {"text": "x"}, id="p1")), "fine, not published"]
    model, agent = agent_with(script, approve=["publish"])
    agent.invoke({"messages": [("user", "publish x")]}, config("new"))
    handled = {"type": "tool", "tool_call_id": "p1", "content": "Successfully handled tool call."}
    done = agent.invoke({"messages": [handled, ("user", "never mind")]}, config("new"))
    assert published == []
    assert done["status"] == "answered" and done["answer"] == "fine, not published"
    told = [m for m in model.requests[-1].messages if getattr(m, "tool_call_id", None) == "p1"]
    assert len(told) == 1 and "was not run" in told[0].content
    assert all(m.type in ("system", "human", "ai", "tool") for m in model.requests[-1].messages)


@pytest.mark.parametrize("stand_in", [True, False], ids=["client stand-in", "no stand-in"])
def test_the_not_run_answer_is_stored_right_after_its_call(stand_in: bool) -> None:
    """Whatever the client sent after a paused call, the thread it reads back has the call's
    answer right after the call, as chat APIs take a conversation, and every earlier id kept
    (a stand-in's answer takes its place; else the conversation is written once in order)."""
    script = [calls(tool_call("publish", {"text": "x"}, id="p1")), "fine, not published"]
    _, agent = agent_with(script, approve=["publish"])
    agent.invoke({"messages": [("user", "publish x")]}, config("order"))
    before = [m.id for m in agent.get_state(config("order")).values["messages"]]
    handled = {"type": "tool", "tool_call_id": "p1", "content": "Successfully handled tool call."}
    sent = [handled, ("user", "never mind")] if stand_in else [("user", "never mind")]
    agent.invoke({"messages": sent}, config("order"))
    stored = agent.get_state(config("order")).values["messages"]
    assert [m.type for m in stored] == ["human", "ai", "tool", "human", "ai"]
    assert "was not run" in stored[2].content and stored[2].tool_call_id == "p1"
    assert [m.id for m in stored[:2]] == before
    assert stored[3].content == "never mind"


def test_resume_after_crash_targets_the_latest_checkpoint() -> None:
    _, agent = agent_with([calls(tool_call("publish", {"text": "x"})), "ok"], approve=["publish"])
    agent.invoke({"messages": [("user", "go")]}, config("r"))
    assert resume_config(agent, config("r")) == config("r")  # paused: continue at the head
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config("r"))
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
        edited_update({"messages": [AIMessage(content="an answer")]}, {"x": 1})
    step = AIMessage(content="", tool_calls=[{"id": "a", "name": "n", "args": {}}])
    with pytest.raises(ValueError, match="out of range"):
        edited_update({"messages": [step]}, {"x": 1}, index=3)
