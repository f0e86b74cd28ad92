"""Which thread locks the current run holds, so the savers can refuse to write once one is lost.

`thread_lock` registers its `LockState` in a context variable for the duration of the run.
Context variables travel with everything the run starts (LangGraph's tasks, its background
writers, `asyncio.to_thread`), so a checkpoint write for a thread whose lock was lost raises
`LockLost` wherever it comes from, even from a worker thread that cancellation cannot reach.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from graph.persistence.errors import LockLost, resume_command


@dataclass
class LockState:
    """One held thread lock: lost (and why) or not."""

    thread_id: str
    lost: str | None = None  # the reason, once the lock is gone
    closing: bool = False  # the run has ended: do not cancel it any more
    cancelled: bool = False  # the watcher cancelled the run's task

    def error(self) -> LockLost:
        return LockLost(
            f"The lock on thread {self.thread_id} was lost ({self.lost}); the run stopped so "
            f"that no other worker runs it twice. The steps saved before are kept; resume it "
            f"with: {resume_command(self.thread_id)}",
            thread_id=self.thread_id,
        )


_HELD: ContextVar[Mapping[str, LockState]] = ContextVar(
    "react_agent_held_locks", default=MappingProxyType({})
)


@contextmanager
def holding(state: LockState) -> Iterator[None]:
    """Register `state` for the current context (and everything started from it)."""
    token = _HELD.set(MappingProxyType({**_HELD.get(), state.thread_id: state}))
    try:
        yield
    finally:
        with suppress(ValueError):  # exited from another context: nothing to undo there
            _HELD.reset(token)


def ensure_held(config: Any) -> None:
    """Raise `LockLost` if this run holds the lock of the config's thread and lost it."""
    try:
        thread_id = config["configurable"]["thread_id"]
    except (KeyError, TypeError):
        return
    state = _HELD.get().get(str(thread_id))
    if state is not None and state.lost is not None:
        raise state.error()


__all__ = ["LockState", "ensure_held", "holding"]
