"""Reading a thread back: one row per checkpoint, a state as JSON, the threads in a store.

What happened at a checkpoint is read from what changed since the one before: the messages it
added (a question, a model step with its tool calls, observations, an answer), a status that
was set, and the pause it is waiting on. That depends only on the standard LangChain message
types, not on the loop's bookkeeping, so old threads keep reading well as the graph evolves.

`graph.persistence.timeline.aiter_history` streams a thread's rows without rebuilding any
state, describing each checkpoint with `describe_changes`.

Messages are read through their public attributes alone, so old threads and other agents'
threads read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from graph.messages import shown
from graph.state import TERMINAL

AGENT_MARK = "react_agent"  # response_metadata key on the agent's own notes to the model


CLOSING = ("error", "limit")  # the agent's closing messages (`graph.loop.closing`)


def excerpt(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the cut marked with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_input(value: Any) -> str:
    """Tool arguments as compact JSON (a plain string as it is)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class HistoryRow:
    step: int
    node: str
    checkpoint_id: str
    next: tuple[str, ...]
    summary: str
    created_at: str | None = None
    parent_checkpoint_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "next": list(self.next)}


def describe_changes(
    node: str,
    fresh: Sequence[Any],
    values: dict[str, Any],
    before: dict[str, Any] | None,
    interrupts: Sequence[Any] | None,
) -> str:
    """One line from what a checkpoint changed: the messages it added (`fresh`), its status
    and answer (`values`) against the status before it, and the pauses it waits on. Only
    plain channels of `values` are read, so a row never needs the whole conversation."""
    before = before or {}
    parts = [text for text in (_describe(m) for m in fresh) if text]
    status = values.get("status")
    said = any(part.startswith("Final Answer:") for part in parts)
    if status in TERMINAL and (node == "finish" or (status != before.get("status") and not said)):
        detail = values.get("error") if status == "error" else values.get("answer")
        # a step that set the status before the notice or answer exists says the status alone
        parts.append(f"{status}: {excerpt(detail, 200)}" if detail else str(status))
    for pause in interrupts or ():
        parts.append(f"waiting for approval: {_paused_calls(pause.value)}")
    return "; ".join(parts)


def _describe(message: Any) -> str:
    kind = getattr(message, "type", "")
    text = shown(message)
    if kind == "human":
        if (getattr(message, "response_metadata", None) or {}).get(AGENT_MARK):
            return f"note to the model: {excerpt(text, 160)}" if text else ""
        return f"question: {excerpt(text, 200)}"
    if kind == "ai":
        calls = getattr(message, "tool_calls", None) or []
        thought = f"Thought: {excerpt(text, 120)} " if text and calls else ""
        if calls:
            listed = ", ".join(
                f"{c.get('name')}({excerpt(show_input(c.get('args')), 120)})" for c in calls
            )
            return f"{thought}→ Action: {listed}"
        if getattr(message, "invalid_tool_calls", None):
            return "invalid tool call"
        if (getattr(message, "response_metadata", None) or {}).get(AGENT_MARK) in CLOSING:
            return ""  # the run's error or stop notice, said to the user: the row's status says it
        return f"Final Answer: {excerpt(text, 200)}" if text else ""
    if kind == "tool":
        failed = " (error)" if getattr(message, "status", "") == "error" else ""
        return f"{getattr(message, 'name', None) or 'tool'} → {excerpt(text, 160)}{failed}"
    return ""


def _paused_calls(value: Any) -> str:
    requests = value.get("action_requests") if isinstance(value, dict) else None
    if not isinstance(requests, list):
        return excerpt(show_input(value), 160)
    return ", ".join(
        f"{r.get('name')}({excerpt(show_input(r.get('args')), 120)})"
        for r in requests
        if isinstance(r, dict)
    )


def last_question(messages: Sequence[Any]) -> str:
    """The person's latest question (the agent's own notes to the model are not questions)."""
    for message in reversed(messages):
        metadata = getattr(message, "response_metadata", None) or {}
        if getattr(message, "type", "") == "human" and not metadata.get(AGENT_MARK):
            return shown(message)
    return ""


def pending_calls(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Tool calls of the latest model step that have no observation yet (what `replay --input`
    can replace)."""
    answered = {getattr(m, "tool_call_id", None) for m in messages if m.type == "tool"}
    for message in reversed(messages):
        if message.type == "ai":
            calls = getattr(message, "tool_calls", None) or []
            return [
                {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")}
                for c in calls
                if c.get("id") not in answered
            ]
    return []


def state_as_dict(values: dict[str, Any]) -> dict[str, Any]:
    """The full state, with messages as plain dicts and the calls still to run, for `show`."""
    plain = {k: v for k, v in values.items() if k not in ("remaining_steps", "messages")}
    messages = values.get("messages", [])
    plain["messages"] = [_message_dict(m) for m in messages]
    plain["pending"] = pending_calls(messages)
    return plain


def _message_dict(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"type": message.type, "content": message.content, "id": message.id}
    for key in ("tool_calls", "invalid_tool_calls", "tool_call_id", "name", "status"):
        value = getattr(message, key, None)
        if value:
            data[key] = value
    return data
