"""What can go wrong with stored checkpoints during a run, as exceptions whose text is one
sentence: what failed, which thread, and how to go on.

`PersistenceError` is the base a caller catches (the command line prints it and exits 1):

- `StoreError`: the checkpoint store could not be read or written (the PostgreSQL connection
  closed mid-run, the server went away, a SQLite disk error). The steps saved before it are
  kept; the run continues with `react-agent resume --thread T` once the store is back.
- `CorruptCheckpoint`: a stored checkpoint of one thread cannot be decoded. Other threads are
  unaffected.
- `LockLost`: the thread's lock was lost while the run held it (its database connection
  closed); the run was stopped so that no other worker runs the thread twice.

Driver text in these messages has been through `graph.redaction.redact`.
"""

from __future__ import annotations

import shlex

from graph.redaction import redact


class PersistenceError(RuntimeError):
    """A checkpoint store or a thread lock failed; `str()` is one sentence for the user."""

    def __init__(self, message: str, *, thread_id: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class StoreError(PersistenceError):
    """The checkpoint store could not be read or written (connection lost, disk error)."""


class CorruptCheckpoint(PersistenceError):
    """A stored checkpoint of a thread cannot be decoded."""


class LockLost(PersistenceError):
    """The thread's lock was lost during the run, and the run was stopped."""


def resume_command(thread_id: str) -> str:
    """`react-agent resume --thread T`, quoted for a shell."""
    return f"react-agent resume --thread {shlex.quote(thread_id)}"


def reason_of(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """The first line of a driver error, redacted, without a trailing period."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return redact(text, secrets).rstrip(".")


__all__ = [
    "CorruptCheckpoint",
    "LockLost",
    "PersistenceError",
    "StoreError",
    "reason_of",
    "resume_command",
]
