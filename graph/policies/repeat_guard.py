"""RepeatGuard: a run that keeps making the same calls with the same results is not making
progress. Decided before each model call from the messages alone (no bookkeeping): after
`STUCK_AFTER - 1` identical steps in a row the model is told so (a note stored in the thread,
as an observation is), and after `STUCK_AFTER` the run ends with status `stuck` without
another call. `before_model` work done inside think's chain: no node, no superstep."""

from __future__ import annotations

import hashlib
import json

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.types import Command

from graph import messages as m
from graph.policies.base import CallAndStore, Decision, LoopPolicy, ended

STUCK_AFTER = 3  # identical iterations in a row that end a run


class RepeatGuard(LoopPolicy):
    def shaped(self, request: ModelRequest) -> Decision:
        """The request, the request with the note that warns the model, or the end of the
        run. Read from the thread as stored (`state["messages"]`, what a `before_model` hook
        sees), not from the request, which the protocol and the context policy may have
        reordered or cleared."""
        stored = (request.state or {}).get("messages") or []
        repeats = repeated_steps(stored)
        if repeats >= STUCK_AFTER:
            return ended({"status": "stuck"})
        if repeats == STUCK_AFTER - 1 and not m.is_agent_note(stored[-1]):
            note = nudge(stored)
            told = request.override(messages=[*request.messages, note])
            return CallAndStore(told, Command(update={"messages": [note]}))
        return request


def nudge(messages: list[BaseMessage]) -> BaseMessage:
    step = next((x for x in reversed(messages) if isinstance(x, AIMessage)), None)
    names = ", ".join(dict.fromkeys(c["name"] for c in (step.tool_calls if step else [])))
    text = (
        f"You already called {names} with exactly this input and got exactly this result. "
        "Calling it again will not change the answer: use what you have, try a different "
        "input or tool, or give your Final Answer."
    )
    get_stream_writer()({"event": "observation", "tool": None, "text": text, "is_error": True})
    return m.agent_note(text, "repeat")


def repeated_steps(messages: list[BaseMessage], most: int = STUCK_AFTER) -> int:
    """How many steps in a row, ending with the last, made the same calls with the same
    results (at most `most`; 0 when the last step made no call). Derived from the messages,
    so it needs no bookkeeping and stops at the question that started the run."""
    steps = 0
    first: tuple[AIMessage, list[ToolMessage]] | None = None
    signature: str | None = None  # the last step's, hashed only once another step may match
    results: list[ToolMessage] = []
    last: AIMessage | None = None
    for message in reversed(messages):
        if m.is_user_message(message):
            break
        if isinstance(message, ToolMessage):
            results.append(message)
        elif isinstance(message, AIMessage):
            if not message.tool_calls:
                break
            if last is not None and _other_calls(message, last):  # no need to hash results
                return steps
            if first is None:
                first = (message, results)
            else:
                signature = signature or call_signature(*first)
                if call_signature(message, results) != signature:
                    return steps
            steps += 1
            last = message
            results = []
            if steps == most:
                break
    return steps


def _other_calls(step: AIMessage, later: AIMessage) -> bool:
    """Whether two steps certainly made different calls: other tools, or one call each with
    other arguments (the cheap test before their results are hashed)."""
    names = sorted(c["name"] for c in step.tool_calls)
    if names != sorted(c["name"] for c in later.tool_calls):
        return True
    if len(step.tool_calls) == 1:
        return step.tool_calls[0]["args"] != later.tool_calls[0]["args"]
    return False


def call_signature(step: AIMessage | None, results: list[ToolMessage]) -> str:
    """What one iteration did: its tools, inputs and observations, as a short digest."""
    by_id = {r.tool_call_id: r.text for r in results}
    done = sorted(
        json.dumps([c["name"], c["args"], by_id.get(c["id"])], sort_keys=True, default=str)
        for c in (step.tool_calls if step is not None else [])
    )
    return hashlib.blake2b("\n".join(done).encode(), digest_size=12).hexdigest()
