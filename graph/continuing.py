"""Where a run continues from, checked before LangGraph starts it (`graph.checked` calls these):
a resume needs a paused run and a question that was asked, a bare continue something left to
run, a named checkpoint one the thread holds; and a write made for a served run before it starts
is stored outside that run. LangGraph would otherwise fail inside (UnboundLocalError, "no input
for __start__"), start from an empty state, or take the run for a re-entry and drop its input.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Command

from graph.state import run_status
from graph.thread_writes import decided_calls, waiting_calls


class NothingToResume(ValueError):
    """A resume (or a bare continue) that no paused run waits for, or a command that carries
    nothing."""


class UnknownCheckpoint(ValueError):
    """A run or a state update from a checkpoint the thread does not hold."""


def deciding(input: Any) -> bool:
    return isinstance(input, Command) and input.resume is not None


def outside_the_run(config: Any) -> Any:
    """The config of a write made before a served run starts, without the run's id (None
    overrides the one the server's config and the ambient run config carry): LangGraph takes a
    head checkpoint stored under the run's own id for a re-entry into that run (a stream
    reconnecting) and would ignore the run's input."""
    metadata = {**(config.get("metadata") or {}), "run_id": None}
    return {
        **config,
        "metadata": metadata,
        "configurable": {**config["configurable"], "run_id": None},
    }


def named_checkpoint(config: Any) -> bool:
    return bool(((config or {}).get("configurable") or {}).get("checkpoint_id"))


def check_known(saved: Any, config: Any) -> None:
    """A checkpoint a run or an update starts from is one the thread holds: LangGraph starts
    from an empty state instead (the thread's conversation replaced, or no input found)."""
    if saved is None:
        configurable = config["configurable"]
        raise UnknownCheckpoint(
            f"Thread {configurable.get('thread_id')!r} has no checkpoint "
            f"{configurable['checkpoint_id']!r}; list its checkpoints (the thread's history) "
            "and name one of them."
        )


def continues(input: Any, config: Any) -> bool:
    """A resume, or a bare continue at the thread's head."""
    if isinstance(input, Command):
        return input.resume is not None
    return input is None and not named_checkpoint(config)


def check_resume(snapshot: Any, input: Any) -> None:
    """A resume needs a paused run; a run cut short by a store failure (status still
    `running`, nothing next) may be continued too. A decision answers a question that was
    asked: where calls wait for one, or hold one already (a fork between the review and the
    calls), and none is asked at this checkpoint, it would answer the next question unseen."""
    if not snapshot.next and run_status(snapshot.values or {}) != "running":
        status = (snapshot.values or {}).get("status")
        where = f"its last run ended with status {status!r}" if status else "it has no run yet"
        retry = (  # a failed model call: its last good step is kept, and can be run again
            "; or run it again from its last step with "
            "graph.persistence.resume.resume_config(agent, config) (`react-agent resume`)"
            if status in ("error", "timeout")
            else ""
        )
        raise NothingToResume(
            f"Nothing to resume: no run on this thread is paused ({where}); send a new message "
            f"instead{retry}."
        )
    if not deciding(input) or snapshot.interrupts:
        return
    if waiting_calls(snapshot.values or {}):
        raise NothingToResume(
            "Nothing to resume: no question is asked at this point (the thread changed after "
            "the pause); continue the run (input None) to be asked about the calls as they are."
        )
    if decided_calls(snapshot.values or {}):
        # a checkpoint between the review and the calls (a fork, a replay): LangGraph would hand
        # the decision to the question act asks when a call's decision is spent, unseen
        raise NothingToResume(
            "Nothing to resume: the calls at this checkpoint were decided already and no "
            "question is asked here; continue the run (input None), and a call whose decision "
            "was used is asked about again."
        )
