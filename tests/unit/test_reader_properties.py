"""Properties of the text-protocol reader, checked on generated replies.

1. No text makes it raise, with or without tools, and every result is well formed.
2. Any action written in our own prompt format (the transcript renders earlier tool calls as
   `Thought:` / `Action:` / `Action Input: <json>`) reads back to the same tool and input.
3. The shortcut for the prompt's own shape (`canonical`) reads every reply it takes exactly as
   the full reading does, and it takes the plain ones.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from graph.protocols.text.actions import FINAL_NAMES, NO_TOOL, key
from graph.protocols.text.canonical import canonical_action
from graph.protocols.text.prompts import text_transcript
from graph.protocols.text.reader import ReactStep, parse_react, read_in_full
from graph.protocols.text.toolset import Toolset

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

tool_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,30}", fullmatch=True).filter(
    lambda name: key(name) not in FINAL_NAMES and key(name) not in NO_TOOL
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(
    st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True), json_values, max_size=4
)
one_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
    max_size=80,
)
FRAGMENTS = [
    "Thought:", "Action:", "Action Input:", "Final Answer:", "Observation:", "Answer:", "AI:",
    "Tool:", "思考：", "行动：", "最终答案：", "```", "```json\n", "{", "}", "[", "]", '"', "'",
    '{"action": "search", "action_input": ', '{"name": "x", "arguments": {}}', "<think>",
    "</think>", "<tool>", "</tool>", "<tool_input>", "<final_answer>", "<|tool_call_begin|>",
    "**", "### ", "- ", "\n", "\n\n", " ", "None", "Search[", "search(", ")", "PAUSE", "1.",
]  # fmt: skip
react_like = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=40).map(
    "".join
)


def make_tool(name: str, properties: dict[str, Any]) -> StructuredTool:
    schema = {"type": "object", "properties": {p: {} for p in properties}, "required": []}
    return StructuredTool(name=name, description=name, args_schema=schema, func=lambda **_: "")


def assert_well_formed(step: object) -> None:
    assert isinstance(step, ReactStep)
    assert step.kind in ("action", "final", "error")
    if step.kind == "action":
        assert isinstance(step.tool, str) and step.tool.strip()
        assert isinstance(step.tool_input, dict | str)
        assert step.answer is None and step.error is None
    elif step.kind == "final":
        assert isinstance(step.answer, str) and step.answer.strip()
        assert step.tool is None and step.error is None
    else:
        assert isinstance(step.error, str) and step.error.strip()
        assert step.tool is None and step.answer is None


@SETTINGS
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    assert_well_formed(parse_react(text))
    assert_well_formed(parse_react(text, ["search", "calculator"]))


@SETTINGS
@given(react_like)
def test_react_like_text_never_raises(text: str) -> None:
    assert_well_formed(parse_react(text))
    assert_well_formed(parse_react(text, [make_tool("search", {"query": None})]))


def render(thought: str, name: str, args: dict[str, Any]) -> str:
    """An action as our prompt format writes it in the transcript."""
    call = {"name": name, "args": args, "id": "call_1", "type": "tool_call"}
    (message,) = text_transcript([AIMessage(content=thought, tool_calls=[call])])
    return message.text


@SETTINGS
@given(one_line, tool_names, arguments)
def test_own_format_reads_back(thought: str, name: str, args: dict[str, Any]) -> None:
    reply = render(thought, name, args)
    step = parse_react(reply)
    assert (step.kind, step.tool, step.tool_input) == ("action", name, args), reply
    with_tools = parse_react(reply, [make_tool(name, args), make_tool(name + "_other", {})])
    assert (with_tools.kind, with_tools.tool, with_tools.tool_input) == ("action", name, args)


# thoughts from any characters, plain words, and label and markup fragments
thoughts = (
    one_line
    | react_like.map(lambda text: text.replace("\n", " "))
    | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .,'!?_()-]{0,40}", fullmatch=True)
)
typed_tools = st.sampled_from(["integer", "number", "string", "boolean", "array", "object"])


@SETTINGS
@given(
    thought=thoughts,
    name=tool_names | st.sampled_from(["none", "Final_Answer", "search.call", "a"]),
    written=st.sampled_from(["same", "upper", "other"]),
    args=arguments | st.sampled_from([{"index": "7"}, {"index": 7.0}, {"Action": "x: y"}]),
    schema_type=typed_tools,
    required=st.booleans(),
    layout=st.sampled_from(
        [("", "\n", ""), ("", "\n", "\n\n "), ("  ", "\n\n", ""), ("", "\n", " x")]
    ),
    ascii_only=st.booleans(),
)
def test_shortcut_reads_as_the_full_reading(
    thought: str,
    name: str,
    written: str,
    args: dict[str, Any],
    schema_type: str,
    required: bool,
    layout: tuple[str, str, str],
    ascii_only: bool,
) -> None:
    properties = {p: {"type": schema_type} for p in [*args, "index"]}
    schema = {"type": "object", "properties": properties, "required": ["index"] if required else []}
    tool = StructuredTool(name=name, description="d", args_schema=schema, func=lambda **_: "")
    shown = {"same": name, "upper": name.upper(), "other": name + "x"}[written]
    lead, gap, tail = layout
    text = (
        f"{lead}Thought: {thought}{gap}Action: {shown}\n"
        f"Action Input: {json.dumps(args, ensure_ascii=ascii_only)}{tail}"
    )
    assert parse_react(text, [tool]) == read_in_full(text, [tool]), text


@SETTINGS
@given(
    thought=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .,'!?_()-]{0,40}", fullmatch=True),
    name=tool_names,
    args=arguments.filter(lambda args: "<" not in json.dumps(args)),  # `<` is read in full
)
def test_shortcut_takes_plain_replies(thought: str, name: str, args: dict[str, Any]) -> None:
    text = f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(args)}"
    taken = canonical_action(text, Toolset([make_tool(name, args)]))
    assert taken is not None and (taken.tool, taken.args) == (name, args), text
