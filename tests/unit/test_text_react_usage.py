"""`TextReAct` calls one chat model inside its own run: LangChain's usage counter must count
its tokens once (in that run, or, for a runnable around the model, in the child run), and the
graph's text steps (now made through `TextReAct`) keep what the reader reported: the thought
before an answer and the note on ignored actions."""

from __future__ import annotations

from langchain_core.callbacks import get_usage_metadata_callback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from graph import build_graph
from graph.messages import NOTE, THOUGHT
from graph.protocols.text.chat_model import TextReAct
from graph.protocols.text.replies import INNER_MODEL
from tests.support.scripted_model import ScriptedChatModel

USAGE = {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17}


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo: {text}"


def test_usage_is_counted_once() -> None:
    reply = AIMessage(
        "Thought: easy\nFinal Answer: 4",
        usage_metadata=USAGE,
        response_metadata={"model_name": "m-1"},
    )
    model = TextReAct(ScriptedChatModel([reply]))
    with get_usage_metadata_callback() as counter:
        out = model.invoke([HumanMessage("2 + 2?")])
    assert counter.usage_metadata == {"m-1": USAGE}
    assert out.usage_metadata == USAGE and out.response_metadata["model_name"] == "m-1"


def test_usage_is_counted_once_through_a_retry_around_the_model() -> None:
    """A runnable around the model (`with_retry`) is invoked as a child run, which counts the
    usage; TextReAct's reply then names the model under `INNER_MODEL`."""
    reply = AIMessage(
        "Thought: easy\nFinal Answer: 4",
        usage_metadata=USAGE,
        response_metadata={"model_name": "m-1"},
    )
    model = TextReAct(ScriptedChatModel([reply]).with_retry())
    with get_usage_metadata_callback() as counter:
        out = model.invoke([HumanMessage("2 + 2?")])
    assert counter.usage_metadata == {"m-1": USAGE}
    assert out.usage_metadata == USAGE and out.response_metadata[INNER_MODEL] == "m-1"


def test_the_graphs_text_steps_keep_the_readers_report() -> None:
    two = (
        'Thought: twice\nAction: echo\nAction Input: {"text": "a"}\n'
        'Action: echo\nAction Input: {"text": "b"}'
    )
    model = ScriptedChatModel([two, "Thought: done now\nFinal Answer: ok"])
    out = build_graph(model=model, tools=[echo], protocol="text").invoke(
        {"messages": [("user", "hi")]}
    )
    assert out["answer"] == "ok"
    step, answer = (m for m in out["messages"] if isinstance(m, AIMessage))
    assert step.response_metadata.get(NOTE) and answer.response_metadata[THOUGHT] == "done now"
    assert [c["args"] for c in step.tool_calls] == [{"text": "a"}]
