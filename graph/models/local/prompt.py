"""The completion prompt: worked records, then the conversation, as one text.

    Question: What is 12 * 9?
    Tool: calculator
    Input: 12 * 9
    Result: 108
    Answer: 108

    ... more records (records.toml), a blank line between them ...

    Question: <the user's question>
    Tool: ...                       <- the model's choice (`constrain.choice_grammar`)

The record puts the choice first, as one word: which tool, or `none`. The model's most likely
word there, under a grammar that allows only the offered names, is the decision. The records
are always the same for the same tools, in the same order, so llama.cpp reuses its evaluation
of the prompt's beginning from one question to the next.

The conversation arrives as standard messages (AIMessage with `tool_calls`, ToolMessages; the
agent's corrections, ids starting `do-not-render-`, left out) or as older text-rendered steps
("Thought: ... Action: ...", "Observation: ..."); both render the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from graph.models.local.builtin_hints import hints_for
from graph.models.local.hints import Example, Step, ToolHints, tool_name
from graph.protocols.text.observations import observation_text

HIDDEN_PREFIX = "do-not-render-"
OBSERVATION = "Observation:"
TOOLS_HEADING = "You can use these tools:"  # where the text protocol's own system prompt begins


@dataclass
class _Step:
    tool: str
    tool_input: Any
    call_id: str | None = None
    observation: str | None = None
    failed: bool = False  # the tool raised: its observation is an error, no answer


@dataclass
class Turn:
    """One question of the conversation, the steps taken for it, and its answer if given."""

    question: str
    steps: list[_Step] = field(default_factory=list)
    answer: str | None = None


def custom_instructions(messages: Sequence[BaseMessage]) -> str:
    """The user's own part of the system prompt: what stands before the text protocol's tool
    list, unless it is the built-in default (a base model has no use for "You are a careful
    assistant"; an instruction like "Answer in French" is kept)."""
    from graph.protocols.text.prompts import DEFAULT_INSTRUCTIONS

    for message in messages:
        if isinstance(message, SystemMessage):
            text = message.text
            head = text.split(TOOLS_HEADING, 1)[0].strip() if TOOLS_HEADING in text else text
            if head and head != DEFAULT_INSTRUCTIONS.strip() and len(head) <= 1000:
                return head
    return ""


def conversation_turns(messages: Sequence[BaseMessage]) -> list[Turn]:
    """The conversation as question records (see the module docstring for the forms read)."""
    from graph.protocols.text.reader import parse_react

    turns: list[Turn] = []

    def current() -> Turn:
        if not turns:
            turns.append(Turn(question=""))
        return turns[-1]

    for message in messages:
        if isinstance(message, SystemMessage) or _hidden(message):
            continue
        if isinstance(message, ToolMessage):
            _observe(current(), message.text, message.tool_call_id, message.status == "error")
        elif isinstance(message, AIMessage):
            turn = current()
            if message.tool_calls:
                for call in message.tool_calls:
                    turn.steps.append(_Step(call["name"], call.get("args"), call.get("id")))
                continue
            step = parse_react(message.text)
            if step.kind == "action":
                turn.steps.append(_Step(step.tool or "", step.tool_input))
            elif step.kind == "final":
                turn.answer = step.answer or ""
            elif message.text.strip():  # a plain answer (e.g. from a native-protocol turn)
                turn.answer = message.text.strip()
        elif isinstance(message, HumanMessage):
            text = message.text.strip()
            if text.startswith(OBSERVATION) and turns:
                _observe(turns[-1], text[len(OBSERVATION) :].strip(), None)
            else:
                turns.append(Turn(question=text))
    return turns


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def render_input(tool_input: Any, hints: ToolHints) -> str:
    """A call's input as the record shows it: the bare value of a tool's one argument that the
    hints name, else JSON."""
    single = hints.single_argument
    if isinstance(tool_input, dict) and single and set(tool_input) == {single}:
        return one_line(tool_input[single])
    if isinstance(tool_input, str):
        return one_line(tool_input)
    return json.dumps(tool_input, ensure_ascii=False)


def render_record(
    question: str,
    steps: Sequence[Step | _Step],
    answer: str | None,
    hints: Mapping[str, ToolHints],
) -> str:
    """One question's record; an unfinished one ends after its last line."""
    lines = [f"Question: {one_line(question)}"]
    for step in steps:
        lines.append(f"Tool: {step.tool}")
        lines.append(f"Input: {render_input(step.tool_input, hints.get(step.tool, ToolHints()))}")
        lines.append(f"Result: {observation_text(step.observation)}")
    if answer is not None:
        if not steps:
            lines.append("Tool: none")
        lines.append(f"Answer: {one_line(answer)}")
    return "\n".join(lines)


def example_records(tools: Sequence[Any], direct: Sequence[Example]) -> list[tuple[Example, str]]:
    """(example, its tool) for every example of these tools whose calls they all offer, each
    tool's records (and the direct ones) spread evenly over the whole prompt: the last record of
    every tool stands among the last, so no tool's records all stand nearest the question."""
    names = {tool_name(t) for t in tools}
    queues: list[list[tuple[Example, str]]] = []
    for tool in tools:
        name = tool_name(tool)
        usable = [
            (e, name) for e in hints_for(tool).examples if {s.tool for s in e.steps(name)} <= names
        ]
        if usable:
            queues.append(usable)
    queues.append([(e, "") for e in direct])
    placed = [
        ((index + 1) / len(queue), order, record)
        for order, queue in enumerate(queues)
        for index, record in enumerate(queue)
    ]
    return [record for _, _, record in sorted(placed, key=lambda item: item[:2])]


def render_prompt(
    messages: Sequence[BaseMessage],
    tools: Sequence[Any],
    direct: Sequence[Example] = (),
    *,
    examples: bool = True,
) -> str:
    """The whole prompt up to the current question's last line (with its newline)."""
    hints = {tool_name(t): hints_for(t) for t in tools}
    blocks = [fixed_part(messages, tools, direct, examples=examples, hints=hints)]
    for turn in conversation_turns(messages):
        steps = [s for s in turn.steps if s.observation is not None]
        blocks.append(render_record(turn.question, steps, turn.answer, hints))
    return "\n\n".join(b for b in blocks if b) + "\n"


def fixed_part(
    messages: Sequence[BaseMessage],
    tools: Sequence[Any],
    direct: Sequence[Example] = (),
    *,
    examples: bool = True,
    hints: Mapping[str, ToolHints] | None = None,
) -> str:
    """What every prompt of this conversation begins with, whatever its questions: the user's
    own instructions and the worked records. Its evaluation is what is saved once and reused
    (`prefix_cache.py`); `render_prompt` puts a blank line and the conversation after it."""
    hints = hints if hints is not None else {tool_name(t): hints_for(t) for t in tools}
    blocks = []
    instructions = custom_instructions(messages)
    if instructions:
        blocks.append(instructions)
    if examples:
        for example, name in example_records(tools, direct):
            blocks.append(
                render_record(example.question, example.steps(name), example.answer, hints)
            )
    return "\n\n".join(blocks)


def _hidden(message: BaseMessage) -> bool:
    return isinstance(message.id, str) and message.id.startswith(HIDDEN_PREFIX)


def _observe(turn: Turn, text: str, call_id: str | None, failed: bool = False) -> None:
    waiting = [s for s in turn.steps if s.observation is None]
    match = next((s for s in waiting if call_id and s.call_id == call_id), None)
    target = match or (waiting[0] if waiting else None)
    if target is None:  # an observation without a step: keep it, attached to a blank step
        turn.steps.append(_Step("?", {}, call_id, text, failed))
        return
    target.observation = text
    target.failed = failed
