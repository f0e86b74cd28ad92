"""Human approval of tool calls: which calls need it, what the pause carries, what a reply means.

A tool needs approval when its name is in the `approve` setting (REACT_AGENT_APPROVE) or the tool
says so itself (`metadata={"requires_approval": True}`). Before such a call `act` pauses with
LangGraph's `interrupt()`; the run resumes with `Command(resume=...)` carrying one of

    "approve" | True                          run the call as asked
    {"action": "edit", "input": {...}}        run it with these arguments instead
    "reject" | False | {"action": "reject", "reason": "..."}   do not run it; tell the model
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool

from graph.state import PendingCall


@dataclass(frozen=True)
class Verdict:
    action: Literal["approve", "edit", "reject"]
    args: Any = None
    reason: str = ""


def needs_approval(tool: BaseTool | None, approve: Collection[str]) -> bool:
    if tool is None:
        return False
    if "*" in approve or tool.name in approve:
        return True
    return bool((tool.metadata or {}).get("requires_approval"))


def approval_request(call: PendingCall) -> dict[str, Any]:
    """What the pause shows: enough for a person (or a UI) to decide."""
    return {
        "kind": "approval",
        "tool": call["name"],
        "input": call["args"],
        "call_id": call["id"],
        "question": f"Run {call['name']} with {call['args']!r}?",
        "options": ["approve", "edit", "reject"],
    }


def read_verdict(value: Any) -> Verdict:
    """Understand a resume value; anything unclear is a rejection, never a silent approval."""
    if value is True:
        return Verdict("approve")
    if value is False or value is None:
        return Verdict("reject", reason="no approval given")
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("approve", "approved", "yes", "y", "ok"):
            return Verdict("approve")
        return Verdict("reject", reason="" if word in ("reject", "no", "n") else value.strip())
    if isinstance(value, dict):
        action = str(value.get("action", "")).lower()
        if action == "approve":
            return Verdict("approve")
        if action == "edit" and "input" in value:
            return Verdict("edit", args=value["input"])
        return Verdict("reject", reason=str(value.get("reason") or ""))
    return Verdict("reject", reason=f"unrecognised reply {value!r}")


def rejection_message(call: PendingCall, reason: str) -> str:
    text = f"The user rejected the call to {call['name']}"
    return f"{text}: {reason}." if reason else f"{text}. Do not try it again; find another way."
