"""The conversation as a model reads it: no run errors, each tool result right after its call."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from graph.messages import kind_of


def ordered(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The whole list ordered: run errors left out, then each result after its call."""
    return tool_results_after_calls([x for x in messages if kind_of(x) != "error"])


def tool_results_after_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Each ToolMessage right after the AIMessage that asked for it, as chat APIs require,
    even when it was written later (a call answered after the user had moved on)."""
    results = {x.tool_call_id: x for x in messages if isinstance(x, ToolMessage)}
    placed: set[str] = set()
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in placed:
                placed.add(message.tool_call_id)
                out.append(message)
            continue
        out.append(message)
        if isinstance(message, AIMessage):
            for call in [*message.tool_calls, *message.invalid_tool_calls]:
                found = results.get(call.get("id") or "")
                if found is not None and found.tool_call_id not in placed:
                    placed.add(found.tool_call_id)
                    out.append(found)
    return out
