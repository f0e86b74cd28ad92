"""The step as read (issue 23, "Text history"): what a later request shows the model for an
earlier reply is the text the reader used for its step, never text it cut.

A reply that goes on after its action (an invented `Observation`, with or without its colon,
in any case or spacing, an invented result, a second action, an answer written before the tool
ran) is cut there; re-reading the step as read gives the same step.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.tools import StructuredTool

from graph.protocols.text.reader import clean_reply, parse_react


def _search(query: str) -> str:
    """Search the web."""
    return query


SEARCH = StructuredTool.from_function(_search, name="search")
TOOLS = [SEARCH]

STEP = 'Thought: I should look it up.\nAction: search\nAction Input: {"query": "weather in Paris"}'
INVENTED = [
    "\nObservation",
    "\nObservation\n",
    "\nObservation\nIt is sunny and 21 °C.",
    "\nObservation\nIt is sunny.\nThought: I know it now.\nFinal Answer: sunny",
    "\nobservation\nsunny",
    "\nOBSERVATION   \nsunny",
    "\n  Observation  \n  sunny",
    "\nObservation 1\nsunny",
    "\n**Observation**\nsunny",
    "\n## Observation\nsunny",
    "\nObservation: sunny",
    "\nObservation : sunny",
    "\n observation：sunny",
    "\nObservation - sunny",
    "\nObservation sunny and warm",  # no label at all: cut where the JSON input ends
    "\nResult: it is sunny",
    "\nThe search says it is sunny.",
    '\nAction: search\nAction Input: {"query": "second"}',
    "\nFinal Answer: it is sunny",
    "\n\n\nObservation\n\n",
]


@pytest.mark.parametrize("tail", INVENTED)
def test_what_follows_the_action_input_is_not_part_of_the_step(tail: str) -> None:
    step = parse_react(STEP + tail, TOOLS)
    assert (step.kind, step.tool, step.tool_input) == (
        "action",
        "search",
        {"query": "weather in Paris"},
    )
    assert step.read == STEP
    assert clean_reply(STEP + tail, TOOLS) == STEP
    assert clean_reply(STEP + tail) == STEP  # the same without the tools


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        (
            "Action: search\nAction Input: Paris weather\nObservation\nsunny",
            "Action: search\nAction Input: Paris weather",
        ),
        ('Action: search(query="x")\nObservation\nsunny', 'Action: search(query="x")'),
        ('Action: search(query="x")\nIt is sunny.', 'Action: search(query="x")'),
        (
            '{"action": "search", "action_input": {"query": "x"}}\nObservation\nsunny',
            '{"action": "search", "action_input": {"query": "x"}}',
        ),
        (
            'I will search.\n{"name": "search", "arguments": {"query": "x"}} and it is sunny',
            'I will search.\n{"name": "search", "arguments": {"query": "x"}}',
        ),
        ("Thought: done\nFinal Answer: 42\nObservation\nmore", "Thought: done\nFinal Answer: 42"),
        ("Final Answer: 42\nobservation: invented", "Final Answer: 42"),
        ("<think>hidden</think>\nFinal Answer: 42", "Final Answer: 42"),
        (
            "Observation: echoed\nThought: t\nFinal Answer: 42",
            "Observation: echoed\nThought: t\nFinal Answer: 42",
        ),
    ],
)
def test_the_step_as_read(reply: str, read: str) -> None:
    assert parse_react(reply, TOOLS).read == read


def test_an_unreadable_reply_is_kept_up_to_an_invented_observation() -> None:
    reply = "Thought: hmm\nAction Input: {}\nObservation\nmade up"
    step = parse_react(reply, TOOLS)
    assert step.kind == "error"
    assert step.read == "Thought: hmm\nAction Input: {}"


def test_a_reply_too_long_to_read_has_no_step_text() -> None:
    assert parse_react("Final Answer: " + "x" * 1_000_001).read == ""


_THOUGHTS = st.text(alphabet=st.sampled_from("abc xyz.,"), min_size=1, max_size=30).map(str.strip)
_QUERIES = st.text(alphabet=st.sampled_from("abcdef 123"), min_size=1, max_size=20).map(str.strip)


@settings(max_examples=150, deadline=None)
@given(
    _THOUGHTS.filter(bool),
    _QUERIES.filter(bool),
    st.sampled_from(INVENTED),
    st.sampled_from(["json", "call", "plain"]),
)
def test_reading_the_step_as_read_again_gives_the_same_step(
    thought: str, query: str, tail: str, shape: str
) -> None:
    action = {
        "json": f'Action: search\nAction Input: {{"query": "{query}"}}',
        "call": f'Action: search(query="{query}")',
        "plain": f"Action: search\nAction Input: {query}",
    }[shape]
    reply = f"Thought: {thought}\n{action}{tail}"
    step = parse_react(reply, TOOLS)
    assert step.kind == "action"
    again = parse_react(step.read, TOOLS)
    assert (again.kind, again.tool, again.tool_input, again.thought) == (
        step.kind,
        step.tool,
        step.tool_input,
        step.thought,
    )
    assert again.read == step.read
    if not (shape == "plain" and tail == "\nObservation sunny and warm"):
        # (that line, with no label shape, is part of a plain-text input: the tool gets it)
        assert "bserv" not in step.read.lower().replace(thought.lower(), "")
