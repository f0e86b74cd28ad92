"""What the compiled agent checks before LangGraph sees a run's input or a state update.

LangGraph fails inside on a few inputs a client can send: a resume where no run is paused
(UnboundLocalError, or a TypeError on the server), a command that carries nothing, messages
that cannot become messages (a validation dump, or an AttributeError). `AgentGraph` is the
compiled graph with those refused first, each in one sentence; everything else is LangGraph's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graph.message_reducer import check_messages
from graph.state import run_status


class NothingToResume(ValueError):
    """A resume (or a bare continue) that no paused run waits for, or a command that carries
    nothing."""


class AgentGraph(CompiledStateGraph):
    """The compiled agent. Before a run starts, a `Command` that carries nothing, a resume on a
    thread where no run is paused, and a bare continue (`None` input) at the head of a thread
    with nothing left to run are refused with one sentence; LangGraph would fail inside with
    UnboundLocalError or TypeError, or quietly hand back the old state. A continue from a named
    checkpoint (time travel) is LangGraph's own. `goto=None`, as the LangGraph server maps a
    command without one, means no goto. Messages in an input, a command or a state update
    that cannot become messages are refused with one sentence before LangGraph converts them
    (its own conversion fails with a validation dump or an AttributeError)."""

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        input = _command(input)
        if _continues(input, config) and self._has_threads(config):
            _check_resume(self.get_state(config))
        yield from super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        input = _command(input)
        if _continues(input, config) and self._has_threads(config):
            _check_resume(await self.aget_state(config))
        async for part in super().astream(input, config, **kwargs):
            yield part

    def bulk_update_state(self, config: Any, supersteps: Any) -> Any:
        _check_updates(supersteps)
        return super().bulk_update_state(config, supersteps)

    async def abulk_update_state(self, config: Any, supersteps: Any) -> Any:
        _check_updates(supersteps)
        return await super().abulk_update_state(config, supersteps)

    def _has_threads(self, config: Any) -> bool:
        configurable = (config or {}).get("configurable") or {}
        return isinstance(self.checkpointer, BaseCheckpointSaver) and "thread_id" in configurable


def _check_updates(supersteps: Any) -> None:
    for superstep in supersteps or ():
        for update in superstep or ():
            _check_values(update[0] if isinstance(update, tuple) else update)


def _check_values(values: Any) -> None:
    if isinstance(values, dict) and "messages" in values:
        check_messages(values["messages"])


def _command(input: Any) -> Any:
    _check_values(input)
    if not isinstance(input, Command):
        return input
    _check_values(input.update)
    if input.goto is None:
        input = dataclasses.replace(input, goto=())
    if input.resume is None and input.update is None and not input.goto:
        raise NothingToResume(
            "The command carries nothing: send Command(resume=...) with the decisions for a "
            "paused run, or new messages as input."
        )
    return input


def _continues(input: Any, config: Any) -> bool:
    """A resume, or a bare continue at the thread's head."""
    if isinstance(input, Command):
        return input.resume is not None
    return input is None and "checkpoint_id" not in ((config or {}).get("configurable") or {})


def _check_resume(snapshot: Any) -> None:
    """A resume needs a paused run; a run cut short by a store failure (status still
    `running`, nothing next) may be continued too."""
    if not snapshot.next and run_status(snapshot.values or {}) != "running":
        status = (snapshot.values or {}).get("status")
        where = f"its last run ended with status {status!r}" if status else "it has no run yet"
        raise NothingToResume(
            f"Nothing to resume: no run on this thread is paused ({where}); send a new message "
            "instead."
        )
