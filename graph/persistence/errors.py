"""What can go wrong with stored checkpoints during a run, as exceptions whose text is one
sentence: what failed, which thread, and how to go on.

`PersistenceError` is the base a caller catches (the command line prints it and exits 1):

- `StoreError`: the checkpoint store could not be read or written (the PostgreSQL connection
  closed mid-run, the server went away, a SQLite disk error). The steps saved before it are
  kept; the run continues with `react-agent resume --thread T` (`uv run react-agent ...` under
  uv) once the store is back.
- `CorruptCheckpoint`: a stored checkpoint of one thread cannot be decoded. Other threads are
  unaffected.
- `LockLost`: the thread's lock was lost while the run held it (its database connection
  closed); the run was stopped so that no other worker runs the thread twice.

Driver text in these messages has been through `graph.redaction.redact`.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

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


class ThreadBusy(RuntimeError):
    """Another process is running this thread right now."""

    @classmethod
    def of(cls, thread_id: str) -> ThreadBusy:
        return cls(
            f"Thread {thread_id} is busy: another run on it is in progress. Wait for it to "
            f"finish (or stop it), then try again."
        )


def program() -> str:
    """The command as the user typed it, for hints that say how to go on: `uv run react-agent`
    when this process is the `react-agent` command started by `uv run` (a bare `react-agent` is
    then not on the user's PATH), else `react-agent`, the installed script.

    `uv run` marks the process it starts with UV_RUN_RECURSION_DEPTH; that variable is
    inherited by everything below it too (a test suite run with `uv run pytest` starts the
    command itself), so where the system shows the parent process (/proc) it must be uv."""
    if not os.environ.get("UV_RUN_RECURSION_DEPTH"):
        return "react-agent"
    if os.path.basename(sys.argv[0] if sys.argv else "") != "react-agent":
        return "react-agent"  # not the command: the hint names the command all the same
    try:
        parent = Path(f"/proc/{os.getppid()}/comm").read_text(encoding="utf-8").strip()
    except OSError:  # no /proc (macOS): the variable alone says it
        return "uv run react-agent"
    return "uv run react-agent" if parent in ("uv", "uv.exe") else "react-agent"


def resume_command(thread_id: str, options: str = "") -> str:
    """`react-agent resume --thread T` as the user runs it (`program`), quoted for a shell,
    with the `options` the run was started with that the resume needs too."""
    return f"{program()} resume --thread {shlex.quote(thread_id)}{options}"


def as_sentences(text: str) -> str:
    """Another library's message (possibly several lines) as sentences on one line, each ending
    with its own stop, so a sentence of ours can follow it: a driver's "...accepting TCP/IP
    connections?" stays a question ("...connections? Check ...", never "connections?. Check")."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    return " ".join(line if line[-1] in ".?!" else f"{line}." for line in lines)


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
    "ThreadBusy",
    "as_sentences",
    "program",
    "reason_of",
    "resume_command",
]
