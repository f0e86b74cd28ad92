"""Where an unfinished run continues from.

A crash or an interrupt leaves the last checkpoint with tasks still to run: continue there. A
store that failed between two checkpoints (a full disk) can leave the last one with its tasks'
results saved but the next checkpoint missing: LangGraph then shows those results applied and
nothing next, while the run's status still says `running`; continuing from that checkpoint
(named by its id) picks the run up from those results. A model endpoint that stayed down ends
the run with status `error` but keeps every step before the failed model call: continue from
the checkpoint just before that call (a fork, so the failed attempt stays in the history). A run
ended by unusable replies continues from before the first of them, so the model is asked again
with none counted against it (from the last one, the corrections policy would end it at once).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from graph.state import run_status


def resume_from(snapshot: StateSnapshot, history: list[StateSnapshot]) -> RunnableConfig | None:
    """The checkpoint config to continue from, or None when there is nothing to resume."""
    values = snapshot.values or {}
    if snapshot.next:  # the thread's latest checkpoint, so its saved writes are reused
        thread_id = snapshot.config["configurable"]["thread_id"]
        return {"configurable": {"thread_id": thread_id}}
    if run_status(values) == "running":  # cut short between two checkpoints: from the last
        return snapshot.config
    if values.get("status") != "error":
        return None
    for earlier in history:  # newest first
        streak = ((earlier.values or {}).get("run") or {}).get("invalid_streak")
        if earlier.next == ("think",) and not streak:
            return earlier.config
    return None


def resume_config(agent: Any, config: RunnableConfig) -> RunnableConfig | None:
    snapshot = agent.get_state(config)
    history = [] if snapshot.next else list(agent.get_state_history(config, limit=50))
    return resume_from(snapshot, history)


async def aresume_config(agent: Any, config: RunnableConfig) -> RunnableConfig | None:
    snapshot = await agent.aget_state(config)
    history = [] if snapshot.next else [s async for s in agent.aget_state_history(config, limit=50)]
    return resume_from(snapshot, history)
