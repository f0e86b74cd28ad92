"""A HumanMessage a middleware hook adds mid-run is a message, not a new question.

In `create_agent` a hook's reminder ("be brief") or retry prompt ("use other numbers") is just
written into the conversation. The agent starts a new run at a person's message (its step count,
its trace and its answers for calls left pending all reset), so a hook's message read as the
person's used to reset the run at every step: `max_steps` never held and a pending call was
answered "not run". The person's own next question must still start a new run.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import after_model, before_model
from langchain_core.messages import HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, action, answer

PROTOCOLS = ["native", "text"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@before_model
def remind(state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
    if isinstance(state["messages"][-1], ToolMessage):
        return {"messages": [HumanMessage("Reminder: be brief.")]}
    return None


def looping(protocol: str, steps: int = 8) -> ScriptedChatModel:
    calls = [action(protocol, "add", {"a": i, "b": i}) for i in range(steps)]
    return ScriptedChatModel([*calls, answer(protocol, "done")])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_hooks_reminder_does_not_restart_the_step_count(protocol: str) -> None:
    model = looping(protocol)
    agent = build_graph(model, [add], protocol=protocol, max_steps=3, middleware=[remind])
    out = agent.invoke({"messages": [("user", "keep adding")]})
    assert out["status"] == "max_steps"
    assert len(model.requests) == 3
    assert "after 3 steps" in out["answer"]
    assert sum(1 for s in out["steps"] if s["kind"] == "action") == 3
    reminders = [x for x in out["messages"] if x.text == "Reminder: be brief."]
    # after each of the 3 results (the hook runs before the step the limit then ends)
    assert len(reminders) == 3


def retrying(message: bool) -> Any:
    """An after_model hook that sends the first step back to the model (once), with a
    message of its own or without."""
    asked: list[bool] = []

    @after_model(can_jump_to=["model"])
    def try_again(state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        if asked:
            return None
        asked.append(True)
        said = [HumanMessage("Use other numbers.")] if message else []
        return {"jump_to": "model", "messages": said}

    return try_again


def two_steps(protocol: str = "native") -> ScriptedChatModel:
    first, second = ({"a": 1, "b": 2}, {"a": 3, "b": 4})
    return ScriptedChatModel(
        [action(protocol, "add", first), action(protocol, "add", second), answer(protocol, "done")]
    )


def test_a_retry_prompt_is_written_as_create_agent_writes_it_with_the_call_answered() -> None:
    """The same conversation as create_agent's, plus the answer for the call that was sent
    back unrun, right after its step: a chat API refuses a call with no result."""
    question = {"messages": [("user", "add something")]}
    theirs = create_agent(two_steps(), [add], middleware=[retrying(True)]).invoke(question)
    ours = build_graph(two_steps(), [add], middleware=[retrying(True)]).invoke(question)

    def shape(messages: list[Any]) -> list[tuple[str, str]]:
        return [(x.type, x.text) for x in messages]

    expected = shape(theirs["messages"])
    unrun = shape(ours["messages"])[2]
    assert unrun[0] == "tool" and "a middleware sent its step back to the model" in unrun[1]
    assert shape(ours["messages"]) == [*expected[:2], unrun, *expected[2:]]
    assert ours["status"] == "answered"


@pytest.mark.parametrize("message", [True, False], ids=["with-message", "bare-jump"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_call_sent_to_the_model_again_has_its_result(protocol: str, message: bool) -> None:
    model = two_steps(protocol)
    agent = build_graph(model, [add], protocol=protocol, middleware=[retrying(message)])
    out = agent.invoke({"messages": [("user", "add something")]})
    assert out["status"] == "answered" and len(model.requests) == 3
    if protocol == "native":  # the text protocol sends a transcript, not calls
        sent = model.requests[1].messages
        calls = [c["id"] for x in sent if x.type == "ai" for c in x.tool_calls]
        results = [x.tool_call_id for x in sent if x.type == "tool"]
        assert calls and calls == results
    assert [s["kind"] for s in out["steps"]].count("action") == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_persons_next_question_still_starts_a_new_run(protocol: str) -> None:
    model = ScriptedChatModel(
        [action(protocol, "add", {"a": 1, "b": 1}), answer(protocol, "two")] * 2
    )
    agent = build_graph(
        model, [add], protocol=protocol, max_steps=2, middleware=[remind],
        checkpointer=InMemorySaver(),
    )  # fmt: skip
    config = {"configurable": {"thread_id": protocol}}
    for question in ("one plus one?", "and again?"):
        out = agent.invoke({"messages": [("user", question)]}, config)
        assert (out["status"], out["answer"]) == ("answered", "two")  # 2 steps each: a new run


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_hook_that_rewrites_the_conversation_keeps_the_persons_question(protocol: str) -> None:
    """A hook writing the conversation anew re-sends the person's question under its own id:
    it stays the person's, so the run counts from it and does not restart."""

    @before_model
    def rewrite(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *state["messages"]]}

    model = looping(protocol)
    agent = build_graph(model, [add], protocol=protocol, max_steps=2, middleware=[rewrite])
    out = agent.invoke({"messages": [("user", "keep adding")]})
    assert out["status"] == "max_steps" and len(model.requests) == 2
    question = out["messages"][0]
    assert question.text == "keep adding" and not question.response_metadata
