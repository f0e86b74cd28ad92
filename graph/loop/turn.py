"""Where a run begins: a new question (or a message sent while a run was paused) starts a fresh
run, and tool calls the earlier run left unanswered are answered as not run, so the model is
never told a tool ran when it did not (Agent Chat UI, for one, answers a dangling call with its
own "Successfully handled tool call." when the user types during an approval pause)."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from graph import messages as m
from graph._compat import holds_interrupt
from graph.state import AgentState, run_status


def starts_turn(state: AgentState) -> bool:
    """Whether think starts a new run here: a run ended, or a message came from the user."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    from_user = last is not None and (
        m.is_user_message(last)
        or (isinstance(last, ToolMessage) and not m.is_our_observation(last))
    )
    return run_status(state) != "running" or from_user


def unanswered(state: AgentState) -> list[str]:
    """The ids of the last step's calls that have no result at all: at a new turn, the ones
    the call ledger is asked about (`Ledger.started`: a call cut short mid-flight)."""
    return without_results(state.get("messages") or []) if starts_turn(state) else []


def without_results(messages: list[BaseMessage]) -> list[str]:
    """The ids of the last step's calls with no result after it, read from the end back to
    the step (a call's result follows its step)."""
    results: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            results.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            return [c["id"] for c in message.tool_calls if c["id"] not in results]
    return []


def new_turn(state: AgentState, started: Collection[str] = ()) -> dict[str, Any] | None:
    """The reset a new question needs, or None while the current run goes on. `started`:
    calls without a result that the ledger saw start (they may have taken effect)."""
    if not starts_turn(state):
        return None
    messages = state.get("messages") or []
    run = state.get("run") or {}
    question = next((x for x in reversed(messages) if m.is_user_message(x)), None)
    ended = ("answer", "error", "structured_response")  # the last run's: not this one's
    cleared = {key: None for key in ended if state.get(key) is not None}
    # written only where set: every written channel costs a version entry (`run_status`)
    if state.get("status") is not None:
        cleared["status"] = "running"
    return {
        **cleared,
        "run": {
            "question_id": question.id if question else None,
            "iteration": 0,
            "protocol": None,
            "review": [],
            "invalid": None,
            "invalid_streak": 0,
            "wrap_up": False,
            "started_at": time.time(),
            "closed": False,
            "ended_by": None,
            "unshown": None,
            "tokens": None,  # a run an earlier release started may have left its count
            **({"asking": []} if run.get("asking") else {}),
        },
        "messages": calls_not_run(
            messages,
            run.get("review") or (),
            [*(run.get("asking") or ()), *(state.get("approvals") or {})],
            started,
        ),
    }


def sent_back(state: AgentState) -> dict[str, Any] | None:
    """Within a run, the answers for a step's calls that never ran because a middleware sent
    the step back to the model (an `after_model` jump to `model`, with or without a message
    of its own), or None. Chat APIs refuse a call with no result, so the model is told they
    did not run instead (`create_agent` sends them unanswered)."""
    messages = state.get("messages") or []
    if not without_results(messages):
        return None
    run = state.get("run") or {}
    decided = [*(run.get("asking") or ()), *(state.get("approvals") or {})]
    answers = calls_not_run(messages, run.get("review") or (), decided, why=SENT_BACK)
    return {"messages": answers, "run": {"review": []}} if answers else None


SENT_BACK = "a middleware sent its step back to the model before it ran"
MOVED_ON = (
    "the conversation moved on before it ran (a new message came while it waited for "
    "approval, or it was written into a finished run)"
)


def calls_not_run(
    messages: list[BaseMessage],
    waiting: Collection[str] = (),
    decided: Collection[str] = (),
    started: Collection[str] = (),
    *,
    why: str = MOVED_ON,
) -> list[BaseMessage]:
    """Answers for the tool calls of the last step that have no result: a pending approval
    that got a new message instead of a decision, a step a client wrote into a finished run
    (it is not run: nothing approved it), a broken call (`invalid_tool_calls`) the run ended
    on: chat APIs refuse a call with no result. A result the agent did not write is the call's
    result, as in `create_agent` (a client skipping a tool by writing its result, a
    transcript, a thread moved over from another agent), except for a call that still
    `waiting` for the review (it never ran, whatever a client wrote after it: Agent Chat UI's
    "Successfully handled tool call.", a result marked as the agent's, a forged answer) or one
    a person `decided` on (approved and sealed, or asked about inside act in per_call mode):
    only the agent's own result says it ran (a client cannot write one:
    `graph.thread_writes`). Such a stand-in is replaced by the answer, which stands where the
    call's result belongs (`placed`). A call the ledger saw start (`started`: its run was
    cancelled or interrupted mid-call) is answered as cut short: it may have taken effect."""
    for at in range(len(messages) - 1, -1, -1):
        step = messages[at]
        if isinstance(step, AIMessage) and (step.tool_calls or step.invalid_tool_calls):
            break
    else:
        return []
    pending, gated = set(waiting), {*waiting, *decided}
    ours = {
        x.tool_call_id
        for x in messages
        if isinstance(x, ToolMessage)
        and x.tool_call_id not in pending
        and (m.is_our_observation(x) or x.tool_call_id not in gated)
    }
    foreign = {
        x.tool_call_id: x
        for x in messages
        if isinstance(x, ToolMessage) and (x.tool_call_id in pending or not m.is_our_observation(x))
    }
    answers: list[ToolMessage] = []
    stand_ins: list[ToolMessage] = []
    broken = [c for c in step.invalid_tool_calls if c.get("id")]
    for call in [*step.tool_calls, *broken]:
        if call["id"] in ours:
            continue
        # a broken call the run ended on
        because = "its arguments could not be read" if call in broken else why
        name = call.get("name") or "a tool"
        text = f"The call to {name} was not run: {because}. Do not assume it happened."
        if call["id"] in started:
            text = (
                f"The call to {name} was cut short: it started, but its run was stopped "
                "before the result was saved. It may have taken effect; check before "
                "repeating it."
            )
        if call["id"] in foreign:  # the client's stand-in goes; ours is shown in its place
            stand_ins.append(foreign[call["id"]])
        answers.append(m.observation(call, text, is_error=True))
    return placed(messages, step, answers, stand_ins)


def placed(
    messages: list[BaseMessage],
    step: AIMessage,
    answers: list[ToolMessage],
    stand_ins: list[ToolMessage],
) -> list[BaseMessage]:
    """The writes that put the answers right after their step, where chat APIs and clients
    read a call's result (`create_agent` keeps a client's stand-in there), the stand-ins
    removed: appended when only results follow the step, else the conversation written once
    in that order (`REMOVE_ALL_MESSAGES`, every id kept)."""
    gone = {x.id for x in stand_ins}
    kept = [x for x in messages if x.id not in gone]
    at = next(i for i, x in enumerate(kept) if x is step) + 1
    while at < len(kept) and isinstance(kept[at], ToolMessage):
        at += 1
    if not answers or at == len(kept):
        return [*(RemoveMessage(id=x.id) for x in stand_ins), *answers]
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept[:at], *answers, *kept[at:]]


def paused_input(input: Mapping[str, Any], saved: Any) -> tuple[Any, list[ToolMessage]]:
    """A new input to a thread whose head is paused (`saved`, the head as the checkpointer
    reads it: a `CheckpointTuple`), as the run takes it, and the results to store before it.

    - A tool result the input carries that the agent did not write is a stand-in for a call
      that waited (Agent Chat UI's "Successfully handled tool call." when the user types during
      a pause, whatever middleware paused): it is left out, so the new turn answers the call
      as not run (`calls_not_run`) instead of telling the model it ran.
    - The agent's own results of calls that finished while another call of their step paused
      (per_call approvals: each call is a task of act) wait as the checkpoint's pending writes,
      which LangGraph drops when a new input starts a step: the caller stores them first
      (`graph.checked`), so the model is told what ran, never that a call which ran did not.
    """
    if not holds_interrupt(saved):
        return input, []
    cut_off = [
        message
        for _, channel, value in saved.pending_writes
        if channel == "messages"
        for message in (value if isinstance(value, list) else [value])
        if m.is_our_observation(message)
    ]
    written = input.get("messages")
    if not written:
        return input, cut_off
    items = convert_to_messages(written if isinstance(written, list) else [written])
    kept = [x for x in items if not isinstance(x, ToolMessage) or m.is_our_observation(x)]
    return ({**input, "messages": kept} if len(kept) < len(items) else input), cut_off
