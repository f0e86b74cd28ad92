"""The graph state: what each node reads and writes, and what callers and Studio see.

Input is only `messages`; output is the answer, the status, the step trace and the
conversation. Everything else is the loop's own bookkeeping for the current run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps

Status = Literal["running", "answered", "max_steps", "error"]
Decision = Literal[
    "act", "answer", "invalid", "error", "continue", "wrap_up", "max_steps", "give_up", "stopped"
]


class Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class Step(TypedDict, total=False):
    """One entry of the trace: a tool call and its observation, an invalid reply, or the answer.

    Parallel tool calls of one iteration share `step`; the model's token usage is on the first
    entry of its iteration only, so summing `usage` over the trace counts every call once.
    """

    step: int
    kind: Literal["action", "invalid", "answer", "limit", "fallback"]
    protocol: str
    thought: str
    tool: str | None
    tool_input: Any
    observation: str | None
    is_error: bool
    duration_ms: float
    usage: Usage | None
    note: str | None


class PendingCall(TypedDict):
    """A tool call the model asked for and `act` has yet to run."""

    id: str
    name: str
    args: dict[str, Any] | str
    error: NotRequired[str]  # set when the call is already known to be invalid


class ToolResult(TypedDict):
    id: str
    name: str
    args: dict[str, Any] | str
    output: str
    is_error: bool
    duration_ms: float


def collect(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Append a node's items; a write of None empties the list (observe consumes results)."""
    if right is None:
        return []
    return [*(left or []), *right]


class InputState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class OutputState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str | None
    status: Status | None
    error: str | None
    steps: Annotated[list[Step], collect]


class AgentState(OutputState, total=False):
    """Everything the loop keeps; `pending`, `results` and the counters are per run."""

    messages: Annotated[list[AnyMessage], add_messages]
    decision: Decision | None
    thought: str
    usage: Usage | None
    protocol: str | None
    pending: list[PendingCall]
    approve: list[str]  # the approval policy the run started with
    note: str | None
    results: Annotated[list[ToolResult], collect]
    iteration: int
    invalid_streak: int
    remaining_steps: RemainingSteps


class ActInput(TypedDict):
    """What `act` receives for one call, through `Send`: the call, not the whole state."""

    call: PendingCall
    step: int
    approve: NotRequired[list[str]]
