"""Forking a run with an edited tool input: time travel with a different decision.

The fork is written as if `think` had asked for the edited call (LangGraph's `update_state`
with `as_node="think"`): the model's step message is replaced (same id) by one with the edited
arguments, so the routing runs the edited call from there and the original history stays.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from graph.messages import RAW


def edited_update(values: dict[str, Any], new_input: Any, index: int = 0) -> dict[str, Any]:
    """The state update that replaces the input of pending call `index`."""
    messages = values.get("messages") or []
    step = messages[-1] if messages else None
    if not isinstance(step, AIMessage) or not step.tool_calls:
        raise ValueError(
            "that checkpoint is not before a tool call; pick one whose next node "
            "is act (see `react-agent history`)"
        )
    calls = [dict(call) for call in step.tool_calls]
    if not 0 <= index < len(calls):
        raise ValueError(f"--call {index} is out of range: {len(calls)} call(s) are pending")
    calls[index]["args"] = new_input if isinstance(new_input, dict) else {"__arg1": new_input}
    metadata = {k: v for k, v in step.response_metadata.items() if k != RAW}
    return {
        "messages": [step.model_copy(update={"tool_calls": calls, "response_metadata": metadata})]
    }


async def fork_with_input(
    agent: Any, snapshot: StateSnapshot, new_input: Any, index: int = 0
) -> RunnableConfig:
    """Write the fork; return its config, ready for `agent.ainvoke(None, config)`."""
    if "act" not in snapshot.next and "review" not in snapshot.next:
        raise ValueError(
            f"checkpoint {snapshot.config['configurable'].get('checkpoint_id')} is not before a "
            f"tool call (next: {', '.join(snapshot.next) or 'end'}); pick one whose next node is "
            "act (see `react-agent history`)"
        )
    update = edited_update(snapshot.values, new_input, index)
    config = {"configurable": {"checkpoint_ns": "", **snapshot.config["configurable"]}}
    return await agent.aupdate_state(config, update, as_node="think")
