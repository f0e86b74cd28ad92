"""How a run ends: the answer (or a plain notice of why the run stopped early), the trace and
the token count a caller reads, written by finish (and by think when the recursion limit
leaves no room even for finish)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from graph import messages as m
from graph.policies.repeat_guard import STUCK_AFTER
from graph.policies.run_deadline import clock_start
from graph.protocols.native import answer_text
from graph.settings import AgentContext
from graph.state import run_status
from graph.steps import derive_steps, run_messages, steps_taken
from graph.usage import run_usage


def closing_update(
    state: Mapping[str, Any],
    ctx: AgentContext,
    messages: list[BaseMessage],
    *,
    out_of_room: bool = False,
) -> dict[str, Any]:
    """The answer and trace of a run that ends with `state["status"]`."""
    run = state.get("run") or {}
    status = run_status(state) or "error"  # a first run writes none until it ends
    update: dict[str, Any] = {}
    if status == "running" and _answer(run_messages(messages, run.get("question_id"))):
        # a middleware ended the run on a reply of its own (an after_model hook that dropped
        # the step's calls, a hook's `Command(goto=END)`): that reply is the answer
        status = update["status"] = "answered"
    notice = _notice(status, state, ctx, messages, out_of_room)
    written: list[BaseMessage] = []
    if notice is not None:
        answer = state.get("answer") or notice
        closing = AIMessage(
            content=answer,
            response_metadata={m.MARK: "limit", m.NOTICE: notice, m.PROTOCOL: run.get("protocol")},
        )
        written.append(closing)
        update.update(answer=answer, error=None, messages=written)
    elif status == "answered":
        answer = _answer(run_messages(messages, run.get("question_id")))
        if answer is not None and answer != state.get("answer"):
            update["answer"] = answer
    elif status == "error":  # said in the conversation too, so a chat client shows it
        update["answer"] = None
        if state.get("error"):
            written.append(
                AIMessage(
                    content=state["error"],
                    response_metadata={m.MARK: "error", m.PROTOCOL: run.get("protocol")},
                )
            )
            update["messages"] = written
    in_run = run_messages([*messages, *written], run.get("question_id"))
    update["steps"] = derive_steps(in_run, run.get("protocol"))
    update["usage"] = run_usage(run, in_run)
    return update


def _answer(in_run: list[BaseMessage]) -> str | None:
    """The run's answer: its final reply as stored, after every after_model hook (a
    middleware that rewrites the reply, as `PIIMiddleware` redacts it, rewrites the answer a
    caller reads and the CLI prints). None where the final reply is an output tool's call
    (`ToolStrategy`): think's answer, its arguments, stands."""
    final = next((x for x in reversed(in_run) if isinstance(x, AIMessage)), None)
    return answer_text(final) if final is not None and not final.tool_calls else None


def _notice(
    status: str,
    state: Mapping[str, Any],
    ctx: AgentContext,
    messages: list[BaseMessage],
    out_of_room: bool,
) -> str | None:
    run = state.get("run") or {}
    done = steps_taken(messages, run)
    steps = f"{done} step{'' if done == 1 else 's'}"
    if status == "max_steps" and run.get("ended_by"):
        # a middleware's limit (`ModelCallLimitMiddleware`, ...) ended the run: its own reply
        # already says so, as in `create_agent`; a second message would repeat it
        if state.get("answer"):
            return None
        return f"I stopped after {steps}: {run['ended_by']} reached its limit."
    if status == "max_steps":
        if done >= ctx.max_steps and not out_of_room:
            return (
                f"I stopped after {steps} without reaching a final answer "
                f"(the limit is max_steps={ctx.max_steps}). Raise max_steps or ask a narrower "
                "question."
            )
        return (
            f"I stopped after {steps} without reaching a final answer: the run's "
            "recursion_limit leaves no room for another step. Raise recursion_limit or max_steps."
        )
    if status == "stuck":
        steps = derive_steps(run_messages(messages, run.get("question_id")))
        last = next((s for s in reversed(steps) if s["kind"] == "action"), {})
        shown = json.dumps(last.get("tool_input"), ensure_ascii=False, default=str)
        return (
            f"I stopped: the same call ({last.get('tool')} with input {shown}) was made "
            f"{STUCK_AFTER} times in a row with the same result, so the run was not making "
            "progress. Rephrase the question or try another model."
        )
    if status == "timeout":
        # from when the clock last started: a resumed run is not charged for its pause
        took = time.time() - (clock_start(run) or time.time())
        return (
            f"I stopped after {took:.{1 if took < 10 else 0}f} s, the run's time limit "
            f"(run_timeout={ctx.run_timeout:g} s), with {done} step(s) done and no final answer; "
            "the steps so far are in the trace. Ask a narrower question or raise "
            "REACT_AGENT_RUN_TIMEOUT."
        )
    return None
