"""Forking a run with an edited tool input: time travel with a different decision.

The fork is written as if `think` had asked for the edited call (LangGraph's `update_state`
with `as_node="think"`), so the routing re-runs from there and the original history stays.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from graph.protocols.text.prompts import MARK
from graph.state import flat, pack


def edited_update(values: dict[str, Any], new_input: Any, index: int = 0) -> dict[str, Any]:
    """The state update that replaces the input of pending call `index`."""
    pending = [dict(call) for call in values.get("pending", [])]
    if values.get("decision") != "act" or not pending:
        raise ValueError(
            "that checkpoint is not before a tool call; pick one whose next node "
            "is act (see `react-agent history`)"
        )
    if not 0 <= index < len(pending):
        raise ValueError(f"--call {index} is out of range: {len(pending)} call(s) are pending")
    pending[index]["args"] = new_input
    update: dict[str, Any] = {"pending": pending, "decision": "act"}
    reply = next(
        (m for m in reversed(values.get("messages", [])) if isinstance(m, AIMessage)), None
    )
    if reply is not None:
        update["messages"] = [_rewrite(reply, pending, values.get("thought", ""))]
    return update


def _rewrite(reply: AIMessage, pending: list[dict[str, Any]], thought: str) -> AIMessage:
    """The model's message as if it had asked for the edited call (same id: it replaces it)."""
    if reply.tool_calls:
        args = {call["id"]: call["args"] for call in pending}
        calls = [{**tc, "args": args.get(tc["id"], tc["args"])} for tc in reply.tool_calls]
        return reply.model_copy(update={"tool_calls": calls})
    call = pending[0]
    shown = (
        call["args"]
        if isinstance(call["args"], str)
        else json.dumps(call["args"], ensure_ascii=False)
    )
    lines = [f"Thought: {thought}"] if thought else []
    lines += [f"Action: {call['name']}", f"Action Input: {shown}"]
    return AIMessage(
        content="\n".join(lines),
        id=reply.id,
        response_metadata={**reply.response_metadata, MARK: "step"},
    )


async def fork_with_input(
    agent: Any, snapshot: StateSnapshot, new_input: Any, index: int = 0
) -> RunnableConfig:
    """Write the fork; return its config, ready for `agent.ainvoke(None, config)`."""
    if "act" not in snapshot.next:
        raise ValueError(
            f"checkpoint {snapshot.config['configurable'].get('checkpoint_id')} is not before a "
            f"tool call (next: {', '.join(snapshot.next) or 'end'}); pick one whose next node is "
            "act (see `react-agent history`)"
        )
    update = pack(snapshot.values, edited_update(flat(snapshot.values), new_input, index))
    config = {"configurable": {"checkpoint_ns": "", **snapshot.config["configurable"]}}
    return await agent.aupdate_state(config, update, as_node="think")
