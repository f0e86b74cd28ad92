"""How a command's run ends when it is stopped from outside: Ctrl-C, or SIGTERM (a supervisor,
`timeout`, `docker stop`), which ends it the same way instead of killing it silently.

Every finished step is already checkpointed (durability "sync"), so what is left to do is to say
how to go on: the resume command (with the options the run was started with), or that nothing
was kept, on stderr and, under `--json`, as one object on stdout that a script can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from graph.cli.output import json_text, say
from graph.cli.session import Unsaved
from graph.persistence.errors import resume_command

T = TypeVar("T")
SIGTERM_EXIT = 128 + signal.SIGTERM  # a shell's status for a process ended by SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt, so both end a run alike."""


def interrupted(
    thread_id: str, unsaved: Unsaved, url: str, options: str = ""
) -> tuple[str, str | None]:
    """What Ctrl-C (or SIGTERM) leaves, and the command that resumes it (None when nothing can
    be): the run saved, a question not saved yet (the model was still starting), or a memory
    store, which keeps nothing once we exit."""
    if url == "memory":
        return "Interrupted. The memory store ends with this command: nothing was kept.", None
    if unsaved.question:
        return (
            "Interrupted before the question was saved (the model was still starting): nothing "
            "of it was kept, so ask it again."
        ), None
    resume = resume_command(thread_id, options)
    return f"Interrupted. The run is saved; continue it with: {resume}", resume


def run_turns(
    coro: Coroutine[Any, Any, T],
    thread_id: str,
    unsaved: Unsaved,
    url: str,
    as_json: bool = False,
    options: str = "",
) -> T:
    """Run the agent; on Ctrl-C or SIGTERM say how to resume (or that nothing was kept) and
    leave at once (exit 130, or 143 for SIGTERM);
    with `as_json`, stdout gets it too, as an object (status `interrupted`, the resume command).

    Every finished step is already checkpointed (durability "sync"). A tool still running in a
    worker thread cannot be cancelled, and waiting for it would make Ctrl-C hang, so the process
    exits without waiting; that call runs again on resume (at least once, like a crash).
    """
    loop = asyncio.new_event_loop()
    try:
        with terminate_as_interrupt():
            result = loop.run_until_complete(coro)
    except KeyboardInterrupt as stopped:
        sys.stderr.write("\n")
        sentence, resume = interrupted(thread_id, unsaved, url, options)
        say(sentence)
        if as_json:
            summary = {"thread_id": thread_id, "status": "interrupted", "saved": resume is not None}
            summary |= {"resume": resume, "error": sentence}
            sys.stdout.write(json_text(summary, indent=2) + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(SIGTERM_EXIT if isinstance(stopped, Terminated) else 130)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
    return result


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the run goes on, SIGTERM raises `Terminated` in the main thread, as Ctrl-C raises
    KeyboardInterrupt (Python handles signals there only; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
