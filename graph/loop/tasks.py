"""Which tool calls `act` runs after a step, and how each reaches it.

A step of one call goes to act by an ordinary edge, and act reads that call from the state
(`pending_calls`). A step of several calls sends act one task per call (`Send`), so a crash keeps
every call that finished and a resume runs only the ones that did not. The edge is the cheap
path for the common case: a `Send` is stored as a task write and two blob rows at every
iteration (about 0.35 KB per iteration on PostgreSQL, `bench/storage.py`), an edge as one empty
write, and its task needs no pickling of a payload.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Send

from graph.protocols.native import broken_call_error
from graph.state import ActInput, AgentState, RouteState, run_status


def to_act(state: RouteState | AgentState) -> list[Send] | Literal["act"]:
    """The route to act: the edge for one pending call, a task per call for several, none
    (an empty list) when every call of the last step has its observation."""
    payloads = pending_calls(state)
    if len(payloads) == 1:
        return "act"
    return [Send("act", payload) for payload in payloads]


def hooks_answered(state: RouteState | AgentState) -> bool:
    """After the after_model hooks: the run is under way but its last model message asks for
    no call (a hook replaced the step with a reply, or wrote one after it). The run ends with
    that reply, as `create_agent`'s edge from the model ends a run whose last AI message has
    no call pending."""
    if run_status(state) != "running" or (state.get("run") or {}).get("invalid"):
        return False
    messages = state.get("messages") or []
    last = next((x for x in reversed(messages) if isinstance(x, AIMessage)), None)
    return last is not None and not last.tool_calls


def idle(state: RouteState | AgentState) -> bool:
    """No run is under way, or the step waits for the review: act runs nothing then (a
    client's `Command(goto="act")` on a finished or new thread, or beside a paused review)."""
    return run_status(state) != "running" or bool((state.get("run") or {}).get("review"))


def pending_calls(state: RouteState | AgentState) -> list[ActInput]:
    """What act needs for each call of the last step that has no observation yet: the call,
    the protocol, the run's approval policy, and for a call the model's reply broke, why (so
    its observation says so and nothing runs). The review step's seals are read from the
    state, inside the tool node, on the call as it will run (`ApprovalCheck`)."""
    messages = state.get("messages") or []
    index = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None
    )
    if index is None:
        return []
    step = messages[index]
    answered = {x.tool_call_id for x in messages[index + 1 :] if isinstance(x, ToolMessage)}
    run = state.get("run") or {}
    shared: dict[str, Any] = {"protocol": run.get("protocol") or "native"}
    if run.get("approve"):
        shared["approve"] = list(run["approve"])
    note = step.response_metadata.get("react_note")
    payloads: list[Any] = [
        {
            "call": call,
            **shared,
            **({"note": note} if i == 0 and note else {}),
        }
        for i, call in enumerate(step.tool_calls)
        if call["id"] not in answered
    ]
    payloads += [
        {
            "call": {
                "id": bad["id"],
                "name": bad.get("name") or "?",
                "args": bad.get("args") or "",
            },
            **shared,
            "error": broken_call_error(bad),
        }
        for bad in step.invalid_tool_calls
        if bad.get("id") and bad["id"] not in answered
    ]
    return payloads
