"""The two ways a model asks for tools, each reduced to the same typed decision.

`native`: the model gets the tool schemas and answers with `tool_calls`.
`text`: the model writes Thought / Action / Action Input / Final Answer; the request stops at
`Observation:` and the reply goes through `parse_react`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from graph.protocols.text.reader import clean_reply, parse_react
from graph.protocols.text.prompts import (
    MARK,
    OBSERVATION,
    native_system_prompt,
    text_system_prompt,
    text_transcript,
)
from graph.state import PendingCall

STOP = [OBSERVATION]


@dataclass(frozen=True)
class Act:
    calls: list[PendingCall]
    thought: str = ""
    note: str | None = None


@dataclass(frozen=True)
class Answer:
    text: str
    thought: str = ""


@dataclass(frozen=True)
class Invalid:
    error: str
    thought: str = ""
    call_ids: list[str] = field(default_factory=list)  # native tool calls that need a reply


Decision = Act | Answer | Invalid


def bind(model: BaseChatModel, protocol: str, tools: Sequence[BaseTool]) -> Runnable:
    """The model as this protocol calls it: with tool schemas, or with the stop sequence."""
    if protocol == "native":
        return model.bind_tools(list(tools)) if tools else model
    return model.bind(stop=STOP)


def request_messages(
    protocol: str,
    messages: Sequence[BaseMessage],
    tools: Sequence[BaseTool],
    instructions: str | None,
    system_prompt_cache: dict[Any, str] | None = None,
) -> list[BaseMessage]:
    """System prompt plus the conversation in the form this protocol's model reads."""
    if protocol == "native":
        return [SystemMessage(content=native_system_prompt(instructions)), *messages]
    key = (tuple(t.name for t in tools), instructions)
    prompt = system_prompt_cache.get(key) if system_prompt_cache is not None else None
    if prompt is None:
        prompt = text_system_prompt(tools, instructions)
        if system_prompt_cache is not None:
            system_prompt_cache[key] = prompt
    return [SystemMessage(content=prompt), *text_transcript(messages)]


def decide_native(reply: AIMessage) -> Decision:
    thought = reply.text.strip()
    calls: list[PendingCall] = [
        {"id": call.get("id") or _new_id(), "name": call["name"], "args": call.get("args") or {}}
        for call in reply.tool_calls
    ]
    broken = [
        {
            "id": bad.get("id") or _new_id(),
            "name": bad.get("name") or "?",
            "args": bad.get("args") or "",
            "error": (
                f"The arguments for tool '{bad.get('name')}' are not valid JSON "
                f"({bad.get('error') or 'could not be parsed'}): {bad.get('args')!r}. "
                "Send the arguments as a JSON object."
            ),
        }
        for bad in reply.invalid_tool_calls
    ]
    if calls:
        return Act(calls=[*calls, *broken], thought=thought)
    if broken:
        error = "; ".join(b["error"] for b in broken)
        return Invalid(error=error, thought=thought, call_ids=[b["id"] for b in broken])
    if thought:
        return Answer(text=thought)
    return Invalid(error="the reply was empty (no text and no tool call)")


def decide_text(reply: AIMessage) -> Decision:
    step = parse_react(reply.text)
    if step.kind == "action":
        call: PendingCall = {"id": _new_id(), "name": step.tool or "", "args": step.tool_input}
        return Act(calls=[call], thought=step.thought, note=step.note)
    if step.kind == "final":
        return Answer(text=step.answer or "", thought=step.thought)
    return Invalid(error=step.error or "the reply could not be parsed", thought=step.thought)


def stored_reply(protocol: str, reply: AIMessage) -> AIMessage:
    """The reply as the conversation keeps it: text steps cut to what the model may write."""
    if protocol == "native":
        return reply
    return AIMessage(
        content=clean_reply(reply.text),
        id=reply.id,
        usage_metadata=reply.usage_metadata,
        response_metadata={**reply.response_metadata, MARK: "step"},
    )


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"
