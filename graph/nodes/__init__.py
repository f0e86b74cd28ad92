"""The four nodes of the loop: think, act, observe, finish.

Each node reads the state and the run's context and returns a partial update. `think` and `act`
do I/O and come in a sync and an async form that share everything but the call itself;
`observe` and `finish` are plain bookkeeping.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, interrupt

from graph import protocols
from graph.models import factory as models
from graph.protocols.text import prompts
from graph.tooling.approval import approval_request, needs_approval, read_verdict, rejection_message
from graph.settings import ENV_VARS, AgentContext, ConfigError, resolve_context
from graph.protocols.text.grammar import grammar_for, request_options, use_grammar
from graph.state import ActInput, AgentState, PendingCall, Step, ToolResult, Usage, flat, pack
from graph.tooling.runner import run_tool_call, run_tool_call_sync

# Supersteps a route needs after the current node to still end through `finish`.
AFTER_THINK = 3  # act, observe, finish
AFTER_OBSERVE = 4  # think, act, observe, finish
WRAP_UP = 2  # think, finish

TERMINAL = frozenset({"answered", "max_steps", "error", "stuck"})
STUCK_AFTER = 3  # identical iterations in a row that end a run
T = TypeVar("T")


@dataclass
class Plan:
    """What `think` settled before calling the model (or the update, when it need not call)."""

    ctx: AgentContext | None
    update: dict[str, Any] = field(default_factory=dict)
    protocol: str = "native"
    fell_back: bool = False
    fallback_reason: str = ""
    runnable: Runnable | None = None
    messages: list[BaseMessage] = field(default_factory=list)
    tools: Sequence[BaseTool] = ()
    wrap_up: bool = False
    done: bool = False  # the update is final: no model call


class AgentNodes:
    """The nodes, bound to what `build_graph` was given (a model, tools, setting overrides)."""

    def __init__(
        self,
        model: BaseChatModel | None,
        tools: Sequence[BaseTool] | None,
        overrides: Mapping[str, Any],
        load_tools: Callable[[list[str] | None], list[BaseTool]],
    ) -> None:
        self._model = model
        self._fixed_tools = list(tools) if tools is not None else None
        self._overrides = dict(overrides)
        self._load_tools = load_tools
        self._bound: dict[tuple[Any, ...], Runnable] = {}
        self._prompts: dict[Any, str] = {}
        self._contexts: dict[tuple[Any, ...], tuple[Any, AgentContext]] = {}

    # -- settings --------------------------------------------------------------------------
    def context(self, runtime: Runtime[AgentContext] | None) -> AgentContext:
        """The run's settings. Cached per run context and environment: every node asks, and
        validating the same settings again costs more than the node's own work."""
        run_context = runtime.context if runtime is not None else None
        key = (id(run_context), tuple(map(os.environ.get, ENV_VARS.values())))
        cached = self._contexts.get(key)
        if cached is not None and cached[0] is run_context:
            return cached[1]
        ctx = resolve_context(self._overrides, run_context)
        if len(self._contexts) > 256:
            self._contexts.clear()
        self._contexts[key] = (run_context, ctx)
        return ctx

    def tools(self, ctx: AgentContext) -> list[BaseTool]:
        if self._fixed_tools is not None:
            return self._fixed_tools
        return self._load_tools(ctx.tools)

    def _bind(
        self, model: BaseChatModel, protocol: str, tools: Sequence[BaseTool], grammar: bool
    ) -> Runnable:
        key = (id(model), protocol, tuple(id(t) for t in tools), grammar)
        bound = self._bound.get(key)
        if bound is None:
            bound = protocols.bind(model, protocol, tools)
            if grammar:  # constrained decoding: every reply is a valid, executable step
                bound = bound.bind(**request_options(grammar_for(tools)))
            self._bound[key] = bound
        return bound

    # -- think -----------------------------------------------------------------------------
    def _plan(
        self, state: AgentState, runtime: Runtime[AgentContext], protocol: str | None = None
    ) -> Plan:
        reset = _run_reset(state)
        view: Mapping[str, Any] = {**state, **reset}
        try:
            ctx = self.context(runtime)
            tools = self.tools(ctx)
            model = self._model or models.resolve_model(ctx)
        except ValueError as exc:  # ConfigError, an unknown tool name
            return Plan(None, {**reset, "decision": "error", "error": str(exc)}, done=True)
        wrap_up = view.get("decision") == "wrap_up"
        remaining = state.get("remaining_steps", 10**6)
        if not wrap_up and remaining <= AFTER_THINK:
            update = {**reset, "decision": "max_steps"}
            if remaining > 1:
                return Plan(ctx, update, done=True)  # finish still fits
            final = final_update({**view, **update}, ctx)  # end here: nothing else fits
            if isinstance(reset.get("steps"), Overwrite):
                final["steps"] = Overwrite(final["steps"])
            return Plan(ctx, {**update, **final, "decision": "stopped"}, done=True)
        chosen = protocol or view.get("protocol") or ctx.protocol
        fell_back = chosen == "text" and ctx.protocol == "auto"
        local = self._model is None and models.wants_local(ctx)
        if chosen == "auto":
            chosen = "text" if local or models.known_text_only(ctx.model) else "native"
        grammar = use_grammar(ctx.constrained_decoding, protocol=chosen, local=local)
        offered = [] if wrap_up else tools
        messages = protocols.request_messages(
            chosen, view.get("messages", []), tools, ctx.system_prompt, self._prompts
        )
        if wrap_up:
            messages.append(HumanMessage(content=_wrap_up_request(chosen, ctx.max_steps)))
        update = dict(reset)
        if fell_back or view.get("protocol") != chosen:
            update["protocol"] = chosen
        if list(view.get("approve") or []) != ctx.approve:
            update["approve"] = ctx.approve  # rides along with each call: resumes keep it
        return Plan(
            ctx,
            update,
            protocol=chosen,
            fell_back=fell_back,
            runnable=self._bind(model, chosen, offered, grammar),
            messages=messages,
            tools=tools,
            wrap_up=wrap_up,
        )

    def think(
        self, state: AgentState, config: RunnableConfig, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        return pack(state, self._think(flat(state), config, runtime))

    async def athink(
        self, state: AgentState, config: RunnableConfig, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        return pack(state, await self._athink(flat(state), config, runtime))

    def observe(self, state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        return pack(state, self._observe(flat(state), runtime))

    def finish(self, state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        return pack(state, self._finish(flat(state), runtime))

    def _think(
        self, state: AgentState, config: RunnableConfig, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        plan = self._plan(state, runtime)
        if plan.done:
            return plan.update
        try:
            reply = plan.runnable.invoke(plan.messages, config)
        except Exception as exc:
            retry = self._fallback(plan, exc, state, runtime)
            if retry is None:
                return self._failed(plan, exc)
            plan = retry
            try:
                reply = plan.runnable.invoke(plan.messages, config)
            except Exception as exc2:
                return self._failed(plan, exc2)
        return self._decide(plan, reply, state, runtime)

    async def _athink(
        self, state: AgentState, config: RunnableConfig, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        plan = self._plan(state, runtime)
        if plan.done:
            return plan.update
        try:
            reply = await plan.runnable.ainvoke(plan.messages, config)
        except Exception as exc:
            retry = self._fallback(plan, exc, state, runtime)
            if retry is None:
                return self._failed(plan, exc)
            plan = retry
            try:
                reply = await plan.runnable.ainvoke(plan.messages, config)
            except Exception as exc2:
                return self._failed(plan, exc2)
        return self._decide(plan, reply, state, runtime)

    def _fallback(
        self, plan: Plan, exc: Exception, state: AgentState, runtime: Runtime[AgentContext]
    ) -> Plan | None:
        """Under `auto`, a native request the endpoint refused for its tools is sent as text."""
        if plan.ctx.protocol != "auto" or plan.protocol != "native":
            return None
        if not models.tools_unsupported(exc):
            return None
        retry = self._plan(state, runtime, protocol="text")
        retry.fallback_reason = models.error_message(exc)
        return None if retry.done else retry

    def _failed(self, plan: Plan, exc: Exception) -> dict[str, Any]:
        key = os.environ.get(plan.ctx.api_key_env)
        return {
            **plan.update,
            "decision": "error",
            "error": models.describe_failure(exc, plan.ctx, secret=key),
        }

    def _decide(
        self, plan: Plan, reply: Any, state: AgentState, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=getattr(reply, "content", str(reply)))
        decide = protocols.decide_native if plan.protocol == "native" else protocols.decide_text
        decision = decide(reply)
        write = runtime.stream_writer
        usage = _usage(reply)
        update: dict[str, Any] = {**plan.update, "usage": usage, "thought": decision.thought}
        if decision.thought:
            write({"event": "thought", "text": decision.thought})
        trace: list[Step] = []
        if plan.fallback_reason:
            notice = (
                f"The endpoint refused tools ({plan.fallback_reason}); this run continues with "
                "the text ReAct protocol."
            )
            trace.append(_trace_step(_iteration(state, plan) + 1, "fallback", "text", notice))
            write({"event": "fallback", "text": notice})
        if plan.wrap_up:
            text = (
                decision.text
                if isinstance(decision, protocols.Answer)
                else (reply.text.strip() or decision.thought)
            )
            return {**update, "decision": "max_steps", "answer": text or None}
        if isinstance(decision, protocols.Answer):
            answer = (
                AIMessage(
                    content=decision.text,
                    id=reply.id,
                    usage_metadata=reply.usage_metadata,
                    response_metadata={**reply.response_metadata, prompts.MARK: "answer"},
                )
                if plan.protocol == "text"
                else reply
            )
            step = _trace_step(_iteration(state, plan) + 1, "answer", plan.protocol, None)
            trace.append({**step, "thought": decision.thought, "usage": usage})
            write({"event": "answer", "text": decision.text})
            return {
                **update,
                "decision": "answer",
                "answer": decision.text,
                "messages": [answer],
                "steps": _steps_write(plan, trace),
            }
        if trace:
            update["steps"] = _steps_write(plan, trace)
        stored = protocols.stored_reply(plan.protocol, reply)
        if isinstance(decision, protocols.Act):
            for call in decision.calls:
                write({"event": "action", "tool": call["name"], "input": call["args"]})
            return {
                **update,
                "decision": "act",
                "pending": decision.calls,
                "note": decision.note,
                "messages": [stored],
            }
        return {
            **update,
            "decision": "invalid",
            "error": decision.error,
            "pending": [
                {"id": cid, "name": "?", "args": {}, "error": decision.error}
                for cid in decision.call_ids
            ],
            "messages": [stored],
        }

    # -- act -------------------------------------------------------------------------------
    def _act_setup(
        self, payload: ActInput, runtime: Runtime[AgentContext]
    ) -> tuple[PendingCall, dict[str, BaseTool], AgentContext]:
        """The call as it will run: after approval (a pause), possibly edited or rejected."""
        ctx = self.context(runtime)
        tools = {t.name: t for t in self.tools(ctx)}
        call = payload["call"]
        policy = {*ctx.approve, *payload.get("approve", [])}
        if "error" not in call and needs_approval(tools.get(call["name"]), policy):
            verdict = read_verdict(interrupt(approval_request(call)))
            if verdict.action == "edit":
                call = {**call, "args": verdict.args}
            elif verdict.action == "reject":
                call = {**call, "error": rejection_message(call, verdict.reason)}
        return call, tools, ctx

    def act(
        self, payload: ActInput, config: RunnableConfig, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        call, tools, ctx = self._act_setup(payload, runtime)
        result = run_tool_call_sync(call, tools, ctx.tool_timeout, config)
        return _observation(payload, result, ctx, runtime)

    async def aact(
        self, payload: ActInput, config: RunnableConfig, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        call, tools, ctx = self._act_setup(payload, runtime)
        result = await run_tool_call(call, tools, ctx.tool_timeout, config)
        return _observation(payload, result, ctx, runtime)

    # -- observe ---------------------------------------------------------------------------
    def _observe(self, state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        """Count the step and route. Tool observations were already written by `act` (each
        task writes its own, so a crash keeps every finished one); an invalid reply's
        correction is written here."""
        ctx = self.context(runtime)
        number = state.get("iteration", 0) + 1
        update: dict[str, Any] = {"iteration": number, "invalid_streak": 0, "pending": []}
        if state.get("decision") == "invalid":
            update.update(self._invalid_observation(state, ctx, number, runtime))
            update["repeats"], update["last_calls"] = 0, None
        else:
            update.update(_loop_guard(state, number, runtime))
        update["decision"] = (
            "stuck"
            if update["repeats"] >= STUCK_AFTER
            else _next_move(
                number, update["invalid_streak"], ctx, state.get("remaining_steps", 10**6)
            )
        )
        if state.get("note"):
            update["note"] = None
        return update

    def _invalid_observation(
        self, state: AgentState, ctx: AgentContext, number: int, runtime: Runtime[AgentContext]
    ) -> dict[str, Any]:
        protocol = state.get("protocol") or "native"
        error = state.get("error") or "the reply could not be parsed"
        messages: list[BaseMessage] = []
        if protocol == "text":
            names = [t.name for t in self.tools(ctx)]
            text = prompts.invalid_reply_observation(error, names)
            messages.append(prompts.observation_message(text))
        else:
            text = prompts.native_invalid_observation(error)
            ids = [c["id"] for c in state.get("pending", [])]
            messages += [ToolMessage(content=text, tool_call_id=i, status="error") for i in ids]
            if not ids:
                messages.append(HumanMessage(content=text))
        step = _trace_step(number, "invalid", protocol, text)
        step.update(thought=state.get("thought", ""), usage=state.get("usage"), is_error=True)
        runtime.stream_writer(
            {"event": "observation", "tool": None, "text": text, "is_error": True}
        )
        return {
            "messages": messages,
            "steps": [step],
            "invalid_streak": state.get("invalid_streak", 0) + 1,
        }

    # -- finish ----------------------------------------------------------------------------
    def _finish(self, state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        try:
            ctx = self.context(runtime)
        except ConfigError:  # already reported by think as the run's error
            ctx = AgentContext()
        update = final_update(state, ctx)
        runtime.stream_writer(
            {
                "event": "final",
                "status": update["status"],
                "answer": update.get("answer", state.get("answer")),
                "error": update.get("error"),
            }
        )
        return update


def final_update(state: Mapping[str, Any], ctx: AgentContext) -> dict[str, Any]:
    """The run's outcome from the last decision: status, answer or error, a closing trace step."""
    decision = state.get("decision")
    if decision == "answer":
        return {"status": "answered", "error": None}
    if decision == "max_steps":
        done = state.get("iteration", 0)
        notice = _limit_notice(done, ctx.max_steps)
        answer = state.get("answer") or notice
        return {
            "status": "max_steps",
            "answer": answer,
            "error": None,
            "messages": [AIMessage(content=answer, response_metadata={prompts.MARK: "limit"})],
            "steps": [_trace_step(done + 1, "limit", state.get("protocol") or "", notice)],
        }
    if decision == "stuck":
        steps = [s for s in state.get("steps", []) if s.get("kind") == "action"]
        last = steps[-1] if steps else {}
        notice = (
            f"I stopped: the same call ({last.get('tool')} with input "
            f"{json.dumps(last.get('tool_input'), ensure_ascii=False, default=str)}) was made "
            f"{STUCK_AFTER} times in a row with the same result, so the run was not making "
            "progress. Rephrase the question or try another model."
        )
        return {
            "status": "stuck",
            "answer": notice,
            "error": None,
            "messages": [AIMessage(content=notice, response_metadata={prompts.MARK: "limit"})],
            "steps": [_trace_step(state.get("iteration", 0) + 1, "limit", "", notice)],
        }
    if decision == "give_up":
        return {
            "status": "error",
            "answer": None,
            "error": (
                f"The model's last {ctx.max_invalid} replies could not be parsed "
                f"(last problem: {state.get('error') or 'unknown'}); try another model or "
                "the other protocol (REACT_AGENT_PROTOCOL)."
            ),
        }
    return {
        "status": "error",
        "answer": None,
        "error": state.get("error") or "The run stopped for an unknown reason.",
    }


def _run_reset(state: AgentState) -> dict[str, Any]:
    """A new question after a finished run starts a fresh trace and fresh counters."""
    if state.get("status") == "running":
        return {}
    return {
        "status": "running",
        "answer": None,
        "error": None,
        "iteration": 0,
        "invalid_streak": 0,
        "repeats": 0,
        "last_calls": None,
        "protocol": None,
        "decision": None,
        "steps": Overwrite([]),
    }


def _steps_write(plan: Plan, steps: list[Step]) -> Any:
    return Overwrite(steps) if isinstance(plan.update.get("steps"), Overwrite) else steps


def _iteration(state: AgentState, plan: Plan) -> int:
    return plan.update.get("iteration", state.get("iteration", 0))


def _trace_step(number: int, kind: str, protocol: str, observation: str | None) -> Step:
    return {
        "step": number,
        "kind": kind,  # type: ignore[typeddict-item]
        "protocol": protocol,
        "thought": "",
        "tool": None,
        "tool_input": None,
        "observation": observation,
        "is_error": False,
        "duration_ms": 0.0,
        "usage": None,
        "note": None,
    }


def _usage(reply: AIMessage) -> Usage | None:
    meta = reply.usage_metadata
    if not meta:
        return None
    return {
        "input_tokens": meta.get("input_tokens", 0),
        "output_tokens": meta.get("output_tokens", 0),
        "total_tokens": meta.get("total_tokens", 0),
    }


def _observation(
    payload: ActInput, result: ToolResult, ctx: AgentContext, runtime: Runtime[AgentContext]
) -> dict[str, Any]:
    """One tool result as the conversation and the trace keep it (truncated once, here)."""
    text = prompts.truncate(result["output"], ctx.observation_limit)
    note = payload.get("note")
    if payload["protocol"] == "text":
        message: BaseMessage = prompts.observation_message(
            f"{text}\n(Note: {note})" if note else text
        )
    else:
        message = ToolMessage(
            content=text,
            tool_call_id=result["id"],
            name=result["name"],
            status="error" if result["is_error"] else "success",
        )
    step: Step = {
        "step": payload["step"],
        "kind": "action",
        "protocol": payload["protocol"],
        "thought": payload.get("thought", ""),
        "tool": result["name"],
        "tool_input": result["args"],
        "observation": text,
        "is_error": result["is_error"],
        "duration_ms": result["duration_ms"],
        "usage": payload.get("usage"),
        "note": note,
    }
    runtime.stream_writer(
        {
            "event": "observation",
            "tool": result["name"],
            "text": text,
            "is_error": result["is_error"],
        }
    )
    return {"messages": [message], "steps": [step]}


def call_signature(steps: list[Step]) -> str:
    """What one iteration did: its tools, inputs and observations, as a short digest."""
    done = sorted(
        json.dumps(
            [s.get("tool"), s.get("tool_input"), s.get("observation")],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        for s in steps
    )
    return hashlib.blake2b("\n".join(done).encode(), digest_size=12).hexdigest()


def _loop_guard(state: AgentState, number: int, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Small (and big) models repeat a call that already answered. The second identical
    iteration gets a nudge; the third ends the run as `stuck`."""
    this = [s for s in state.get("steps", []) if s.get("step") == number and s["kind"] == "action"]
    signature = call_signature(this)
    repeats = state.get("repeats", 0) + 1 if signature == state.get("last_calls") else 1
    update: dict[str, Any] = {"repeats": repeats, "last_calls": signature}
    if repeats == STUCK_AFTER - 1:  # the second identical iteration: a nudge
        names = ", ".join(dict.fromkeys(str(s.get("tool")) for s in this))
        text = (
            f"You already called {names} with exactly this input and got exactly this result. "
            "Calling it again will not change the answer: use what you have, try a different "
            "input or tool, or give your Final Answer."
        )
        update["messages"] = [
            prompts.observation_message(text)
            if state.get("protocol") == "text"
            else HumanMessage(content=text)
        ]
        note = _trace_step(number, "invalid", state.get("protocol") or "", text)
        update["steps"] = [{**note, "kind": "repeat", "is_error": True}]
        runtime.stream_writer(
            {"event": "observation", "tool": None, "text": text, "is_error": True}
        )
    return update


def _next_move(done: int, streak: int, ctx: AgentContext, remaining: int) -> str:
    if streak >= ctx.max_invalid:
        return "give_up"
    if done >= ctx.max_steps or remaining <= AFTER_OBSERVE:
        if ctx.answer_on_limit and remaining > WRAP_UP:
            return "wrap_up"
        return "max_steps"
    return "continue"


def _limit_notice(done: int, max_steps: int) -> str:
    if done >= max_steps:
        return (
            f"I stopped after {done} steps without reaching a final answer "
            f"(the limit is max_steps={max_steps}). Raise max_steps or ask a narrower question."
        )
    return (
        f"I stopped after {done} steps without reaching a final answer: the run's "
        "recursion_limit leaves no room for another step. Raise recursion_limit or max_steps."
    )


def _wrap_up_request(protocol: str, max_steps: int) -> str:
    text = (
        f"You have used all {max_steps} steps. Do not call any more tools. From what you have "
        "found so far, give your best answer now"
    )
    return text + (" as a Final Answer." if protocol == "text" else ".")


__all__ = ["AgentNodes", "PendingCall"]
