"""review: the approval step, between think and act. LangChain's `HumanInTheLoopMiddleware`
(built for this run, `graph.middleware.approvals`) pauses once for every call of the step that
needs a decision; nothing runs before all the decisions are in.

On resume LangGraph runs this node again from the start: the middleware reads the decisions,
and the node rewrites the step. No model call and no tool runs here, so a resume repeats
neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.config import get_config, get_stream_writer
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import get_runtime

from graph import messages as m
from graph.loop.bindings import Bindings
from graph.middleware.approval_seal import approval_key, seal
from graph.middleware.approvals import (
    EDITS,
    approval_middleware,
    not_run,
    reviewed,
    unreadable,
    valid_edits,
)
from graph.state import AgentState


def make_review(b: Bindings) -> tuple[Any, Any]:
    """The sync and async forms; the async one reads the seal key off the event loop first
    (the first read may create it on disk)."""

    def review(state: AgentState) -> dict[str, Any]:
        run = state.get("run") or {}
        messages = state.get("messages") or []
        step, _ = m.last_step(messages)
        waiting = set(run.get("review") or [])
        done: dict[str, Any] = {"run": {"review": []}}
        if step is None or not waiting:
            return done
        ctx = b.context(get_runtime().context)
        policy = run.get("approve") or ctx.approve
        hitl = approval_middleware(policy, b.tools(ctx), ctx.approval_mode)
        if hitl is None:
            return done
        if ctx.approval_mode == "per_call":  # HITL pauses inside act, per call: nothing sealed
            asking = [c["id"] for c in step.tool_calls if c["id"] in waiting]
            return {"run": {"review": [], "asking": asking}}  # a new turn reads it (loop.turn)
        # the middleware edits the step it finds in place: give it a copy of it
        view = [*messages[: messages.index(step)], _copy(step)]
        try:
            update = hitl.after_model({**state, "messages": view}, get_runtime())
        except GraphBubbleUp:
            raise
        except Exception as exc:  # a resume the middleware cannot read: nothing runs
            calls = [c for c in step.tool_calls if c["id"] in waiting]
            return {**done, "messages": not_run(calls, unreadable(exc))}
        written = reviewed(step, waiting, update)
        answered = {x.tool_call_id for x in written if isinstance(x, ToolMessage)}
        _said(x for x in written if isinstance(x, ToolMessage))
        final = next((x for x in written if isinstance(x, AIMessage)), step)
        thread = (get_config().get("configurable") or {}).get("thread_id")
        info = get_runtime().execution_info
        task = info.task_id if info is not None else None
        seals = {
            c["id"]: seal(thread, c, task)
            for c in final.tool_calls
            if c["id"] in waiting and c["id"] not in answered
        }
        out = {**done, EDITS: valid_edits(step, update), "approvals": seals}
        if written:
            out["messages"] = written
        return out

    async def areview(state: AgentState) -> dict[str, Any]:
        if (state.get("run") or {}).get("review"):
            await asyncio.to_thread(approval_key)
        return review(state)

    return review, areview


def _said(results: Iterable[ToolMessage]) -> None:
    """The results a person's decision wrote in a call's place (rejected, or answered for
    the tool), streamed as act streams a call's result: a live reader sees the call did not
    run, where it would read an action followed by the answer."""
    write = get_stream_writer()
    for result in results:
        write(m.observation_event(result))


def _copy(step: AIMessage) -> AIMessage:
    return step.model_copy(update={"tool_calls": list(step.tool_calls)})
