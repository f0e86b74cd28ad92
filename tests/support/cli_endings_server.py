"""A scripted endpoint that refuses, as OpenAI does, a conversation it could not take.

OpenAI answers HTTP 400 when an assistant message's `tool_calls` are not each followed by a
`tool` message with that `tool_call_id` (before the next non-tool message), or when a `tool`
message answers no waiting call. The scripted server (`tests.support.openai_server`) accepts
anything, so a thread an ending left broken would go unnoticed there. `StrictScript.item(x)`
wraps a script item so each request is checked first; every refusal is kept in `refused`.
Requests without `tools` (the text protocol) are checked the same way: they hold no calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.openai_server import HTTPError, Reply, ScriptItem


def conversation_problem(messages: list[dict[str, Any]]) -> str | None:
    """Why OpenAI would refuse these chat messages, in its words; None when it would not."""
    waiting: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' (tool_call_id {call_id!r})."
                )
            waiting.remove(call_id)
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(waiting)}"
            )
        if role == "assistant":
            waiting = [call.get("id") for call in message.get("tool_calls") or []]
    if waiting:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. Missing: {', '.join(waiting)}"
        )
    return None


class StrictScript:
    """Wraps script items so a request OpenAI would refuse gets its HTTP 400 instead."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def item(self, item: ScriptItem) -> Callable[[dict[str, Any]], Reply | HTTPError]:
        def answer(body: dict[str, Any]) -> Reply | HTTPError:
            problem = conversation_problem(body.get("messages") or [])
            if problem is not None:
                self.refused.append(problem)
                return HTTPError(400, problem, code="invalid_request_error")
            return item if isinstance(item, (Reply, HTTPError)) else item(body)

        return answer

    def items(self, *items: ScriptItem) -> list[Callable[[dict[str, Any]], Reply | HTTPError]]:
        return [self.item(item) for item in items]


def final_answer(text: str) -> Callable[[dict[str, Any]], Reply]:
    """A reply that ends a run under either protocol: plain text to a native request (one that
    offers tools), a text-protocol Final Answer otherwise."""

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("tools"):
            return Reply(content=text)
        return Reply(content=f"Thought: I can answer now.\nFinal Answer: {text}")

    return answer
