"""One `ModelRequest` executed: rendered for the run's protocol, sent with the run's deadline,
and read back into the step the conversation stores.

This is the innermost handler of the `wrap_model_call` chain, so every middleware sees the
same thing under both protocols: a request of standard messages and tools, and a
`ModelResponse` whose `AIMessage` carries the parsed step as `tool_calls` (under the text
protocol, the model's own text is kept in `response_metadata`).
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from graph import messages as m
from graph import protocols
from graph.loop.bindings import Bindings
from graph.loop.plan import Plan, bounds
from graph.models.call import acall_model, call_model
from graph.policies.structured_answer import StructuredAnswer
from graph.protocols.native import answer_text
from graph.protocols.text.chat_model import TextReAct
from graph.protocols.text.prompts import READ, step_as_text, step_digest
from graph.protocols.text.replies import read_text_reply
from graph.tooling.runner import ArgumentsError, coerce_arguments


def execute(
    b: Bindings, plan: Plan, request: ModelRequest, config: RunnableConfig
) -> ModelResponse:
    plan, request = for_this_call(b, plan, request)
    runnable, messages = rendered(b, plan, request)
    reply = call_model(runnable, messages, config, bounds(plan))
    return ModelResponse(result=[read_reply(plan, reply, request)])


async def aexecute(
    b: Bindings, plan: Plan, request: ModelRequest, config: RunnableConfig
) -> ModelResponse:
    plan, request = for_this_call(b, plan, request)
    runnable, messages = rendered(b, plan, request)
    reply = await acall_model(runnable, messages, config, bounds(plan))
    return ModelResponse(result=[read_reply(plan, reply, request)])


def for_this_call(b: Bindings, plan: Plan, request: ModelRequest) -> tuple[Plan, ModelRequest]:
    """The plan for this call: the text protocol when a policy swapped the model for
    `TextReAct(model)` (the native-to-text fallback). The step is then rendered, read and
    stored as every text step is (the trace, the raw text, the grammar), with the inner model."""
    if not isinstance(request.model, TextReAct) or plan.protocol == "text":
        return plan, request
    inner = request.model.inner
    quotes = b.quotes(plan.ctx, "text", plan.local, [])
    default = inner is b.chat_model(plan.ctx)
    runnable = b.bound(
        plan.ctx, "text", plan.tools, plan.local, quotes, model=None if default else inner
    )
    changed = replace(plan, protocol="text", quotes=quotes, runnable=runnable)
    return changed, request.override(model=inner)


def rendered(b: Bindings, plan: Plan, request: ModelRequest) -> tuple[Runnable, list[Any]]:
    """The model as bound for this request, and the messages in the protocol's form."""
    tools = [t for t in request.tools if isinstance(t, BaseTool)]
    # sent as given, blocks and extras kept (`create_agent` sends it so; a middleware that
    # marks blocks for a provider's prompt cache needs them); the text protocol reads its text
    system: SystemMessage | None = request.system_message
    given = request.messages
    # the conversation as think built it, unless a middleware gave another
    prepared = (
        plan.request is not None
        and given is plan.request.messages
        and len(given) == (plan.conversation_size)
    )
    own = protocols.renders_own_prompt(request.model)
    messages = protocols.request_messages(
        plan.protocol, given, tools, system, prepared=prepared, own_prompt=own
    )
    removed = system is None and plan.request is not None and plan.request.system_message
    if removed and plan.protocol == "native":  # a middleware took the system message out
        messages = messages[1:]
    offered = [t.name for t in tools]
    if offered != [t.name for t in plan.tools]:
        _refuse_unknown(b, plan, offered)
    same = (
        request.model is b.chat_model(plan.ctx)
        and offered == [t.name for t in plan.tools]
        and [t for t in request.tools if not isinstance(t, BaseTool)] in ([], b.provider_tools)
        and request.tool_choice is None
        and not request.model_settings
    )
    if same:
        return plan.runnable, messages
    default = request.model is b.chat_model(plan.ctx)
    runnable = b.bound(  # cached when only the tools changed (a policy narrowed them)
        plan.ctx,
        plan.protocol,
        tools,
        plan.local,
        plan.quotes,
        model=None if default else request.model,
        provider_tools=[t for t in request.tools if isinstance(t, dict)],
        tool_choice=request.tool_choice,
        settings=request.model_settings,
    )
    return runnable, messages


def _refuse_unknown(b: Bindings, plan: Plan, offered: list[str]) -> None:
    """`create_agent`'s rule: a middleware that offers the model a tool the agent cannot run
    (not one of its tools, and no `wrap_tool_call` to run it) is refused before the call."""
    if b.tool_layers:
        return
    outputs = (p.outputs for p in b.policies if isinstance(p, StructuredAnswer))
    known = {t.name for t in plan.tools}.union(*outputs)
    unknown = [name for name in offered if name not in known]
    if unknown:
        raise ValueError(
            f"A middleware offered the model tools the agent cannot run ({', '.join(unknown)}):"
            " pass them to build_graph(tools=...) or a middleware's `tools`, or run them in a"
            " wrap_tool_call."
        )


def read_reply(plan: Plan, reply: AIMessage, request: ModelRequest) -> AIMessage:
    """The reply as the step the conversation stores: tool calls to run, the answer, or an
    unusable reply marked with why."""
    if m.refused(reply):
        return m.marked(reply, **{m.PROTOCOL: plan.protocol})  # for the middleware to see
    if plan.protocol == "text" and m.RAW not in reply.response_metadata:
        # the raw reply of a model that renders its own prompt (`renders_own_prompt`)
        reply = read_text_reply(reply, [t for t in request.tools if isinstance(t, BaseTool)])
    decision = protocols.decide(plan.protocol, reply)
    meta: dict[str, Any] = {m.PROTOCOL: plan.protocol}
    if plan.protocol == "text":  # what later requests send back for this step: never cut text
        meta[m.RAW] = decision.read or reply.text.strip()
    if isinstance(decision, protocols.Answer):
        # stored as returned (a provider's blocks go back to it unchanged), unless the answer
        # came with a text protocol label (`Final Answer:`), which the answer is without
        if plan.protocol == "native" and decision.text != answer_text(reply):
            reply = reply.model_copy(update={"content": decision.text})
        meta.update({m.MARK: "answer", m.THOUGHT: decision.thought})
        return _stored(reply, plan, decision.text, [], meta)
    if isinstance(decision, protocols.Act):
        calls = _own_ids(_fitted(decision.calls, plan.tools), plan.view)
        meta[m.STEP] = plan.steps + 1  # numbered here, in the one copy (think checks it)
        if decision.note:
            meta[m.NOTE] = decision.note
        # no kind mark: a step is known by its shape (tool calls), and every step stores it
        return _stored(reply, plan, decision.thought, calls, meta)
    meta.update({m.MARK: "invalid", m.ERROR: decision.error, m.STEP: plan.steps + 1})
    content = reply.text if plan.protocol == "native" else meta[m.RAW]
    return _stored(reply, plan, content, None, meta)


def _own_ids(calls: list[dict[str, Any]], view: list[BaseMessage]) -> list[dict[str, Any]]:
    """Each call under an id no other call of the thread has: some OpenAI-compatible servers
    number the calls of each reply (`call_0` at every step) or give two calls of one reply one
    id, and a result is paired with its call by id (in the requests, the trace and act)."""
    taken = {x.tool_call_id for x in view if isinstance(x, ToolMessage)}
    own = []
    for call in calls:
        if call["id"] in taken:
            call = {**call, "id": m.new_call_id()}
        taken.add(call["id"])
        own.append(call)
    return own


def _stored(
    reply: AIMessage, plan: Plan, content: str, calls: list | None, meta: dict[str, Any]
) -> AIMessage:
    """The reply as the conversation keeps it, under an id of its own (a model that returns the
    same message object twice must not overwrite the earlier step)."""
    own_id = reply.id if reply.id and reply.id not in plan.known_ids else f"lc_{uuid.uuid4()}"
    if plan.protocol == "native":  # one copy: the id, the calls as fitted, the marks
        update: dict[str, Any] = {"response_metadata": {**reply.response_metadata, **meta}}
        if own_id != reply.id:
            update["id"] = own_id
        if calls:
            update["tool_calls"] = calls
        return reply.model_copy(update=update)
    raw = meta.pop(m.RAW, None)
    read = reply.response_metadata.get(READ)
    kept = {k: v for k, v in reply.response_metadata.items() if k not in (m.RAW, READ)}
    # the step alone, every other field reset: a copy skips validating the reply again, and
    # `calls` are already well-formed (`_fitted`). The provider's extras go: its
    # `additional_kwargs` may hold native `tool_calls`, which a reload would turn into calls.
    bare = reply.model_copy(
        update={
            "content": content,
            "tool_calls": calls or [],
            "invalid_tool_calls": [],
            "additional_kwargs": {},
            "name": None,
            "id": own_id,
            "response_metadata": {**kept, **meta},
        }
    )
    return _with_text_if_not_derivable(bare, raw, read)


def _with_text_if_not_derivable(bare: AIMessage, raw: str | None, read: str | None) -> AIMessage:
    """A text step keeps the model's own text only where rendering the stored step gives
    something else (`step_as_text`): a well-formed step renders back to exactly what the model
    wrote, and keeping it twice would store every step's text again in the conversation. Nor
    where the step stored no longer says what was read from it (`read`: the digest of its
    words and calls; the arguments were fitted to the tool): it is then sent back as stored.
    Kept, the text keeps the digest, so a later edit or redaction is noticed
    (`prompts.step_as_text`)."""
    if raw is None or step_as_text(bare) == raw:
        return bare
    if read is not None and read != step_digest(bare.text, bare.tool_calls):
        return bare
    extra = {m.RAW: raw, READ: read} if read is not None else {m.RAW: raw}
    return bare.model_copy(update={"response_metadata": {**bare.response_metadata, **extra}})


def _fitted(calls: list[dict[str, Any]], tools: list[Any]) -> list[dict[str, Any]]:
    """The calls' inputs fitted to the tool's schema now (`coerce_arguments`: JSON text
    decoded, a lone misnamed key renamed), so the stored call, the review a person decides on
    and every tool card that shows it have the arguments the tool will get: fitted later,
    inside the tool runner, an approved call could run with other arguments than shown."""
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
