"""What goes back to a text-protocol model for an earlier step is the step as the reader took
it, never text the reader cut: an invented observation, with or without its colon, a second
action, an answer written before the tool ran."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from graph import build_graph
from graph.protocols.text.prompts import text_transcript
from tests.support.scripted_model import ScriptedChatModel


@tool
def double(number: int) -> int:
    """Double a number."""
    return number * 2


STEP = 'Thought: double it\nAction: double\nAction Input: {"number": 2}'


@pytest.mark.parametrize(
    "tail",
    [
        "\nObservation\nThe result is 99.",
        "\nobservation  \n99",
        "\nObservation: 99\nFinal Answer: 99",
        '\nAction: double\nAction Input: {"number": 99}',
        "\nFinal Answer: 99",
    ],
    ids=["bare-observation", "lowercase-spaced", "with-colon", "second-action", "early-answer"],
)
def test_the_step_sent_back_is_the_step_as_read(tail: str) -> None:
    model = ScriptedChatModel([STEP + tail, "Thought: done\nFinal Answer: 4"])
    agent = build_graph(model=model, tools=[double], protocol="text")
    out = agent.invoke({"messages": [("user", "double 2")]})
    assert out["answer"] == "4"
    assert out["steps"][0]["observation"].startswith("4")  # (a note for a second action)
    sent = [m.text for m in model.requests[1].messages if m.type == "ai"]
    assert sent == [STEP]
    assert "99" not in "\n".join(m.text for m in model.requests[1].messages)


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        (STEP, False),  # renders back exactly: stored once, as the step
        ("Thought: double it\nAction: double\nAction Input: number=2", True),
        ('thought: double it\naction: double\naction input: {"number": 2}', True),
    ],
    ids=["canonical", "key-value-input", "lowercase-labels"],
)
def test_the_model_text_is_kept_only_where_the_step_renders_differently(
    reply: str, kept: bool
) -> None:
    model = ScriptedChatModel([reply, "Thought: done\nFinal Answer: 4"])
    agent = build_graph(model=model, tools=[double], protocol="text")
    out = agent.invoke({"messages": [("user", "double 2")]})
    step = next(m for m in out["messages"] if m.type == "ai" and m.tool_calls)
    assert ("react_text" in step.response_metadata) is kept
    sent = [m.text for m in model.requests[1].messages if m.type == "ai"]
    assert sent == [reply]  # the step as the model wrote it, either way


def test_a_step_edited_in_place_is_rendered_anew() -> None:
    """The transcript keeps each step's rendering while the step lives; an edit in place (a
    person editing a call) is sent as edited, never as first rendered."""
    call = {"name": "double", "args": {"number": 2}, "id": "call_1", "type": "tool_call"}
    step = AIMessage(content="double it", tool_calls=[call])
    rendered = 'Thought: {}\nAction: double\nAction Input: {{"number": 2}}'
    assert text_transcript([step])[0].text == rendered.format("double it")
    step.content = "double it again"
    assert text_transcript([step])[0].text == rendered.format("double it again")
