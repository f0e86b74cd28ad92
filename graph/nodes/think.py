"""think: ask the model for the next step, through the middleware's `wrap_model_call` chain,
and store its decision as standard messages.

Three parts: the plan (`graph.loop.plan`: settings, protocol, limits, the `ModelRequest`),
the model call through the chain (its innermost handler is `graph.loop.request`), and
the decision read from the `AIMessage` the chain returns. It never runs a tool.
"""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from typing import Any

from langchain.agents.middleware import ModelResponse
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import get_runtime
from langgraph.types import Command

from graph import messages as m
from graph._compat import checkpointed
from graph.loop.bindings import Bindings
from graph.loop.plan import Plan, failure, prepare
from graph.loop.request import aexecute, execute
from graph.loop.turn import unanswered
from graph.middleware.approvals import needs_approval
from graph.middleware.chain import achain_model_call, chain_model_call
from graph.middleware.hooks import marked_as_agents
from graph.persistence.ledger import Ledger, ledger_for
from graph.state import AgentState
from graph.usage import counted, with_tokens


def make_think(b: Bindings) -> tuple[Any, Any]:
    """The sync and async forms of the node: they differ only in how the model is called."""

    def think(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        with counted() as tokens:
            plan = prepare(b, state, _cut_short(state, config))
            if plan.done:
                update = plan.update
            else:
                chain = chain_model_call(
                    b.model_wraps(plan.ctx), partial(execute, b, plan, config=config)
                )
                try:
                    update = decide(plan, *chain(plan.request))
                except GraphBubbleUp:  # a middleware's `interrupt()`: a pause, not a failure
                    raise
                except Exception as exc:
                    update = failure(plan, exc)
        return with_tokens(state, update, tokens)

    async def athink(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        await _load_tools(b)
        ids, ledger = _asked(state, config)
        started = frozenset(await ledger.astarted(ids)) if ledger else frozenset()
        with counted() as tokens:
            plan = prepare(b, state, started)
            if plan.done:
                update = plan.update
            else:
                call = partial(aexecute, b, plan, config=config)
                chain = achain_model_call(b.model_awraps(plan.ctx), call)
                try:
                    update = decide(plan, *(await chain(plan.request)))
                except GraphBubbleUp:
                    raise
                except Exception as exc:
                    update = failure(plan, exc)
        return with_tokens(state, update, tokens)

    return think, athink


async def _load_tools(b: Bindings) -> None:
    """Load the run's tools off the loop first, so `prepare` finds them cached."""
    with contextlib.suppress(ValueError, ImportError, RuntimeError):  # prepare reports it
        ctx = b.context(get_runtime().context, read_env=False)
        await b.atools(ctx)
        if set(ctx.approve) - {"*"}:  # the registry, for the approvals check
            await asyncio.to_thread(b.approvable, ctx)


def _asked(state: AgentState, config: RunnableConfig) -> tuple[list[str], Ledger | None]:
    """At a new turn, the last step's calls with no result, and the ledger that knows whether
    they started (a run cancelled or interrupted mid-call); none for a run without
    checkpoints, which keeps no ledger."""
    ids = unanswered(state)
    if not ids or not checkpointed(config):
        return ids, None
    runtime = get_runtime()
    info = runtime.execution_info
    return ids, ledger_for(runtime.store, info.thread_id if info else None)


def _cut_short(state: AgentState, config: RunnableConfig) -> frozenset[str]:
    ids, ledger = _asked(state, config)
    return frozenset(ledger.started(ids)) if ledger else frozenset()


# statuses a loop policy sets to end the run before or at its call (`StepLimit`, `RepeatGuard`,
# `Corrections`)
ENDED_BY_POLICY = frozenset({"max_steps", "stuck", "error"})


def decide(plan: Plan, response: ModelResponse, commands: list[Command]) -> dict[str, Any]:
    """The update for the step the chain returned: tool calls to run, the answer, or a
    correction. A reply a middleware wrote itself (no agent mark) is read by its shape. A step
    carries its number in the run (what the step limit counts), and the bookkeeping is written
    only where it changes: an ordinary step writes its messages alone."""
    written = marked_as_agents(list(response.result), lambda: plan.known_ids)
    step = next((x for x in reversed(written) if isinstance(x, AIMessage)), None)
    before = plan.update.get("messages", [])  # a new turn's answers for calls never run
    update = _with_commands({k: v for k, v in plan.update.items() if k != "messages"}, commands)
    seen = {**plan.run, **update.get("run", {})}  # the bookkeeping after the policies' writes
    if response.structured_response is not None:
        update["structured_response"] = response.structured_response
    # a middleware's Command adds its messages after the reply, as in `create_agent`
    after = update.pop("messages", [])
    messages = [*before, *_unique(written, plan), *after]
    write = get_stream_writer()
    if update.get("status") in ENDED_BY_POLICY and step is None:  # ended without a call
        return {**update, "messages": messages} if messages else update
    if step is None:
        changes = _changed(seen, invalid="the model returned no reply", review=[])
        return {**update, "run": {**update.get("run", {}), **changes}, "messages": messages}
    fallback = step.response_metadata.get(m.FALLBACK)
    if fallback:  # the rest of the run keeps to the text protocol
        write({"event": "fallback", "text": fallback})
        update["run"] = {**update.get("run", {}), "protocol": "text"}
    kind = m.kind_of(step) or ("step" if step.tool_calls else "answer")
    thought = step.response_metadata.get(m.THOUGHT) or (step.text if step.tool_calls else "")
    if thought:
        write({"event": "thought", "text": thought})
    if update.get("status") == "max_steps":  # the step limit's closing call (`StepLimit`)
        text = step.text.strip() or thought  # finish writes it as the closing message
        if response.structured_response is not None:  # the output tool's call answered
            text = m.structured_answer(written)
        calls = {c["id"] for c in step.tool_calls}  # not kept: nor are their results
        told = [  # what a policy told the model before it
            x for x in written if x is not step and getattr(x, "tool_call_id", None) not in calls
        ]
        kept = [*before, *told, *after]
        return {**update, "answer": text or None, **({"messages": kept} if kept else {})}
    if kind != "invalid" and not (kind == "step" and step.tool_calls):
        # finish reads it again from the message as every after_model hook left it; an
        # output tool's call (`ToolStrategy`) answers with its arguments
        text = m.structured_answer(written) if step.tool_calls else step.text
        return {**update, "status": "answered", "answer": text, "messages": messages}
    messages = _numbered(messages, step, plan.steps + 1)
    if kind == "invalid":
        error = step.response_metadata.get(m.ERROR) or "the reply could not be used"
        changes = _changed(seen, invalid=error, review=[])
    else:
        for call in step.tool_calls:
            write({"event": "action", "tool": call["name"], "input": call["args"]})
        by_name = {t.name: t for t in plan.tools}
        policy = {*plan.ctx.approve, *(plan.run.get("approve") or [])}
        review = [
            c["id"] for c in step.tool_calls if needs_approval(by_name.get(c["name"]), policy)
        ]
        changes = _changed(seen, review=review, invalid=None, invalid_streak=0)
    run = {**update.get("run", {}), **changes}
    return {**update, **({"run": run} if run else {}), "messages": messages}


def _changed(run: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The bookkeeping fields whose value this step changes (each write costs a stored row)."""
    return {key: value for key, value in fields.items() if run.get(key) != value}


def _numbered(messages: list[BaseMessage], step: AIMessage, number: int) -> list[BaseMessage]:
    if step.response_metadata.get(m.STEP) == number:  # read_reply numbered it already
        return messages
    numbered = step.model_copy(
        update={"response_metadata": {**step.response_metadata, m.STEP: number}}
    )
    return [numbered if x is step else x for x in messages]


def _unique(written: list[BaseMessage], plan: Plan) -> list[BaseMessage]:
    """Messages a middleware returned under an id the thread already has (the same object
    twice) get ids of their own, so they never overwrite an earlier step."""
    out = []
    for message in written:
        if isinstance(message, AIMessage) and (not message.id or message.id in plan.known_ids):
            message = message.model_copy(update={"id": f"lc_{m.new_call_id()}"})
        out.append(message)
    return out


def _with_commands(update: dict[str, Any], commands: list[Command]) -> dict[str, Any]:
    """The state updates `wrap_model_call` layers returned as `Command`s, merged in (messages
    added, other keys overwritten, inner layers first)."""
    merged = dict(update)
    for command in commands:
        if command.goto or command.resume is not None or command.graph is not None:
            raise NotImplementedError(
                "A wrap_model_call Command may only update state; use jump_to in a "
                "before_model or after_model hook to change the route."
            )
        extra = command.update if isinstance(command.update, dict) else {}
        for key, value in extra.items():
            if key == "messages":
                merged["messages"] = [
                    *merged.get("messages", []),
                    *(value if isinstance(value, list) else [value]),
                ]
            else:
                merged[key] = value
    return merged
