"""finish: close the run. The status was decided by think or observe; finish writes what a
caller reads: the answer (or a plain notice of why the run stopped early) and the trace."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import get_runtime

from graph import messages as m
from graph.loop.bindings import Bindings
from graph.loop.closing import closing_update
from graph.settings import AgentContext, ConfigError
from graph.state import AgentState


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

    return finish
