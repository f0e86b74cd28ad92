"""Human approval of tool calls, in LangChain's human-in-the-loop schema (the one Agent Chat UI,
Studio and LangChain's HumanInTheLoopMiddleware speak).

A tool needs approval when its name is in the `approve` setting (REACT_AGENT_APPROVE) or the tool
says so itself (`metadata={"requires_approval": True}`). A step whose calls need it pauses once
(LangGraph `interrupt`) with

    {"action_requests": [{"name", "args", "description"}, ...],
     "review_configs": [{"action_name", "allowed_decisions": ["approve", "edit", "reject"]}, ...]}

and resumes with `{"decisions": [...]}`, one per request, in order:
`{"type": "approve"}`, `{"type": "edit", "edited_action": {"name", "args"}}` or
`{"type": "reject", "message": "..."}` (the model reads the message).

Older clients' forms still work where they are unambiguous: Agent Inbox replies
(`{"type": "accept" | "edit" | "response" | "ignore", "args": ...}`, earlier Agent Chat UI
releases), and a bare verdict (`"approve"`,
`True`, `"reject"`, `{"action": "edit", "input": {...}}`) only when a single call is pending. A
reply that does not answer every request exactly once runs none of the calls and says why.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool

DECISIONS = ["approve", "edit", "reject"]


@dataclass(frozen=True)
class Decision:
    type: Literal["approve", "edit", "reject"]
    name: str | None = None  # edit: the tool to run instead (usually the same)
    args: Any = None  # edit: the arguments to run with
    message: str = ""  # reject: what the model is told


def needs_approval(tool: BaseTool | None, approve: Collection[str]) -> bool:
    if tool is None:
        return False
    if "*" in approve or tool.name in approve:
        return True
    return bool((tool.metadata or {}).get("requires_approval"))


def approval_request(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The interrupt value for one step: every call that waits for a decision.

    With a single call it also carries the older Agent Inbox fields (`action_request`,
    `config`, `description`), which earlier Agent Chat UI releases (the one on npm among them)
    need to show their approve / edit / respond buttons; their replies are read too."""
    value = {
        "action_requests": [
            {
                "name": call["name"],
                "args": call["args"],
                "description": (
                    f"Tool execution pending approval\n\nTool: {call['name']}\nArgs: "
                    f"{json.dumps(call['args'], ensure_ascii=False, default=str)}"
                ),
            }
            for call in calls
        ],
        "review_configs": [
            {"action_name": call["name"], "allowed_decisions": list(DECISIONS)} for call in calls
        ],
    }
    if len(calls) == 1:
        value.update(
            action_request={"action": calls[0]["name"], "args": calls[0]["args"]},
            config={
                "allow_accept": True,
                "allow_edit": True,
                "allow_respond": True,
                "allow_ignore": True,
            },
            description=value["action_requests"][0]["description"],
        )
    return value


def read_decisions(value: Any, count: int) -> list[Decision] | str:
    """One decision per pending call, or the sentence that says why the reply cannot be used."""
    if isinstance(value, dict) and "decisions" in value:
        value = value["decisions"]
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            return (
                f"the approval reply had {len(value)} decision(s) for {count} pending call(s), "
                "so none was run"
            )
        return [read_one(item) for item in value]
    if count != 1:
        return (
            f"a single verdict ({_short(value)}) cannot answer {count} pending calls; send "
            '{"decisions": [...]} with one decision per call, so none was run'
        )
    return [read_one(value)]


def read_one(value: Any) -> Decision:
    """Understand one decision; anything unclear is a rejection, never a silent approval."""
    if value is True:
        return Decision("approve")
    if value is False or value is None:
        return Decision("reject", message="no approval given")
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("approve", "approved", "yes", "y", "ok"):
            return Decision("approve")
        return Decision("reject", message="" if word in ("reject", "no", "n") else value.strip())
    if isinstance(value, dict):
        kind = str(value.get("type") or value.get("action") or "").lower()
        if kind in ("approve", "accept"):
            return Decision("approve")
        if kind in ("response", "ignore"):  # Agent Inbox: a reply instead of the call, or a skip
            text = value.get("args") if kind == "response" else "the user chose to skip it"
            return Decision("reject", message=str(text or ""))
        if kind == "edit" and isinstance(value.get("args"), dict) and "args" in value["args"]:
            edited = value["args"]  # Agent Inbox: {"action": name, "args": {...}}
            if isinstance(edited.get("args"), dict):
                return Decision("edit", name=edited.get("action"), args=edited["args"])
        if kind == "edit":
            edited = value.get("edited_action")
            if isinstance(edited, dict) and isinstance(edited.get("args"), dict):
                return Decision("edit", name=edited.get("name"), args=edited["args"])
            if "input" in value:
                return Decision("edit", args=value["input"])
            return Decision("reject", message="an edit without new arguments was not run")
        if kind == "reject":
            return Decision(
                "reject", message=str(value.get("message") or value.get("reason") or "")
            )
    return Decision("reject", message=f"unrecognised reply {_short(value)}")


def rejection_message(name: str, reason: str) -> str:
    text = f"The user rejected the call to {name}"
    reason = reason.strip()
    if not reason:
        return f"{text}. Do not try it again; find another way."
    return f"{text}: {reason}" + ("" if reason[-1] in ".!?。！？" else ".")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
