"""The trace of a run (`steps`), derived from its messages.

The conversation already holds every step (`graph.messages`), so the trace is computed from it
rather than stored beside it: one pure function, used by `finish` for the run's output and by
anything that shows a paused or crashed run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from graph import messages as m
from graph.state import Step, Usage


def steps_of(values: dict[str, Any]) -> list[Step]:
    """The trace of a state: the run's output carries it; a stored checkpoint does not (it is
    derived from the stored messages, so it is not stored twice), so it is rebuilt here."""
    if values.get("steps"):
        return values["steps"]
    run = values.get("run") or {}
    messages = run_messages(values.get("messages") or [], run.get("question_id"))
    return derive_steps(messages, run.get("protocol"))


def run_messages(messages: Sequence[BaseMessage], question_id: str | None) -> list[BaseMessage]:
    """The messages after the one that started the run (all of them if it is not found). The
    last message with that id is found in C (the ids read by `map`, searched reversed): every
    step asks, and a loop in Python would walk the whole run each time."""
    if question_id:
        ids = list(map(m.ID_OF, messages))
        ids.reverse()
        with contextlib.suppress(ValueError):
            return list(messages[len(ids) - ids.index(question_id) :])
    return list(messages)


def steps_taken(messages: Sequence[BaseMessage], run: Mapping[str, Any]) -> int:
    """The steps the model took in the run `run` describes: the number think wrote on its last
    step after the run's question, so a middleware that drops old messages does not reset the
    count, and no bookkeeping is written per step. Read from the end, where that step nearly
    always is (the question bounds the search, as in `run_messages`), not over the whole
    conversation at every step. A run an earlier release started kept the count in `run`."""
    question_id = run.get("question_id")
    for message in reversed(messages):
        if question_id and message.id == question_id:
            break
        if isinstance(message, AIMessage) and m.STEP in message.response_metadata:
            return int(message.response_metadata[m.STEP])
    return int(run.get("iteration") or 0)


def latest_observations(messages: Sequence[BaseMessage]) -> list[str]:
    """The results the model has not reacted to yet: the texts of the tool messages that end
    the conversation (agent notes after them aside) and answer the model step right before
    them, errors included (an answer that quotes "Unknown time zone 'Atlantis'" tells the
    truth; a free one after a failure is invented). Empty when the last word is not a tool's,
    or when the results answer no step of these messages (the "not run" result that closes a
    pending call when the user asked something new belongs to the old question)."""
    found: list[ToolMessage] = []
    index = len(messages) - 1
    while index >= 0 and (
        isinstance(messages[index], ToolMessage) or m.is_agent_note(messages[index])
    ):
        if isinstance(messages[index], ToolMessage):
            found.append(messages[index])
        index -= 1
    step = messages[index] if index >= 0 else None
    asked = {call["id"] for call in step.tool_calls} if isinstance(step, AIMessage) else set()
    if not found or any(x.tool_call_id not in asked for x in found):
        return []
    return [x.text for x in reversed(found)]


def derive_steps(messages: Sequence[BaseMessage], protocol: str | None = None) -> list[Step]:
    """One entry per tool call, unusable reply, nudge, answer and limit notice, in order."""
    results = {x.tool_call_id: x for x in messages if isinstance(x, ToolMessage)}
    steps: list[Step] = []
    number = 0
    for message in messages:
        kind = m.kind_of(message)
        if isinstance(message, AIMessage):
            used = message.response_metadata.get(m.PROTOCOL) or protocol or ""
            if message.response_metadata.get(m.FALLBACK):
                steps.append(
                    _entry(number + 1, "fallback", "text", message.response_metadata[m.FALLBACK])
                )
            if kind == "error":  # the run's error, said to the user: not a step
                continue
            if kind == "limit":
                notice = message.response_metadata.get(m.NOTICE) or message.text
                steps.append(_entry(number + 1, "limit", used, notice))
            elif message.tool_calls or message.invalid_tool_calls or kind == "invalid":
                number += 1
                steps += _action_entries(number, message, used, results)
            else:
                entry = _entry(number + 1, "answer", used, None)
                entry["thought"] = message.response_metadata.get(m.THOUGHT, "")
                entry["decided_by"] = _decided_by(message)
                entry["usage"] = _usage(message)
                steps.append(entry)
        elif m.is_agent_note(message) and kind in ("invalid", "repeat"):
            if kind == "invalid" and steps and steps[-1]["kind"] == "invalid":
                steps[-1]["observation"] = message.text  # the correction of that reply
            else:
                steps.append(
                    {**_entry(number, kind, protocol or "", message.text), "is_error": True}
                )
    return steps


def _action_entries(
    number: int, message: AIMessage, protocol: str, results: dict[str, ToolMessage]
) -> list[Step]:
    thought = message.text.strip() if message.tool_calls else ""
    usage = _usage(message)
    note = message.response_metadata.get(m.NOTE)
    if not message.tool_calls:  # an unusable reply (or only broken native calls)
        broken = [results.get(c.get("id") or "") for c in message.invalid_tool_calls]
        told = next((r.text for r in broken if r is not None), None)
        entry = _entry(number, "invalid", protocol, told or message.response_metadata.get(m.ERROR))
        return [{**entry, "thought": message.text.strip(), "is_error": True, "usage": usage}]
    calls: list[dict[str, Any]] = [*message.tool_calls, *message.invalid_tool_calls]
    out: list[Step] = []
    for index, call in enumerate(calls):
        result = results.get(call.get("id") or "")
        entry = _entry(number, "action", protocol, m.shown(result) if result else None)
        entry.update(
            thought=thought,
            tool=call.get("name"),
            tool_input=call.get("args"),
            is_error=bool(result is not None and result.status == "error"),
            duration_ms=float((result.response_metadata if result else {}).get(m.DURATION, 0.0)),
            usage=usage if index == 0 else None,
            note=note if index == 0 else None,
            decided_by=_decided_by(message),
            argument_by="code"
            if message.response_metadata.get(m.ARGUMENT_BY) == "code"
            else "model",
        )
        if result is not None and result.response_metadata.get(m.RERUN):
            entry["rerun"] = True  # it ran again after an attempt a crash cut short
        out.append(entry)
    return out


def _entry(number: int, kind: str, protocol: str, observation: str | None) -> Step:
    return {
        "step": number,
        "kind": kind,  # type: ignore[typeddict-item]
        "protocol": protocol,
        "thought": "",
        "tool": None,
        "tool_input": None,
        "observation": observation,
        "is_error": False,
        "duration_ms": 0.0,
        "usage": None,
        "note": None,
        "decided_by": "model",
        "argument_by": "model",
    }


def _decided_by(message: AIMessage) -> str:
    """Who chose this step: the model, or code (a quoted answer, a choice the embedded model's
    adapter made), as the step's message says."""
    meta = message.response_metadata
    return "code" if meta.get(m.DECIDED_BY) == "code" or meta.get(m.QUOTED) else "model"


def _usage(message: AIMessage) -> Usage | None:
    meta = message.usage_metadata
    if not meta:
        return None
    return {
        "input_tokens": meta.get("input_tokens", 0),
        "output_tokens": meta.get("output_tokens", 0),
        "total_tokens": meta.get("total_tokens", 0),
    }
