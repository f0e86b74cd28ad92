"""finish: close the run. The status was decided by think or observe; finish writes what a
caller reads: the answer (or a plain notice of why the run stopped early) and the trace, and
deletes the call ledger's records of the run's calls, whose results the thread now holds."""

from __future__ import annotations

import contextlib
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import get_runtime

from graph import messages as m
from graph._compat import both, checkpointed
from graph.loop.bindings import Bindings
from graph.loop.closing import closing_update
from graph.persistence.ledger import Ledger, ledger_for
from graph.settings import AgentContext, ConfigError
from graph.state import AgentState
from graph.steps import run_messages


def make_finish(b: Bindings) -> Any:
    def finish(state: AgentState) -> dict[str, Any]:
        try:
            ctx = b.context(get_runtime().context, read_env=False)
        except ConfigError:  # already reported by think as the run's error
            ctx = AgentContext()
        closing = closing_update(state, ctx, state.get("messages") or [])
        answer = closing.get("answer", state.get("answer"))
        status = closing.get("status", state.get("status"))
        notice = next(  # why the run stopped early, beside a best answer (`answer_on_limit`)
            (x.response_metadata.get(m.NOTICE) for x in closing.get("messages") or ()), None
        )
        write = get_stream_writer()
        if status == "answered":
            write({"event": "answer", "text": answer or ""})
        write(
            {
                "event": "final",
                "status": status,
                "answer": answer,
                "error": state.get("error"),
                **({"notice": notice} if notice and notice != answer else {}),
            }
        )
        return closing

    def sync_finish(state: AgentState) -> dict[str, Any]:
        update = finish(state)
        ledger, answered = _answered(state)
        if ledger is not None:
            with contextlib.suppress(Exception):  # housekeeping: never the run's failure
                ledger.forget(answered)
        return update

    async def async_finish(state: AgentState) -> dict[str, Any]:
        update = finish(state)
        ledger, answered = _answered(state)
        if ledger is not None:
            with contextlib.suppress(Exception):
                await ledger.aforget(answered)
        return update

    return both(sync_finish, async_finish, name="finish")


def _answered(state: AgentState) -> tuple[Ledger | None, set[str]]:
    """This run's calls that have their results, and the thread's ledger when it has records
    of them (a run with checkpoints and with calls)."""
    run = state.get("run") or {}
    messages = run_messages(state.get("messages") or [], run.get("question_id"))
    answered = {x.tool_call_id for x in messages if isinstance(x, ToolMessage)}
    if not answered or not checkpointed(get_config()):
        return None, answered
    runtime = get_runtime()
    info = runtime.execution_info
    return ledger_for(runtime.store, info.thread_id if info else None), answered
