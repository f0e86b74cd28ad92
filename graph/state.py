"""The graph state: what each node reads and writes, and what callers and Studio see.

The conversation is standard LangChain messages whatever the protocol: each step of the model
is an `AIMessage` with `tool_calls`, each observation a `ToolMessage` with that call's id. The
trace (`steps`) is derived from those messages when a run ends (`graph.steps`), so every
observation is stored once per step, not copied beside its message.

Input is only `messages`; output is the answer, the status, the trace and the conversation.
`run` is the loop's own bookkeeping for the current run, one channel so a checkpoint carries
one version entry for it, merged key by key by its reducer.

A client's write (`update_state`, Studio, a `Command`, a fork) is checked by the compiled graph
(`graph.checked`) before LangGraph sees it, so a malformed one is refused with one sentence and
nothing of it is stored; the loop's own keys (`LOOP_KEYS`) and the middleware's private keys
are refused there too, whatever their value. LangGraph saves a write before its channel applies
it, so a channel that raised would fail every later read of a stored bad value: the channels
here drop a value their check refuses (logged), and a thread whose stored values are somehow
invalid still reads, and its next run goes on from the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel, EphemeralValue
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict  # pydantic needs it for schemas on Python < 3.12

from graph import channels
from graph.channels import SealsValue, StatusValue, TextValue, Trace, UsageValue, merge_run_batches
from graph.message_reducer import add_message_batches

Status = Literal["running", "answered", "max_steps", "stuck", "timeout", "error", "stopped"]
STATUSES: frozenset[str] = channels.STATUSES
TERMINAL: frozenset[str] = STATUSES - {"running"}
# The keys only the loop's own steps write: its bookkeeping (`run.started_at` sets the run's
# deadline), the seals of a person's decisions, and a middleware hook's jump. No state update
# or command may write them (`graph.checked`).
LOOP_KEYS: frozenset[str] = frozenset({"run", "approvals", "jump_to"})


class Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class Step(TypedDict, total=False):
    """One entry of the trace: a tool call and its observation, an invalid reply, the answer.

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
    decided_by: Literal["model", "code"]  # code: written without the model (a quoted answer)
    argument_by: Literal["model", "code"]  # who wrote a call's arguments (the embedded model)
    rerun: bool  # the call ran again after an interrupted attempt (a crash)


class Run(TypedDict, total=False):
    """The loop's bookkeeping for the current run."""

    question_id: str | None  # the message that started this run: the trace starts after it
    iteration: int  # 0 at a run's start; earlier releases counted steps here (`steps_taken`)
    protocol: str | None  # the protocol this run settled on (auto resolved, fallback)
    approve: list[str]  # the approval policy the run started with (resumes keep it)
    review: list[str]  # ids of the calls of this step that wait for a person's decision
    asking: list[str]  # per_call: the step's calls HITL asks about inside act (`loop.turn`)
    invalid: str | None  # why the model's last reply could not be used
    invalid_streak: int
    wrap_up: bool  # the step limit's closing call (`StepLimit` marks its request; not stored)
    started_at: float | None  # wall-clock start (time.time()), for the run deadline
    closed: bool  # the run already ended in think (no room left for finish)
    ended_by: str | None  # the middleware that ended the run (a jump to the end)
    unshown: Usage | None  # what the run's model calls used that its kept replies do not show
    tokens: Usage | None  # an earlier release's running count: a run it started counts on here


def run_status(values: Mapping[str, Any]) -> Status | None:
    """The thread's status as its readers need it: `running` while a run is in progress.

    A thread's first run writes no status until it ends: every channel a run writes adds a
    version entry to each later checkpoint (about 0.17 KB per iteration on PostgreSQL), and
    `run`, written when a run starts, already says one is under way. Later runs write
    `running` over the last one's status."""
    status = values.get("status")
    if status is None and "question_id" in (values.get("run") or {}):
        return "running"
    return status


# The conversation grows by every step. As a delta channel, each checkpoint stores only the new
# writes, not the whole list again, so storage grows linearly with the steps (LangGraph rebuilds
# the list from the writes when it loads a checkpoint). A full snapshot is written every
# SNAPSHOT_EVERY updates to bound that replay; each snapshot costs the whole list, so it is rare.
SNAPSHOT_EVERY = 1000
RUN_SNAPSHOT_EVERY = 16
Messages = Annotated[
    list[AnyMessage], DeltaChannel(add_message_batches, snapshot_frequency=SNAPSHOT_EVERY)
]


class InputState(TypedDict):
    messages: Messages


class OutputState(TypedDict, total=False):
    messages: Messages
    answer: Annotated[str | None, TextValue]
    status: Annotated[Status | None, StatusValue]
    error: Annotated[str | None, TextValue]
    steps: Annotated[list[Step], Trace(list)]
    usage: Annotated[Usage | None, UsageValue]  # the run's tokens, every model call summed


class AgentState(OutputState, total=False):
    """The stored state: the output fields plus the run's bookkeeping."""

    messages: Messages
    # the bookkeeping is small and read on every load: a snapshot every 16 writes keeps its
    # replay short (turn 500 of a thread: 0.25 -> 0.11 s, bench/long_threads.py)
    run: Annotated[Run, DeltaChannel(merge_run_batches, snapshot_frequency=RUN_SNAPSHOT_EVERY)]
    remaining_steps: RemainingSteps
    jump_to: Annotated[str | None, EphemeralValue]  # a middleware hook's jump (model, tools, end)
    approvals: Annotated[dict[str, str], SealsValue]  # seals of the calls a person approved


class ActInput(TypedDict):
    """What `act` receives for one call, through `Send`: the call and the few facts its
    observation needs, not the whole state (which would be stored again with every task)."""

    call: dict[str, Any]  # a LangChain ToolCall: name, args, id
    protocol: str
    error: NotRequired[str | None]  # set when the call is known to be unusable (model told why)
    note: NotRequired[str | None]  # said with this observation (e.g. ignored extra actions)
    approve: NotRequired[list[str]]  # the run's approval policy (a resume keeps it)


class RouteState(TypedDict, total=False):
    """What the loop's routers read. LangGraph hands a router the channels its annotation
    names, so routing after every node reads these few, not the whole state (a middleware's
    keys included); it still copies every channel to apply the node's writes first, hence the
    cheap `Checked` channels. Plain annotations: the channels are AgentState's."""

    messages: list[AnyMessage]
    run: Run
    status: Status | None
    approvals: dict[str, str]
    remaining_steps: RemainingSteps
