"""review: pause once for a person's decisions on the calls of this step that need approval.

It runs between think and act, so one interrupt carries every call of the step (LangChain's
human-in-the-loop schema, `graph.tooling.approval`), and nothing is executed before all the
decisions are in. On resume LangGraph runs this node again from the start: it only reads the
decisions and rewrites the step, so running it twice has no side effect.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.types import interrupt

from graph import messages as m
from graph.nodes.observe import last_step
from graph.state import AgentState
from graph.tooling.approval import approval_request, read_decisions, rejection_message


def review(state: AgentState) -> dict[str, Any]:
    run = state.get("run") or {}
    step, _ = last_step(state.get("messages") or [])
    waiting = set(run.get("review") or [])
    if step is None or not waiting:
        return {"run": {"review": []}}
    calls = [call for call in step.tool_calls if call["id"] in waiting]
    decisions = read_decisions(interrupt(approval_request(calls)), len(calls))
    written: list[BaseMessage] = []
    if isinstance(decisions, str):  # the reply did not answer each call once: run none
        for call in calls:
            text = f"The call to {call['name']} was not run: {decisions}."
            written.append(m.observation(call, text, is_error=True))
        return {"run": {"review": []}, "messages": written}
    edited: dict[str, dict[str, Any]] = {}
    for call, decision in zip(calls, decisions, strict=True):
        if decision.type == "edit":
            edited[call["id"]] = {
                **call,
                "name": decision.name or call["name"],
                "args": decision.args,
            }
        elif decision.type == "reject":
            text = rejection_message(call["name"], decision.message)
            written.append(m.observation(call, text, is_error=True))
    if edited:
        written.insert(0, _rewritten(step, edited))
    return {"run": {"review": []}, "messages": written}


def _rewritten(step: AIMessage, edited: dict[str, dict[str, Any]]) -> AIMessage:
    """The step as a person edited it (same id: it replaces the model's); the model's own
    text no longer matches, so the text protocol renders the edited call instead."""
    calls = [edited.get(call["id"], call) for call in step.tool_calls]
    metadata = {k: v for k, v in step.response_metadata.items() if k != m.RAW}
    return step.model_copy(update={"tool_calls": calls, "response_metadata": metadata})
