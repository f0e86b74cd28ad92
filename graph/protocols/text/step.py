"""One step read from a reply (`ReactStep`), and how a written call becomes one.

`actions` reads what an Action says (a name as written, a raw input); here that call meets the
enabled tools: the name is resolved, the input shaped to the tool's schema, a final-answer name
(`Finish[...]`) that is no tool's answers, and a sentence where a name belongs is an error,
never a fuzzy match. Each error says what was wrong: it is sent back to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from graph.protocols.text.actions import (
    FINAL_NAMES,
    NO_NAME,
    Action,
    answer_text,
    is_sentence,
    key,
    not_a_name,
    plain_input,
)
from graph.protocols.text.arguments import unfence
from graph.protocols.text.toolset import Toolset

Kind = Literal["action", "final", "error"]


@dataclass(frozen=True)
class ReactStep:
    """One parsed reply: an action to run, a final answer, or a parse error."""

    kind: Kind
    thought: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] | str | None = None
    answer: str | None = None
    error: str | None = None
    note: str | None = None
    read: str = ""  # the step as read (`reader`'s docstring); empty for a reply not read
    # text followed the step as read (an invented observation, prose): a reply cut off at the
    # token limit was cut after the step, not inside it (`truncation.whole_call`)
    ended: bool = False


def error(message: str, thought: str = "") -> ReactStep:
    return ReactStep(kind="error", thought=thought, error=message)


def final(answer: str, thought: str) -> ReactStep:
    answer = unfence(answer)
    if not answer:
        return error("the Final Answer is empty", thought)
    return ReactStep(kind="final", thought=thought, answer=answer)


def call_step(action: Action, thought: str, toolset: Toolset | None) -> ReactStep:
    """From a written name and a raw input to a step: resolved and shaped with the tools;
    without them (`toolset` None), the name and the input as written."""
    name, raw = action.name, action.raw
    if not name.strip():
        return error(NO_NAME, thought)
    tool = toolset.resolve(name) if toolset is not None else None
    if tool is None and key(name) in FINAL_NAMES:
        return final(answer_text(raw), thought)
    if tool is None and is_sentence(name):
        return error(not_a_name(name, toolset.names if toolset else ()), thought)
    if toolset is None:
        return ReactStep(kind="action", thought=thought, tool=name, tool_input=plain_input(raw))
    if tool is None:
        return error(toolset.unknown(name), thought)
    args, problem = toolset.shape(tool, raw)
    if problem is not None:
        return error(problem, thought)
    return ReactStep(kind="action", thought=thought, tool=tool, tool_input=args)
