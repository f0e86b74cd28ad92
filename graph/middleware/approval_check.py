"""The one `wrap_tool_call` layer that holds the approval invariant: a decision runs exactly one
call, once.

It is act's innermost layer (a user's wrapper that changes a call, or runs it again, hands
it here) and runs LangChain's `HumanInTheLoopMiddleware` itself, checking what HITL hands on:
the call as it will really run, after HITL applied a reviewer's edit (batched mode, from its
`hitl_edited_tool_calls` key) or took a person's decision (per_call mode, its interrupt in
`wrap_tool_call`). No edit key is trusted on its own: what reaches this layer is checked.

* A call whose tool needs approval runs only with a decision for exactly this call: in batched
  mode the review step's seal (`graph.middleware.approval_seal`) must verify for this call id,
  this tool and these arguments; in per_call mode HITL, just outside, has asked about this very
  call (it pauses for every gated tool). Anything else (a planted edit that turns an ungated
  call into a gated tool or changes an approved call's arguments, a forged step, a seal copied
  onto another call) is refused with one sentence.
* A decision is spent when its call starts (`graph.persistence.ledger`, outside the
  checkpoints): a replay, a fork, a re-run from the checkpoint between review and act, or a
  crash that cut the call short asks the person again (a new interrupt, in the mode's own
  format) instead of running on the old decision.
* Every call's start is recorded before its side effect (in a run that stores checkpoints): a
  call started again after a crash is marked `response_metadata["react_rerun"] = N`.
* A call that belongs to no run under way (a client's `Command(goto="act")` on a finished or
  new thread) or that still waits for the review step is not run here, and nothing is written
  for it: the next turn, or the review, takes it up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from graph._compat import checkpointed
from graph.middleware.approval_seal import sealed
from graph.middleware.approvals import (
    answers_it,
    asked_again,
    edit_marked,
    interrupt_ids,
    not_shown,
    refused,
    with_edit_notice,
)
from graph.persistence.ledger import Ledger, ledger_for, rerun_marked
from graph.state import run_status

Result = ToolMessage | Command
Execute = Callable[[ToolCallRequest], Result]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[Result]]
SKIPPED = "react_skipped"  # response_metadata: no result for this call here (act drops it)


class ApprovalCheck:
    """The layer for one run's tools: `gated` are the tool names that need approval, `hitl`
    the run's approval middleware (None when no tool needs one)."""

    def __init__(
        self, gated: Collection[str], hitl: HumanInTheLoopMiddleware | None, mode: str
    ) -> None:
        self.gated = frozenset(gated)
        self.hitl = hitl
        self.mode = mode

    def _gates(self, request: ToolCallRequest) -> bool:
        """By the call's name or the tool that runs (a wrapper may resolve a loose name)."""
        tool, name = request.tool, request.tool_call["name"]
        return name in self.gated or (tool is not None and tool.name in self.gated)

    # -- sync -----------------------------------------------------------------------------

    def wrap_tool_call(self, request: ToolCallRequest, handler: Execute) -> Result:
        held = _held(request)
        if held is not None:
            return held
        if self.hitl is None:
            return self._checked(request, handler)
        return self.hitl.wrap_tool_call(
            request, lambda to_run: edit_marked(self._checked(to_run, handler), request, to_run)
        )

    def _checked(self, request: ToolCallRequest, handler: Execute) -> Result:
        ledger, task = _ledger(request)
        if not self._gates(request):
            return self._run(request, handler, ledger, task)
        decision = self._decision(request)
        if decision is None:
            return refused(request.tool_call)
        return self._spend(request, handler, ledger, task, decision, 0)

    def _spend(
        self,
        request: ToolCallRequest,
        handler: Execute,
        ledger: Ledger | None,
        task: str,
        decision: str,
        asked: int,
    ) -> Result:
        if ledger is None or ledger.claim(decision, request.tool_call["id"]):
            return self._run(request, handler, ledger, task, decision)
        question, entered = f"{task}/ask/{asked + 1}", []
        shown = answers_it(request, ledger.asked(question))

        def again(to_run: ToolCallRequest) -> Result:
            entered.append(to_run)
            if not shown:  # and never again: LangGraph keeps this answer for the question
                ledger.mark_asked(question, None)
                return not_shown(to_run.tool_call)
            return self._spend(to_run, handler, ledger, task, question, asked + 1)

        try:
            return self._ask(request, again)
        except GraphBubbleUp as paused:
            if not entered:  # the question's own pause (not one of the tool's): it was shown
                ledger.mark_asked(question, interrupt_ids(paused))
            raise

    def _run(
        self,
        request: ToolCallRequest,
        handler: Execute,
        ledger: Ledger | None,
        task: str,
        decision: str | None = None,
    ) -> Result:
        attempt = ledger.start(task, request.tool_call["id"]) if ledger is not None else None
        try:
            result = handler(request)
        except Exception as exc:  # it ended (with an error); a kill or Ctrl-C leaves it unfinished
            if attempt is not None:
                ledger.finish(attempt)  # type: ignore[union-attr]
                if decision is not None and isinstance(exc, GraphBubbleUp):
                    ledger.release(decision)  # type: ignore[union-attr]  # the tool paused itself
            raise
        if attempt is not None:
            ledger.finish(attempt)  # type: ignore[union-attr]
        return rerun_marked(result, request.tool_call["id"], attempt)

    def _ask(self, request: ToolCallRequest, then: Execute) -> Result:
        """Ask the person again about this call, in the run's approval format."""
        assert self.hitl is not None  # a gated tool means the run has approval middleware
        if self.mode == "per_call":
            return self.hitl.wrap_tool_call(
                request, lambda to_run: edit_marked(then(to_run), request, to_run)
            )
        outcome = asked_again(self.hitl, request)
        if isinstance(outcome, ToolMessage):
            return outcome
        to_run, edited = outcome
        return with_edit_notice(then(to_run), to_run, edited)

    # -- async ----------------------------------------------------------------------------

    async def awrap_tool_call(self, request: ToolCallRequest, handler: AsyncExecute) -> Result:
        held = _held(request)
        if held is not None:
            return held
        if self.hitl is None:
            return await self._achecked(request, handler)

        async def checked(to_run: ToolCallRequest) -> Result:
            return edit_marked(await self._achecked(to_run, handler), request, to_run)

        return await self.hitl.awrap_tool_call(request, checked)

    async def _achecked(self, request: ToolCallRequest, handler: AsyncExecute) -> Result:
        ledger, task = _ledger(request)
        if not self._gates(request):
            return await self._arun(request, handler, ledger, task)
        decision = self._decision(request)
        if decision is None:
            return refused(request.tool_call)
        return await self._aspend(request, handler, ledger, task, decision, 0)

    async def _aspend(
        self,
        request: ToolCallRequest,
        handler: AsyncExecute,
        ledger: Ledger | None,
        task: str,
        decision: str,
        asked: int,
    ) -> Result:
        if ledger is None or await ledger.aclaim(decision, request.tool_call["id"]):
            return await self._arun(request, handler, ledger, task, decision)
        question, entered = f"{task}/ask/{asked + 1}", []
        shown = answers_it(request, await ledger.aasked(question))

        async def again(to_run: ToolCallRequest) -> Result:
            entered.append(to_run)
            if not shown:  # and never again: LangGraph keeps this answer for the question
                await ledger.amark_asked(question, None)
                return not_shown(to_run.tool_call)
            return await self._aspend(to_run, handler, ledger, task, question, asked + 1)

        async def answered(to_run: ToolCallRequest) -> Result:
            return edit_marked(await again(to_run), request, to_run)

        assert self.hitl is not None
        try:
            if self.mode == "per_call":
                return await self.hitl.awrap_tool_call(request, answered)
            outcome = asked_again(self.hitl, request)
            if isinstance(outcome, ToolMessage):
                return outcome
            to_run, edited = outcome
            return with_edit_notice(await again(to_run), to_run, edited)
        except GraphBubbleUp as paused:
            if not entered:  # the question's own pause (not one of the tool's): it was shown
                await ledger.amark_asked(question, interrupt_ids(paused))
            raise

    async def _arun(
        self,
        request: ToolCallRequest,
        handler: AsyncExecute,
        ledger: Ledger | None,
        task: str,
        decision: str | None = None,
    ) -> Result:
        call_id = request.tool_call["id"]
        attempt = await ledger.astart(task, call_id) if ledger is not None else None
        try:
            result = await handler(request)
        except Exception as exc:  # it ended (with an error); a kill or Ctrl-C leaves it unfinished
            if attempt is not None:
                await ledger.afinish(attempt)  # type: ignore[union-attr]
                if decision is not None and isinstance(exc, GraphBubbleUp):
                    await ledger.arelease(decision)  # type: ignore[union-attr]  # a tool's pause
            raise
        if attempt is not None:
            await ledger.afinish(attempt)  # type: ignore[union-attr]
        return rerun_marked(result, request.tool_call["id"], attempt)

    # -- the decision ---------------------------------------------------------------------

    def _decision(self, request: ToolCallRequest) -> str | None:
        """The id of the decision that lets this call run as it is, or None.

        per_call: HITL, the layer just outside, paused for this gated call and handed on the
        call the person approved or edited (the same tool: its edit schema pins the name), so
        the decision belongs to this task. batched: the review step's seal for this call id
        must verify for the tool and arguments that are about to run."""
        call = request.tool_call
        if self.mode == "per_call":  # HITL asks by the call's name: a loose one was not asked
            return f"{_ids(request)[1]}/hitl" if call["name"] in self.gated else None
        state = request.state if isinstance(request.state, dict) else {}
        seals = state.get("approvals") or {}
        return sealed(_ids(request)[0], call, seals.get(call["id"]))


def _held(request: ToolCallRequest) -> ToolMessage | None:
    """A call act leaves alone (a skipped result: nothing is written for it): one that already
    has a result, one that still waits for the review, one of the thread's steps when no run
    is under way (the next turn closes it)."""
    state = request.state if isinstance(request.state, dict) else {}
    call_id = request.tool_call["id"]
    run = state.get("run") or {}
    waiting = call_id in (run.get("review") or [])
    found, answered = _found(state, call_id)
    if waiting or answered or (found and run_status(state) != "running"):
        return ToolMessage(
            "",
            tool_call_id=call_id,
            name=request.tool_call["name"],
            response_metadata={SKIPPED: True},
        )
    return None


def _found(state: dict[str, Any], call_id: str) -> tuple[bool, bool]:
    """Whether a step of the thread made this call, and whether it has a result after it
    (read from the end back to the step that made it)."""
    answered = False
    for message in reversed(state.get("messages") or []):
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            answered = True
        elif isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return True, answered
    return False, answered


def _ids(request: ToolCallRequest) -> tuple[str | None, str]:
    info = getattr(request.runtime, "execution_info", None)
    return (info.thread_id, info.task_id) if info is not None else (None, "")


def _ledger(request: ToolCallRequest) -> tuple[Ledger | None, str]:
    """The thread's ledger; none for a run that stores no checkpoints: it can be neither
    resumed nor replayed, so there is no later run to spend a decision or mark a rerun for."""
    thread, task = _ids(request)
    if not checkpointed(getattr(request.runtime, "config", None)):
        return None, task
    return ledger_for(request.runtime.store, thread), task
