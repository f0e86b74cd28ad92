"""observe: count the step, tell the model what went wrong if its reply was unusable, guard
against a loop of identical calls, and decide whether the run goes on.

Tool observations were already written by `act` (each task its own, so a crash keeps every
finished one); what is written here is the agent's own notes to the model.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import get_runtime

from graph import messages as m
from graph.nodes.bindings import Bindings
from graph.nodes.finish import STUCK_AFTER
from graph.protocols.native import native_invalid_observation
from graph.protocols.text.prompts import invalid_reply_observation
from graph.settings import AgentContext
from graph.state import AgentState

AFTER_OBSERVE = 4  # supersteps the next step needs to still end through finish
WRAP_UP = 2  # think, finish


def make_observe(b: Bindings) -> Any:
    def observe(state: AgentState) -> dict[str, Any]:
        ctx = b.context(get_runtime().context)
        run = state.get("run") or {}
        number = run.get("iteration", 0) + 1
        step, results = last_step(state.get("messages") or [])
        changes: dict[str, Any] = {"iteration": number, "review": [], "invalid": None}
        written: list[BaseMessage] = []
        if run.get("invalid"):
            written += _correction(b, ctx, run, step, results)
            changes.update(invalid_streak=run.get("invalid_streak", 0) + 1, repeats=0)
            changes["last_calls"] = None
        else:
            changes["invalid_streak"] = 0
            signature = call_signature(step, results)
            repeats = run.get("repeats", 0) + 1 if signature == run.get("last_calls") else 1
            changes.update(repeats=repeats, last_calls=signature)
            if repeats == STUCK_AFTER - 1:
                written.append(_nudge(step))
        update: dict[str, Any] = {"run": changes}
        if written:
            update["messages"] = written
        direct = _returned_directly(b.tools(ctx), step, results)
        if direct is not None:  # a `return_direct` tool's result is the answer, as in ToolNode
            return {**update, "status": "answered", "answer": direct}
        remaining = state.get("remaining_steps", 10**6) - b.step_hooks - b.closing_hooks
        status = _next(ctx, changes, number, remaining)
        if status == "wrap_up":
            changes["wrap_up"] = True
        elif status != "running":
            update["status"] = status
            if status == "error":
                update["error"] = (
                    f"The model's last {ctx.max_invalid} replies could not be parsed (last "
                    f"problem: {run.get('invalid') or 'unknown'}); try another model or the "
                    "other protocol (REACT_AGENT_PROTOCOL)."
                )
        return update

    return observe


def _returned_directly(
    tools: list[Any], step: AIMessage | None, results: list[ToolMessage]
) -> str | None:
    """The result of a successful call to a tool marked `return_direct`, if the step made one."""
    direct = {t.name for t in tools if getattr(t, "return_direct", False)}
    if step is None or not direct:
        return None
    called = {c["id"] for c in step.tool_calls if c["name"] in direct}
    found = [r.text for r in results if r.tool_call_id in called and r.status != "error"]
    return found[-1] if found else None


def last_step(messages: list[BaseMessage]) -> tuple[AIMessage | None, list[ToolMessage]]:
    """The model's last step and the tool results written after it."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            after = [x for x in messages[index + 1 :] if isinstance(x, ToolMessage)]
            return messages[index], after
    return None, []


def _correction(
    b: Bindings, ctx: AgentContext, run: dict, step: AIMessage | None, results: list
) -> list[BaseMessage]:
    error = run.get("invalid") or "the reply could not be parsed"
    protocol = run.get("protocol") or "native"
    if protocol == "text":
        text = invalid_reply_observation(error, [t.name for t in b.tools(ctx)])
    else:
        text = native_invalid_observation(error)
    _tell(text)
    broken = list(step.invalid_tool_calls) if step is not None else []
    if protocol == "native" and broken:
        return [
            m.observation({"id": c.get("id"), "name": c.get("name")}, text, is_error=True)
            for c in broken
        ]
    return [m.agent_note(text, "invalid")]


def _nudge(step: AIMessage | None) -> BaseMessage:
    names = ", ".join(dict.fromkeys(c["name"] for c in (step.tool_calls if step else [])))
    text = (
        f"You already called {names} with exactly this input and got exactly this result. "
        "Calling it again will not change the answer: use what you have, try a different "
        "input or tool, or give your Final Answer."
    )
    _tell(text)
    return m.agent_note(text, "repeat")


def _tell(text: str) -> None:
    get_stream_writer()({"event": "observation", "tool": None, "text": text, "is_error": True})


def call_signature(step: AIMessage | None, results: list[ToolMessage]) -> str:
    """What one iteration did: its tools, inputs and observations, as a short digest."""
    by_id = {r.tool_call_id: r.text for r in results}
    done = sorted(
        json.dumps([c["name"], c["args"], by_id.get(c["id"])], sort_keys=True, default=str)
        for c in (step.tool_calls if step is not None else [])
    )
    return hashlib.blake2b("\n".join(done).encode(), digest_size=12).hexdigest()


def _next(ctx: AgentContext, changes: dict[str, Any], done: int, remaining: int) -> str:
    if changes.get("repeats", 0) >= STUCK_AFTER:
        return "stuck"
    if changes["invalid_streak"] >= ctx.max_invalid:
        return "error"
    if done >= ctx.max_steps or remaining <= AFTER_OBSERVE:
        if ctx.answer_on_limit and remaining > WRAP_UP:
            return "wrap_up"
        return "max_steps"
    return "running"
