"""Reading a thread back: one row per checkpoint, a state as JSON, the threads in a store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.types import StateSnapshot

from graph.cli.render import excerpt, show_input
from graph.state import flat


@dataclass(frozen=True)
class HistoryRow:
    step: int
    node: str
    checkpoint_id: str
    next: tuple[str, ...]
    summary: str


def history_rows(snapshots: Sequence[StateSnapshot]) -> list[HistoryRow]:
    """Rows oldest first, from `get_state_history` output (newest first)."""
    ordered = list(reversed(snapshots))
    rows = []
    for index, snapshot in enumerate(ordered):
        previous = ordered[index - 1] if index else None
        node = _writer(snapshot, previous)
        rows.append(
            HistoryRow(
                step=int((snapshot.metadata or {}).get("step", -1)),
                node=node,
                checkpoint_id=snapshot.config["configurable"]["checkpoint_id"],
                next=tuple(snapshot.next),
                summary=summarize(node, flat(snapshot.values or {})),
            )
        )
    return rows


def _writer(snapshot: StateSnapshot, previous: StateSnapshot | None) -> str:
    source = (snapshot.metadata or {}).get("source")
    if source == "input":
        return "input"
    if source == "update":
        return "update"
    if previous is None:
        return "start"
    names = sorted({task.name for task in previous.tasks}) if previous.tasks else []
    return ",".join(names) or "-"


def summarize(node: str, values: dict[str, Any]) -> str:
    """What happened at this checkpoint, in one line."""
    if node == "input":
        return "new input"
    if node == "__start__":
        question = last_question(values.get("messages", []))
        return f"question: {excerpt(question, 200)}" if question else ""
    if node == "think":
        decision = values.get("decision")
        thought = values.get("thought") or ""
        prefix = f"Thought: {excerpt(thought, 120)} " if thought else ""
        if decision == "act":
            calls = ", ".join(
                f"{c['name']}({excerpt(show_input(c['args']), 120)})"
                for c in values.get("pending", [])
            )
            return f"{prefix}→ Action: {calls}"
        if decision == "answer":
            return f"{prefix}→ Final Answer: {excerpt(values.get('answer') or '', 200)}"
        if decision == "invalid":
            return f"invalid reply: {values.get('error')}"
        if decision == "error":
            return f"error: {values.get('error')}"
        return f"decision: {decision}"
    if node.startswith("act"):
        number = values.get("iteration", 0) + 1  # observe has not counted this step yet
        done = [s for s in values.get("steps", []) if s.get("step") == number]
        return (
            "; ".join(
                f"{s['tool']} → {excerpt(s.get('observation') or '', 160)}"
                + (" (error)" if s.get("is_error") else "")
                for s in done
            )
            or "tool calls"
        )
    if node == "observe":
        number = values.get("iteration")
        fresh = [s for s in values.get("steps", []) if s.get("step") == number]
        shown = "; ".join(f"Observation: {excerpt(s.get('observation') or '', 160)}" for s in fresh)
        return f"{shown} → {values.get('decision')}" if shown else f"→ {values.get('decision')}"
    if node == "finish":
        status = values.get("status")
        detail = values.get("answer") if status != "error" else values.get("error")
        return f"{status}: {excerpt(detail or '', 200)}"
    return ""


def last_question(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and not message.response_metadata.get("react_agent"):
            return message.text
    return ""


def state_as_json(values: dict[str, Any]) -> str:
    """The full state, with messages as plain dicts, for `react-agent show`."""
    plain = flat(values)
    plain.pop("run", None)
    plain["messages"] = [_message_dict(m) for m in values.get("messages", [])]
    plain.pop("remaining_steps", None)
    return json.dumps(plain, ensure_ascii=False, default=str, indent=2)


def _message_dict(message: BaseMessage) -> dict[str, Any]:
    data: dict[str, Any] = {"type": message.type, "content": message.content, "id": message.id}
    for key in ("tool_calls", "tool_call_id", "name", "status"):
        value = getattr(message, key, None)
        if value:
            data[key] = value
    return data
