"""The graph state: what each node reads and writes, and what callers and Studio see.

Input is only `messages`; output is the answer, the status, the step trace and the
conversation. Everything else is the loop's own bookkeeping for the current run.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage, convert_to_messages
from langgraph.channels import DeltaChannel
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict  # pydantic needs it for schemas on Python < 3.12

Status = Literal["running", "answered", "max_steps", "stuck", "error"]
Decision = Literal[
    "act",
    "answer",
    "invalid",
    "error",
    "continue",
    "wrap_up",
    "max_steps",
    "give_up",
    "stopped",
    "stuck",
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
    kind: Literal["action", "invalid", "repeat", "answer", "limit", "fallback"]
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


def add_message_batches(messages: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """`add_messages` over a batch of writes in one call: the same result as one call per write
    (later messages with a known id replace earlier ones either way), in one pass.

    Messages written without an id (`("user", "...")` inputs) get one derived from their place
    in the conversation: the channel is rebuilt from its writes on every load, and a random id
    would change each time.
    """
    batch = convert_to_messages(
        [m for write in writes for m in (write if isinstance(write, list) else [write])]
    )
    for offset, message in enumerate(batch):
        if message.id is None:
            seed = f"{len(messages) + offset}:{message.type}:{message.text}"
            message.id = str(uuid.uuid5(uuid.NAMESPACE_URL, seed))
    return add_messages(messages, batch)


def extend_batches(items: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """Append every write's items, in order."""
    out = list(items)
    for write in writes:
        out.extend(write)
    return out


# The conversation and the trace grow by every step. As delta channels, each checkpoint stores
# only the new writes, not the whole list again, so storage grows linearly with the steps
# (LangGraph rebuilds the list from the writes when it loads a checkpoint). A full snapshot is
# written every SNAPSHOT_EVERY updates to bound that replay; each snapshot costs the whole list,
# so it is rare.
SNAPSHOT_EVERY = 1000
Messages = Annotated[
    list[AnyMessage], DeltaChannel(add_message_batches, snapshot_frequency=SNAPSHOT_EVERY)
]
Steps = Annotated[list[Step], DeltaChannel(extend_batches, snapshot_frequency=SNAPSHOT_EVERY)]


class InputState(TypedDict):
    messages: Messages


class OutputState(TypedDict, total=False):
    messages: Messages
    answer: str | None
    status: Status | None
    error: str | None
    steps: Steps


class Run(TypedDict, total=False):
    """The loop's bookkeeping for the current run, kept in one channel: every channel costs a
    version entry in every checkpoint, so fewer channels mean smaller checkpoints."""

    decision: Decision | None
    thought: str
    usage: Usage | None
    protocol: str | None
    pending: list[PendingCall]
    approve: list[str]  # the approval policy the run started with
    note: str | None
    iteration: int
    invalid_streak: int
    repeats: int  # how many iterations in a row made the same calls with the same results
    last_calls: str | None  # digest of the last iteration's calls and observations


RUN_KEYS = frozenset(Run.__annotations__)


class AgentState(OutputState, total=False):
    """The stored state: the output fields plus the run's bookkeeping."""

    messages: Messages
    run: Run
    remaining_steps: RemainingSteps


def flat(state: Any) -> dict[str, Any]:
    """The state with the run's bookkeeping at the top level, as the nodes read it."""
    return {**state, **(state.get("run") or {})}


def pack(state: Any, update: dict[str, Any]) -> dict[str, Any]:
    """A node's flat update with its bookkeeping folded back into the `run` channel."""
    changes = {key: update.pop(key) for key in list(update) if key in RUN_KEYS}
    if changes:
        update["run"] = {**(state.get("run") or {}), **changes}
    return update


class ActInput(TypedDict):
    """What `act` receives for one call, through `Send`: the call and the few facts its trace
    entry needs, not the whole state (which would be stored again with every task)."""

    call: PendingCall
    step: int
    index: int
    protocol: str
    thought: str
    usage: NotRequired[Usage | None]
    note: NotRequired[str | None]
    approve: NotRequired[list[str]]
