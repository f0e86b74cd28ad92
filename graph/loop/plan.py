"""What think settles before the model is called: the run's settings and tools, the protocol,
the limits that end a run here, and the `ModelRequest` the middleware chain sees.

The request holds standard messages and tools whatever the protocol: how the text protocol
renders them for the model is decided only when the request is executed
(`graph.loop.request`), so a middleware that changes the messages, the tools, the model
or the system prompt changes what is sent.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langgraph.graph.message import add_messages
from langgraph.runtime import get_runtime

from graph.loop.bindings import Bindings
from graph.loop.closing import closing_update
from graph.loop.turn import new_turn, sent_back
from graph.messages import ID_OF
from graph.models import factory, failures
from graph.models.call import Limits, ReplyTooLong
from graph.policies.run_deadline import clock_start
from graph.policies.step_limit import CLOSING_ROOM
from graph.protocols import conversation
from graph.redaction import redact
from graph.settings import AgentContext
from graph.state import AgentState
from graph.steps import steps_taken
from tools.mcp.approvals import check_approvals

_NO_ID = frozenset({None, ""})


@dataclass
class Plan:
    """What think settled before calling the model (or its whole update, when it need not)."""

    update: dict[str, Any]
    run: dict[str, Any] = field(default_factory=dict)
    ctx: AgentContext | None = None
    protocol: str = "native"
    runnable: Runnable | None = None  # the default binding of the default model and tools
    request: ModelRequest | None = None
    tools: list[Any] = field(default_factory=list)  # the run's tools (what act can run)
    quotes: list[str] = field(default_factory=list)
    local: bool = False
    done: bool = False
    known_ids: frozenset[str] = frozenset()
    view: list[BaseMessage] = field(default_factory=list)  # the thread as this step sees it
    steps: int = 0  # steps the model already took in this run
    conversation_size: int = 0  # the request's messages as built (an append in place shows)
    given_model: Any = None  # the model object build_graph was given, if any (its failures)


def prepare(b: Bindings, state: AgentState, started: frozenset[str] = frozenset()) -> Plan:
    """`started`: calls of the last step with no result that the call ledger saw start."""
    reset = new_turn(state, started)
    answered = sent_back(state) if reset is None else None
    run = {**(state.get("run") or {}), **((reset or answered or {}).get("run") or {})}
    update: dict[str, Any] = dict(reset or answered or {})
    if reset is not None or answered is not None:
        update["run"] = dict(run)
    stored = state.get("messages") or []
    added = update.get("messages")
    view = add_messages(stored, added) if added else stored  # as stored after this step
    runtime = get_runtime()
    try:
        ctx = b.context(runtime.context, read_env=reset is not None)  # at a turn's start
        tools = b.tools(ctx)
        if set(ctx.approve) - {"*"}:  # an entry naming no tool is a mistake, said at once
            check_approvals(ctx.approve, b.approvable(ctx))
        model = b.chat_model(ctx)
    except (ValueError, ImportError, RuntimeError) as exc:  # settings, tool names, MCP servers
        return Plan({**update, "status": "error", "error": redact(exc)}, run, done=True)
    remaining = state.get("remaining_steps", 10**6)
    plan = Plan(update, run, ctx, given_model=b.model)
    if remaining - b.after_think_hooks <= CLOSING_ROOM:  # not even a closing call fits
        return _out_of_room(plan, remaining, view)
    chosen = run.get("protocol") or ctx.protocol
    local = b.is_local(ctx)
    if chosen == "auto":
        chosen = "text" if local or factory.known_text_only(ctx.model) else "native"
    if run.get("protocol") != chosen:
        plan.update["run"] = {**plan.update.get("run", {}), "protocol": chosen}
    # the run's approval policy rides along: a resume without the context that set it (the
    # SDK, Agent Chat UI and Studio resume with a command alone) still asks; a new turn
    # takes its own
    kept = [] if reset is not None else list(run.get("approve") or [])
    approve = [*kept, *(name for name in ctx.approve if name not in kept)]
    if list(run.get("approve") or []) != approve:
        plan.update["run"] = {**plan.update.get("run", {}), "approve": approve}
    messages = conversation(view)
    plan.protocol, plan.tools, plan.local = chosen, tools, local
    plan.conversation_size = len(messages)
    plan.known_ids = frozenset(map(ID_OF, view)) - _NO_ID  # read in C: every step, every message
    plan.view = view
    plan.steps = steps_taken(view, run)
    plan.quotes = b.quotes(ctx, chosen, local, view, run.get("question_id"))
    plan.runnable = b.bound(ctx, chosen, tools, local, plan.quotes)
    seen = {**state, **{k: v for k, v in plan.update.items() if k != "messages"}}
    seen["run"] = {**run, **plan.update.get("run", {})}  # the bookkeeping as this step sees it
    plan.request = ModelRequest(  # the loop policies (graph/policies) shape it in the chain
        model=model,
        messages=messages,
        system_message=b.system_message_for(ctx),
        tools=list(tools),
        state=seen,
        runtime=runtime,
    )
    return plan


def _out_of_room(plan: Plan, remaining: int, view: list[BaseMessage]) -> Plan:
    """The caller's recursion_limit leaves no room for a call: end through finish, or here
    when even finish does not fit (the step limit's own end, with or without a closing call,
    is `graph.policies.step_limit`)."""
    plan.update["status"] = "max_steps"
    plan.done = True
    if remaining <= 1:
        state_view = {**plan.update, "run": plan.run}
        closing = closing_update(state_view, plan.ctx, view, out_of_room=True)
        plan.update.update(closing)
        plan.update["run"] = {**plan.update.get("run", {}), "closed": True}
    return plan


def failure(plan: Plan, exc: Exception) -> dict[str, Any]:
    """The run's update when its model call failed: `timeout` when the run's own deadline
    passed (not the endpoint's), else the error in one sentence."""
    if isinstance(exc, TimeoutError) and run_time_left(plan) <= 0.1:
        return {**plan.update, "status": "timeout"}
    return failed(plan, exc)


def failed(plan: Plan, exc: Exception) -> dict[str, Any]:
    key = os.environ.get(plan.ctx.api_key_env)
    if isinstance(exc, ReplyTooLong):
        text = f"The model call failed: {exc}; ask a narrower question or raise the limit."
    else:
        text = failures.describe_failure(exc, plan.ctx, secret=key, given=plan.given_model)
    return {**plan.update, "status": "error", "error": redact(text, [key])}


def run_time_left(plan: Plan) -> float:
    started = clock_start(plan.run) if plan.ctx.run_timeout else None
    if not started:
        return float("inf")
    return plan.ctx.run_timeout - (time.time() - started)


def bounds(plan: Plan) -> Limits:
    """The model call's deadline (its own timeout, or what is left of the run's) and cap."""
    timeout = max(0.1, min(plan.ctx.model_timeout, run_time_left(plan)))
    return Limits(timeout, plan.ctx.max_reply_chars)
