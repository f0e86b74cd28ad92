"""Approvals: LangChain's `HumanInTheLoopMiddleware`, built per run from the approval policy.

A tool needs approval when its name is in the `approve` setting (`*` for every tool) or the
tool asks for it itself (`metadata={"requires_approval": True}`). The policy a run started with
is kept in its bookkeeping, so a resume builds the same middleware and reads the decisions
against the same configuration.

The interrupt value and the decisions are LangChain's: `{"action_requests": [...],
"review_configs": [...]}`, resumed with `{"decisions": [...]}` (approve, edit, reject,
respond). On top of the middleware, the agent keeps three promises:

* an edit may change a call's arguments, never the tool it runs;
* what the trace, the tool cards and the transcript show is what ran: the edited arguments
  replace the model's in the stored step (the model is told of the edit with the result);
* a reply that cannot be read runs nothing and says why in one sentence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import Any, Literal

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, Interrupt

from graph import messages as m
from graph._compat import resume_keys
from tools.mcp.approvals import approves

ApprovalMode = Literal["batched", "per_call"]
EDITS = "hitl_edited_tool_calls"  # HumanInTheLoopMiddleware's private state key
DECISIONS = ("approve", "edit", "reject", "respond")
NOT_RUN = "react_not_run"  # response_metadata: this result says its call was not run
# LangChain's default notice says the model's message still holds its own call; here the stored
# step is rewritten to the call that ran, so the notice says only what happened.
EDIT_NOTICE = "Note: a person reviewing this call changed its arguments before it ran."


def needs_approval(tool: BaseTool | None, approve: Collection[str]) -> bool:
    """By the policy (`*`, the tool's name, or for an MCP tool its own name or
    `server:name`, so a tool renamed for a clash keeps its approval), or by the tool itself."""
    if tool is None:
        return False
    return approves(tool, approve) or bool((tool.metadata or {}).get("requires_approval"))


def approval_middleware(
    approve: Collection[str], tools: Sequence[BaseTool], mode: ApprovalMode = "batched"
) -> HumanInTheLoopMiddleware | None:
    """The run's approval middleware, or None when no tool of the run needs approval."""
    gated = [tool.name for tool in tools if needs_approval(tool, approve)]
    if not gated:
        return None
    return HumanInTheLoopMiddleware(
        dict.fromkeys(gated, True),
        description_prefix="Tool execution pending approval",
        edit_notice=EDIT_NOTICE,
        interrupt_mode=mode,
    )


def reviewed(
    step: AIMessage, waiting: Collection[str], update: dict[str, Any] | None
) -> list[BaseMessage]:
    """The messages a review writes: the step with the calls that will run (edited arguments
    in place), and an observation for each call that will not."""
    update = update or {}
    edits: dict[str, Any] = update.get(EDITS) or {}
    answered = {
        x.tool_call_id: x for x in update.get("messages") or [] if isinstance(x, ToolMessage)
    }
    calls, written = [], []
    for call in step.tool_calls:
        edit = edits.get(call["id"])
        problem = _edit_problem(call, edit) if edit is not None else None
        if call["id"] in answered:
            reply = answered[call["id"]]
            written.append(m.observation(call, reply.text, is_error=reply.status == "error"))
        elif problem:
            written.append(m.observation(call, f"The call was not run: {problem}.", is_error=True))
        elif edit is not None:
            call = {**call, "args": edit["args"]}
        calls.append(call)
    rewritten = step.model_copy(
        update={
            "tool_calls": calls,
            "response_metadata": {k: v for k, v in step.response_metadata.items() if k != m.RAW}
            if edits
            else step.response_metadata,
        }
    )
    return [rewritten, *written] if edits else written


def valid_edits(step: AIMessage, update: dict[str, Any] | None) -> dict[str, Any]:
    """The edits that will run (same tool, arguments an object), for the tool-call step."""
    edits = (update or {}).get(EDITS) or {}
    by_id = {call["id"]: call for call in step.tool_calls}
    return {
        call_id: edit
        for call_id, edit in edits.items()
        if call_id in by_id and _edit_problem(by_id[call_id], edit) is None
    }


def _edit_problem(call: dict[str, Any], edit: Any) -> str | None:
    """Why an edit decision cannot run, or None."""
    if not isinstance(edit, dict):
        return "the edit was not an action with a name and arguments"
    if edit.get("name") != call["name"]:
        shown = json.dumps(edit.get("name"), ensure_ascii=False, default=str)[:60]
        return (
            f"an edit may change the arguments of {call['name']}, not the tool ({shown} was "
            "asked for)"
        )
    if not isinstance(edit.get("args"), dict):
        return "the edited arguments were not a JSON object"
    return None


def refused(call: dict[str, Any]) -> ToolMessage:
    text = (
        f"The call to {call['name']} was not run: it needs approval, and no decision was "
        "recorded for this call with these arguments."
    )
    return _not_run(call, text)


def answers_it(request: ToolCallRequest, asked_with: set[str] | None) -> bool:
    """Whether the answer act's question gets now can be to that question: it paused a run
    (`asked_with`, its interrupt ids), and a resume by ids names one of them (LangGraph would
    hand it a value keyed by the task's first question too)."""
    keys = resume_keys(getattr(request.runtime, "config", None))
    return asked_with is not None and (keys is None or bool(keys & asked_with))


def interrupt_ids(paused: GraphBubbleUp) -> list[str]:
    found = paused.args[0] if paused.args else ()
    return [i.id for i in found if isinstance(i, Interrupt)] if isinstance(found, Sequence) else []


def not_shown(call: dict[str, Any]) -> ToolMessage:
    """The result of a call whose answer was not to act's question about its spent decision: a
    resume keyed to another question of the task (LangGraph hands a task's first answer to its
    later questions), or one replayed to where the tool asked a question of its own."""
    text = (
        f"The call to {call['name']} was not run: its approval was used already, and the answer "
        "given was not to a question about running it again."
    )
    return _not_run(call, text)


def not_run(calls: Sequence[dict[str, Any]], why: str) -> list[BaseMessage]:
    return [_not_run(c, f"The call to {c['name']} was not run: {why}.") for c in calls]


def _not_run(call: dict[str, Any], text: str) -> ToolMessage:
    """A call's result that says it did not run, marked so, so no notice says what ran."""
    message = m.observation(call, text, is_error=True)
    message.response_metadata[NOT_RUN] = True
    return message


def unreadable(exc: Exception, allowed: Sequence[str] = DECISIONS) -> str:
    """One sentence on a resume value the middleware could not use."""
    text = str(exc)
    counts = re.search(r"decisions \((\d+)\).*tool calls \((\d+)\)", text)
    if counts:
        given, pending = counts.groups()
        return (
            f"the approval reply had {given} decision(s) for {pending} pending call(s), so "
            "none was run"
        )
    if "Unexpected human decision" in text:
        return (
            f"a decision in the approval reply was not one of {', '.join(allowed)}, so none was run"
        )
    return (
        'the approval reply was not {"decisions": [...]} with one decision per pending call, '
        "so none was run"
    )


def asked_again(
    hitl: HumanInTheLoopMiddleware, request: ToolCallRequest
) -> tuple[ToolCallRequest, bool] | ToolMessage:
    """A batched re-ask: HITL's own pause for this one call (`{"action_requests": [...]}`,
    resumed with `{"decisions": [...]}`), read as the review step reads it."""
    call = request.tool_call
    step = AIMessage("", tool_calls=[call])
    try:
        update = hitl.after_model({"messages": [step]}, request.runtime)  # type: ignore[arg-type]
    except GraphBubbleUp:
        raise
    except Exception as exc:  # a resume the middleware cannot read: nothing runs
        return m.observation(
            call, f"The call to {call['name']} was not run: {unreadable(exc)}.", is_error=True
        )
    written = reviewed(step, {call["id"]}, update)
    answer = next((x for x in written if isinstance(x, ToolMessage)), None)
    if answer is not None:
        return answer
    final = next((x for x in written if isinstance(x, AIMessage)), step)
    to_run = final.tool_calls[0] if final.tool_calls else call
    edited = to_run["args"] != call["args"]
    return request.override(tool_call={**call, "args": to_run["args"]}), edited


def edit_marked(result: ToolMessage | Command, asked: ToolCallRequest, ran: ToolCallRequest) -> Any:
    """per_call: the result of a call a person edited (HITL ran `ran` for `asked`), marked
    with the arguments that ran, so the step is rewritten to them (`steps_edited`) as the
    review rewrites it in batched mode."""
    args = ran.tool_call["args"]
    if args == asked.tool_call["args"] or not isinstance(result, ToolMessage):
        return result
    meta = {**result.response_metadata, m.EDITED: args}
    return result.model_copy(update={"response_metadata": meta})


def steps_edited(step: AIMessage | None, results: Sequence[BaseMessage]) -> AIMessage | None:
    """The step with the calls a person edited inside act (per_call) holding the arguments
    that ran, its raw text dropped (it no longer says what ran); None when none was edited."""
    edited = {
        x.tool_call_id: x.response_metadata[m.EDITED]
        for x in results
        if isinstance(x, ToolMessage) and m.EDITED in x.response_metadata
    }
    if step is None or not any(
        c["id"] in edited and c["args"] != edited[c["id"]] for c in step.tool_calls
    ):
        return None
    calls = [{**c, "args": edited[c["id"]]} if c["id"] in edited else c for c in step.tool_calls]
    meta = {k: v for k, v in step.response_metadata.items() if k != m.RAW}
    return step.model_copy(update={"tool_calls": calls, "response_metadata": meta})


def with_edit_notice(
    result: ToolMessage | Command, request: ToolCallRequest, edited: bool
) -> ToolMessage | Command:
    """A re-asked call the person edited: the model is told what ran, as HITL tells it (and
    nothing of the edit when the call did not run after all)."""
    if not edited or not isinstance(result, ToolMessage) or result.response_metadata.get(NOT_RUN):
        return result
    call = request.tool_call
    shown = json.dumps(call["args"], ensure_ascii=False, default=str)
    notice = f"{EDIT_NOTICE} Executed instead: {call['name']} with arguments {shown}."
    return result.model_copy(update={"content": f"{notice}\n\nTool response:\n{result.text}"})
