"""Quoted answers: right after an observation, constrained decoding lets the Final Answer be only
the observation's first line that says something (the embedded model's policy, a setting)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from graph import build_graph
from graph.messages import agent_note
from graph.protocols.text.grammar import grammar_for
from graph.protocols.text.observations import quotable_lines
from graph.steps import latest_observations
from tests.support.plain_tools import echo, explode
from tests.support.scripted_model import ReplyingChatModel, action, answer

CLOCK = "2026-11-23 15:03:47 UTC (UTC, UTC+00:00), Monday"
FAILED = "Unknown time zone 'Atlantis'; use an IANA name."
PAGE = "Title: Example Domain\nURL: https://example.com/\n\nExample Domain\nThis domain is for use in examples."  # noqa: E501
HITS = "[1] notes.md — Notes\nThe agent ships six tools. It is fine.\n\n[2] b.md — B\nx"


@pytest.mark.parametrize(
    ("observation", "quote"),
    [
        ("391", "391"),
        (CLOCK, CLOCK),
        (HITS, "The agent ships six tools."),
        ("\n\n- first item\n- second", "first item"),
        ("**Bold** start\nplain line", "plain line"),
        ("---\n\nReal text.", "Real text."),
        (FAILED, FAILED),
        (PAGE, "This domain is for use in examples."),  # a header is not the content
        (
            "[1] U.S. Army (https://x.org/Army)\nThe army of the U.S. It is old.",
            "The army of the U.S.",
        ),
        ("[1] Nothing (https://x.org/N)\n(no summary)\n\n[2] B (u)\nReal.", "Real."),
        ("```bash\nls -l\n```", "ls -l"),
        ("word " * 200, ("word " * 200)[:300].strip()),  # bounded, one line
    ],
)
def test_the_quote_is_the_first_line_that_says_something(observation: str, quote: str) -> None:
    assert quotable_lines([observation]) == [quote]


def test_nothing_to_quote_gives_no_quote() -> None:
    assert quotable_lines(["", "---", "[1] a.md — A"]) == []
    assert quotable_lines(["same", "same"]) == ["same"]


def test_the_grammar_answers_only_with_a_quote() -> None:
    free = grammar_for([echo])
    quoted = grammar_for([echo], quotes=['The "six" tools.'])
    assert "answer-line" in free and "quote ::=" not in free
    assert 'quote ::= "The \\"six\\" tools."' in quoted
    assert 'final ::= "Final Answer: " quote' in quoted
    assert "action-echo" in quoted  # acting again stays possible
    assert grammar_for([], quotes=["a\nb"]).count("quote ::= ") == 1  # one line, never two


def test_latest_observations_are_the_results_not_reacted_to_yet() -> None:
    step = AIMessage("", tool_calls=[{"id": "1", "name": "echo", "args": {}}])
    result = ToolMessage("echo: hi", tool_call_id="1")
    failed = ToolMessage("disk on fire", tool_call_id="1", status="error")
    note = agent_note("You already called echo.", "loop")
    assert latest_observations([HumanMessage("q"), step, result]) == ["echo: hi"]
    assert latest_observations([step, result, note]) == ["echo: hi"]
    assert latest_observations([step, failed]) == ["disk on fire"]
    assert latest_observations([step, result, AIMessage("done")]) == []
    assert latest_observations([HumanMessage("q")]) == []
    # a pending call closed as "not run" after a new question: not this question's result
    assert latest_observations([HumanMessage("new question"), result]) == []
    assert latest_observations([AIMessage("", tool_calls=[]), result]) == []


class GrammarRecorder(ReplyingChatModel):
    """Replies from a script and keeps the grammar each request carried."""

    script: list[str]
    grammars: list[str | None] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "grammar-recorder"

    def _reply(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> ChatResult:
        body = kwargs.get("extra_body") or {}
        self.grammars.append(body.get("grammar"))
        reply = AIMessage(self.script[len(self.grammars) - 1])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _run(script: list[str], **settings: Any) -> tuple[GrammarRecorder, dict]:
    model = GrammarRecorder(script=script, grammars=[])
    agent = build_graph(
        model=model,
        tools=[echo, explode],
        protocol="text",
        constrained_decoding="on",
        **settings,
    )
    return model, agent.invoke({"messages": [("user", "say hi")]})


def test_after_an_observation_the_agent_asks_for_a_quote() -> None:
    script = [action("text", "echo", {"text": "hi"}), answer("text", "echo: hi")]
    model, out = _run(script, quoted_answers=True)
    assert out["answer"] == "echo: hi"
    first, second = model.grammars
    assert "quote ::=" not in first  # nothing observed yet: a free answer
    assert 'quote ::= "echo: hi"' in second


def test_a_failed_call_is_quoted_too() -> None:
    script = [action("text", "explode", {"text": "x"}), answer("text", "no")]
    model, _ = _run(script, quoted_answers=True)
    assert "quote ::= " in model.grammars[1] and "disk on fire" in model.grammars[1]


def test_quoted_answers_are_off_unless_asked_for() -> None:
    script = [action("text", "echo", {"text": "hi"}), answer("text", "hello")]
    model, out = _run(script)
    assert out["answer"] == "hello"
    assert all("quote ::=" not in g for g in model.grammars)


def test_when_only_the_quote_is_allowed_no_model_call_is_made() -> None:
    """No tools left (the answer budget is spent) and one quote: the grammar allows exactly one
    answer, so the agent writes it instead of asking the model to."""
    script = [action("text", "echo", {"text": "hi"})]
    model, out = _run(script, quoted_answers=True, answer_after=1)
    assert out["status"] == "answered" and out["answer"] == "echo: hi"
    assert len(model.grammars) == 1  # one call: the action
    final = out["messages"][-1]
    assert isinstance(final, AIMessage) and final.response_metadata["react_quoted"] is True
    assert [s["kind"] for s in out["steps"]] == ["action", "answer"]
    # the trace says who wrote each step: the answer was code's, not the model's
    assert [s["decided_by"] for s in out["steps"]] == ["model", "code"]


def test_a_failed_call_leaves_the_model_its_choice() -> None:
    script = [action("text", "explode", {"text": "x"}), answer("text", "no")]
    model, _ = _run(script, quoted_answers=True, answer_after=1)
    assert len(model.grammars) == 2 and "action-echo" in model.grammars[1]  # tools still offered
