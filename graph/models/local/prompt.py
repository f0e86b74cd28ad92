"""The completion prompt: worked examples, then the question and the steps so far, as one text.

    <custom instructions, if the user set any>
    Tools:
    - calculator: Evaluate an arithmetic expression exactly.
    ...

    Question: <example question>
    Thought: ...
    Action: calculator
    Action Input: {"expression": "12 * 9"}
    Observation: 108
    Thought: I have the answer.
    Final Answer: 12 * 9 = 108

    ... more examples, a blank line between records ...

    Question: <the user's question>
    Thought: ... Action: ... Action Input: ... Observation: ...   (the steps so far)
    <the model writes the next Thought and Action, or the Final Answer>

The records use exactly the keywords `graph.protocols.text.reader.parse_react` reads and the
grammar allows, so what the model continues with is one step of the agent's protocol.

The conversation arrives in LangChain's standard form (AIMessage with `tool_calls`, then
ToolMessages; a final AIMessage; corrections from the agent, whose id starts with
`do-not-render-`, are left out: the grammar already keeps the reply valid, and a correction in
the middle of a record would only teach the model a different document), or as older
text-rendered steps (AIMessage text "Thought: ... Action: ...", HumanMessage
"Observation: ..."). Both render the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from graph.models.local.examples import (
    Example,
    one_line,
    render_example,
    render_final,
    render_step,
    render_tools,
)

HIDDEN_PREFIX = "do-not-render-"
OBSERVATION = "Observation:"
TOOLS_HEADING = "You can use these tools:"  # where the text protocol's own system prompt begins


@dataclass
class _Step:
    thought: str
    tool: str
    tool_input: Any
    call_id: str | None = None
    observation: str | None = None


@dataclass
class Turn:
    """One question of the conversation, the steps taken for it, and its answer if given."""

    question: str
    steps: list[_Step] = field(default_factory=list)
    answer: str | None = None
    final_thought: str = ""


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
            _observe(current(), message.text, message.tool_call_id)
        elif isinstance(message, AIMessage):
            turn = current()
            if message.tool_calls:
                thought = _thought_of(message.text)
                for call in message.tool_calls:
                    turn.steps.append(
                        _Step(thought, call["name"], call.get("args"), call.get("id"))
                    )
                    thought = ""
                continue
            step = parse_react(message.text)
            if step.kind == "action":
                turn.steps.append(_Step(step.thought, step.tool or "", step.tool_input))
            elif step.kind == "final":
                turn.answer, turn.final_thought = step.answer or "", step.thought
            elif message.text.strip():  # a plain answer (e.g. from a native-protocol turn)
                turn.answer = message.text.strip()
        elif isinstance(message, HumanMessage):
            text = message.text.strip()
            if text.startswith(OBSERVATION) and turns:
                _observe(turns[-1], text[len(OBSERVATION) :].strip(), None)
            else:
                turns.append(Turn(question=text))
    return turns


def question_of(messages: Sequence[BaseMessage]) -> str:
    """The question being answered now: the last question record's."""
    turns = conversation_turns(messages)
    return turns[-1].question if turns else ""


def render_prompt(
    messages: Sequence[BaseMessage],
    tools: Sequence[Any],
    examples: Sequence[Example],
    *,
    show_tools: bool = True,
) -> str:
    """The whole completion prompt; it ends with a newline, where the model's step begins."""
    blocks = []
    head = []
    instructions = custom_instructions(messages)
    if instructions:
        head.append(instructions)
    if show_tools and tools:
        head.append(f"Tools:\n{render_tools(tools)}")
    if head:
        blocks.append("\n".join(head))
    blocks += [render_example(example) for example in examples]
    turns = conversation_turns(messages)
    for turn in turns:
        lines = [f"Question: {one_line(turn.question)}"]
        lines += [render_step(s.thought, s.tool, s.tool_input, s.observation) for s in turn.steps]
        if turn.answer is not None:
            lines.append(render_final(turn.final_thought, turn.answer))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _hidden(message: BaseMessage) -> bool:
    return isinstance(message.id, str) and message.id.startswith(HIDDEN_PREFIX)


def _thought_of(text: str) -> str:
    """The thought of a step stored with `tool_calls`: its text, or the Thought of the ReAct
    text it was parsed from."""
    from graph.protocols.text.reader import parse_react

    text = text.strip()
    if "Action" in text or text.lower().startswith("thought"):
        return parse_react(text).thought.strip()
    return text


def _observe(turn: Turn, text: str, call_id: str | None) -> None:
    waiting = [s for s in turn.steps if s.observation is None]
    match = next((s for s in waiting if call_id and s.call_id == call_id), None)
    target = match or (waiting[0] if waiting else None)
    if target is None:  # an observation without a step: keep it, attached to a blank step
        turn.steps.append(_Step("", "?", {}, call_id, text))
        return
    target.observation = text
