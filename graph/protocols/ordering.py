"""The conversation as a model reads it: no run errors, each tool result right after its call.

Every step of a run orders the whole conversation again, and a run's conversation only grows
at its end. `Ordering` keeps the last conversation it ordered and, when the next one starts
with those very messages (compared in C), orders only the new ones, where that cannot move
anything before them: every tool result among the new messages answers a call made among the
new messages, and no call or result id is one the earlier messages already hold. Otherwise,
or when an earlier message was marked otherwise in place, it orders the whole list again.
`tests/unit/test_conversation_order.py` checks both ways agree on generated conversations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from graph.messages import MARK_OF, kind_of
from graph.support.per_object import METADATA, starts_with


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


class _Ordered(NamedTuple):
    given: list[BaseMessage]
    marks: list[object]
    result: list[BaseMessage]
    call_ids: frozenset[str]  # every call id of the AIMessages given
    result_ids: frozenset[str]  # every tool_call_id of the ToolMessages given


class Ordering:
    """`ordered`, reusing the last result for a conversation that grew at its end."""

    def __init__(self) -> None:
        self._last: _Ordered | None = None

    def __call__(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        marks = list(map(MARK_OF, map(METADATA, messages)))
        last = self._last
        known = len(last.given) if last is not None else 0
        grown = last is not None and starts_with(messages, last.given)
        tail = _tail(last, messages[known:]) if grown and last.marks == marks[:known] else None
        if tail is not None:
            result, call_ids, result_ids = tail
            self._remember(messages, marks, last.result + result, call_ids, result_ids)
            return self._last.result  # type: ignore[union-attr]
        result = ordered(messages)
        calls, results = _ids(messages)
        self._remember(messages, marks, result, calls, results)
        return result

    def _remember(
        self,
        messages: Sequence[BaseMessage],
        marks: list[object],
        result: list[BaseMessage],
        call_ids: frozenset[str],
        result_ids: frozenset[str],
    ) -> None:
        # one assignment: a run on another thread sees the old entry or the new one
        self._last = _Ordered(list(messages), marks, result, call_ids, result_ids)


def _tail(
    last: _Ordered, new: Sequence[BaseMessage]
) -> tuple[list[BaseMessage], frozenset[str], frozenset[str]] | None:
    """The new messages ordered on their own, when that is what ordering everything gives."""
    calls, results = _ids(new)
    if calls & last.call_ids or results & last.result_ids or not results <= calls:
        return None
    return ordered(new), last.call_ids | calls, last.result_ids | results


def _ids(messages: Sequence[BaseMessage]) -> tuple[frozenset[str], frozenset[str]]:
    calls: set[str] = set()
    results: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            results.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            calls.update(
                c.get("id") or "" for c in [*message.tool_calls, *message.invalid_tool_calls]
            )
    return frozenset(calls), frozenset(results)
