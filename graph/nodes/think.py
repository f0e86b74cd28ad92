"""think: ask the model for the next step and store its decision as standard messages.

It never runs a tool. A new question starts a fresh run (counters, trace); tool calls left
unanswered by an earlier run (a new message sent during an approval pause) are answered as not
run, so the model is never told a tool ran when it did not.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph.message import add_messages
from langgraph.runtime import get_runtime

from graph import messages as m
from graph import protocols
from graph.models import factory
from graph.nodes.bindings import Bindings
from graph.nodes.finish import closing_update
from graph.nodes.model_call import ReplyTooLong, acall_model, call_model
from graph.nodes.turn import new_turn
from graph.protocols.text.observations import QUOTED_THOUGHT
from graph.protocols.text.prompts import OBSERVATION
from graph.redaction import redact
from graph.settings import AgentContext
from graph.state import AgentState
from graph.steps import latest_observations, run_messages
from graph.tooling.approval import needs_approval
from graph.tooling.runner import ArgumentsError, coerce_arguments

AFTER_THINK = (
    4  # supersteps after think that still end through finish: review, act, observe, finish
)
WRAP_UP = (
    "You have used all {steps} steps. Do not call any more tools. From what you have found so "
    "far, give your best answer now"
)


@dataclass
class Plan:
    """What think settled before calling the model (or its whole update, when it need not)."""

    update: dict[str, Any]
    run: dict[str, Any] = field(default_factory=dict)
    ctx: AgentContext | None = None
    protocol: str = "native"
    runnable: Runnable | None = None
    request: list[BaseMessage] = field(default_factory=list)
    tools: list[Any] = field(default_factory=list)
    wrap_up: bool = False
    fallback: str | None = None
    done: bool = False
    known_ids: frozenset[str] = frozenset()
    forced: AIMessage | None = None  # the only reply the grammar allows: no model call needed


def make_think(b: Bindings) -> tuple[Any, Any]:
    """The sync and async forms of the node: they differ only in how the model is called."""

    def think(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        plan: Plan | dict[str, Any] = prepare(b, state)
        while isinstance(plan, Plan) and not plan.done:
            try:
                reply = plan.forced or call_model(
                    plan.runnable, plan.request, config, **_bounds(plan)
                )
            except Exception as exc:
                plan = retry_or_fail(b, state, plan, exc)
                continue
            return decide(b, plan, reply)
        return plan if isinstance(plan, dict) else plan.update

    async def athink(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        await _load_tools(b)
        plan: Plan | dict[str, Any] = prepare(b, state)
        while isinstance(plan, Plan) and not plan.done:
            try:
                reply = plan.forced or await acall_model(
                    plan.runnable, plan.request, config, **_bounds(plan)
                )
            except Exception as exc:
                plan = retry_or_fail(b, state, plan, exc)
                continue
            return decide(b, plan, reply)
        return plan if isinstance(plan, dict) else plan.update

    return think, athink


def retry_or_fail(b: Bindings, state: AgentState, plan: Plan, exc: Exception) -> Plan | dict:
    """The text-protocol retry of a native request the endpoint refused for its tools (once),
    or the run's error update."""
    if isinstance(exc, TimeoutError) and _run_time_left(plan) <= 0.1:
        return {**plan.update, "status": "timeout"}  # the run's deadline, not the endpoint's
    retry = None if plan.fallback else fallback_plan(b, state, plan, exc)
    return retry if retry is not None else failed(plan, exc)


async def _load_tools(b: Bindings) -> None:
    """Load the run's tools off the loop first, so `prepare` finds them cached."""
    with contextlib.suppress(ValueError, ImportError, RuntimeError):  # prepare reports it
        await b.atools(b.context(get_runtime().context))


def _run_time_left(plan: Plan) -> float:
    started = plan.run.get("started_at")
    if not plan.ctx.run_timeout or not started:
        return float("inf")
    return plan.ctx.run_timeout - (time.time() - started)


def _bounds(plan: Plan) -> dict[str, Any]:
    """The model call's deadline: its own timeout, or what is left of the run's."""
    timeout = max(0.1, min(plan.ctx.model_timeout, _run_time_left(plan)))
    return {"timeout": timeout, "max_chars": plan.ctx.max_reply_chars}


def prepare(b: Bindings, state: AgentState, protocol: str | None = None) -> Plan:
    reset = new_turn(state)
    run = {**(state.get("run") or {}), **((reset or {}).get("run") or {})}
    update: dict[str, Any] = dict(reset or {})
    if reset is not None:
        update["run"] = dict(run)
    view = add_messages(state.get("messages", []), update.get("messages", []))  # as stored
    try:
        ctx = b.limits(b.context(get_runtime().context))
        tools = b.tools(ctx)
        b.chat_model(ctx)
    except (ValueError, ImportError, RuntimeError) as exc:  # settings, tool names, MCP servers
        return Plan({**update, "status": "error", "error": redact(exc)}, run, done=True)
    remaining = state.get("remaining_steps", 10**6)
    wrap_up = bool(run.get("wrap_up"))
    plan = Plan(update, run, ctx)
    if not wrap_up and remaining <= AFTER_THINK:
        return _out_of_room(plan, remaining, view)
    started = run.get("started_at")
    if ctx.run_timeout and started and time.time() - started >= ctx.run_timeout:
        plan.update["status"] = "timeout"
        plan.done = True
        return plan
    chosen = protocol or run.get("protocol") or ctx.protocol
    local = b.is_local(ctx)
    if chosen == "auto":
        chosen = "text" if local or factory.known_text_only(ctx.model) else "native"
    if run.get("protocol") != chosen:
        plan.update["run"] = {**plan.update.get("run", {}), "protocol": chosen}
    approve = ctx.approve
    if list(run.get("approve") or []) != approve:  # rides along: a resume keeps the policy
        plan.update["run"] = {**plan.update.get("run", {}), "approve": approve}
    in_run = run_messages(view, run.get("question_id"))
    observed = sum(isinstance(x, ToolMessage) and x.status != "error" for x in in_run)
    budget_spent = bool(ctx.answer_after) and observed >= ctx.answer_after
    offered = [] if wrap_up or budget_spent else tools
    request = protocols.request_messages(chosen, view, offered, ctx.system_prompt)
    if wrap_up:
        text = WRAP_UP.format(steps=ctx.max_steps) + (
            " as a Final Answer." if chosen == "text" else "."
        )
        request.append(HumanMessage(content=text))
    plan.protocol, plan.tools, plan.wrap_up, plan.request = chosen, tools, wrap_up, request
    plan.known_ids = frozenset(x.id for x in view if x.id)
    quotes = b.quotes(ctx, chosen, local, latest_observations(in_run))
    plan.runnable = b.bound(ctx, chosen, offered, local, quotes)
    if len(quotes) == 1 and not offered and not wrap_up:  # one answer allowed: it is that
        text = f"Thought: {QUOTED_THOUGHT}\nFinal Answer: {quotes[0]}"
        plan.forced = AIMessage(content=text, response_metadata={m.QUOTED: True})
    return plan


def _out_of_room(plan: Plan, remaining: int, view: list[BaseMessage]) -> Plan:
    """The caller's recursion_limit leaves no room for another step: end through finish, or
    here when even finish does not fit."""
    plan.update["status"] = "max_steps"
    plan.done = True
    if remaining <= 1:
        state_view = {**plan.update, "run": plan.run}
        closing = closing_update(state_view, plan.ctx, view, out_of_room=True)
        plan.update.update(closing)
        plan.update["run"] = {**plan.update.get("run", {}), "closed": True}
    return plan


def fallback_plan(b: Bindings, state: AgentState, plan: Plan, exc: Exception) -> Plan | None:
    """Under `auto`, a native request the endpoint refused for its tools is sent as text."""
    if plan.ctx.protocol != "auto" or plan.protocol != "native":
        return None
    if not factory.tools_unsupported(exc):
        return None
    retry = prepare(b, state, protocol="text")
    if retry.done:
        return None
    retry.fallback = (
        f"The endpoint refused tools ({factory.error_message(exc)}); this run continues with "
        "the text ReAct protocol."
    )
    return retry


def failed(plan: Plan, exc: Exception) -> dict[str, Any]:
    key = os.environ.get(plan.ctx.api_key_env)
    if isinstance(exc, ReplyTooLong):
        text = f"The model call failed: {exc}; ask a narrower question or raise the limit."
    else:
        text = factory.describe_failure(exc, plan.ctx, secret=key)
    return {**plan.update, "status": "error", "error": redact(text, [key])}


def decide(b: Bindings, plan: Plan, reply: AIMessage) -> dict[str, Any]:
    """Turn the reply into the stored step: tool calls to run, the answer, or a correction."""
    decision = protocols.decide(plan.protocol, reply, plan.tools)
    write = get_stream_writer()
    update = plan.update
    meta: dict[str, Any] = {m.PROTOCOL: plan.protocol}
    if plan.fallback:
        meta[m.FALLBACK] = plan.fallback
        write({"event": "fallback", "text": plan.fallback})
    if decision.thought:
        write({"event": "thought", "text": decision.thought})
    if plan.wrap_up:
        text = (
            decision.text
            if isinstance(decision, protocols.Answer)
            else (reply.text.strip() or decision.thought)
        )
        return {**update, "status": "max_steps", "answer": text or None}
    raw = {m.RAW: _cleaned(reply.text)} if plan.protocol == "text" else {}
    if isinstance(decision, protocols.Answer):
        if plan.protocol == "native" and decision.text != reply.text:
            reply = reply.model_copy(update={"content": decision.text})
        stored = _stored(
            reply,
            plan,
            decision.text,
            [],
            {**meta, **raw, m.MARK: "answer", m.THOUGHT: decision.thought},
        )
        write({"event": "answer", "text": decision.text})
        return {
            **update,
            "status": "answered",
            "answer": decision.text,
            "messages": [*update.get("messages", []), stored],
        }
    if isinstance(decision, protocols.Act):
        calls = _fitted(decision.calls, plan.tools) if plan.protocol == "text" else decision.calls
        if decision.note:
            meta[m.NOTE] = decision.note
        stored = _stored(reply, plan, decision.thought, calls, {**meta, **raw, m.MARK: "step"})
        for call in calls:
            write({"event": "action", "tool": call["name"], "input": call["args"]})
        by_name = {t.name: t for t in plan.tools}
        policy = {*plan.ctx.approve, *(plan.run.get("approve") or [])}
        review = [c["id"] for c in calls if needs_approval(by_name.get(c["name"]), policy)]
        run = {**update.get("run", {}), "review": review, "invalid": None}
        return {**update, "run": run, "messages": [*update.get("messages", []), stored]}
    stored = _stored(
        reply,
        plan,
        reply.text if plan.protocol == "native" else _cleaned(reply.text),
        None,
        {**meta, **raw, m.MARK: "invalid", m.ERROR: decision.error},
    )
    run = {**update.get("run", {}), "invalid": decision.error, "review": []}
    return {**update, "run": run, "messages": [*update.get("messages", []), stored]}


def _stored(
    reply: AIMessage, plan: Plan, content: str, calls: list | None, meta: dict[str, Any]
) -> AIMessage:
    """The reply as the conversation keeps it, under an id of its own (a model that returns the
    same message object twice must not overwrite the earlier step)."""
    if not reply.id or reply.id in plan.known_ids:
        reply = reply.model_copy(update={"id": f"lc_{uuid.uuid4()}"})
    if plan.protocol == "native" and calls is not None:
        return m.marked(reply.model_copy(update={"tool_calls": calls} if calls else {}), **meta)
    if plan.protocol == "native":
        return m.marked(reply, **meta)
    return AIMessage(
        content=content,
        tool_calls=calls or [],
        id=reply.id,
        usage_metadata=reply.usage_metadata,
        response_metadata={**reply.response_metadata, **meta},
    )


def _fitted(calls: list[dict[str, Any]], tools: list[Any]) -> list[dict[str, Any]]:
    """Text-protocol inputs fitted to the tool's schema now, so the stored call (and every tool
    card that shows it) has the arguments the tool will get."""
    by_name = {t.name: t for t in tools}
    out = []
    for call in calls:
        tool = by_name.get(call["name"])
        args = call["args"]
        if tool is not None:
            with contextlib.suppress(ArgumentsError):
                args = coerce_arguments(
                    tool, args.get("__arg1") if set(args) == {"__arg1"} else args
                )
        out.append({**call, "args": args, "type": "tool_call"})
    return out


def _cleaned(text: str) -> str:
    from graph.protocols.text.reader import clean_reply

    return clean_reply(text) if OBSERVATION.lower() in text.lower() else text.strip()
