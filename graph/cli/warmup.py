"""Start the embedded model while a command gets ready, for a run that nothing can stop first.

The embedded model takes about a second before its first answer: llama.cpp loads the model
file, then the worked records at the head of every prompt are restored from the state saved
on disk (or, the first time on a machine, evaluated: about two and a half seconds on two
cores). Loading runs in C with the GIL released (llama.cpp's messages go to the engine's log,
never to this process's stdout or stderr), so it overlaps with what this process does
meanwhile: importing LangGraph, building the graph, opening the store. `start_model` does that
for a question on a new thread whose settings, tools and store are the kind that cannot fail
later (default store in a folder this user can write, built-in tools); any other run starts
its model on its first turn, as before. `Session.ready` then finds the model started.

The thread is not a daemon: a command that ends early (an error, a run with nothing to do)
waits for the start to finish before the interpreter exits, then frees the model, instead of
leaving a thread mid-start while the interpreter shuts down.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any


def start_model(run: Any, ctx: Any = None) -> threading.Thread | None:
    """The run's model started in a background thread (the embedded one: loaded and its
    worked records restored), or None when the run is not one to start early. `ctx` is the
    run's resolved settings (`RunOptions.context`), resolved here when not given."""
    from graph.models.factory import wants_local

    if ctx is None:
        try:
            ctx = run.context()
        except Exception:
            return None  # the command's own check reports it, in one sentence
    if not (wants_local(ctx) and _nothing_left_to_check(run, ctx)):
        return None
    thread = threading.Thread(target=_start, args=(ctx,), name="model-start")
    thread.start()
    return thread


def _nothing_left_to_check(run: Any, ctx: Any) -> bool:
    """The default store in a folder this user can write, and only built-in tools by name:
    what the command checks next cannot fail, so the model is surely needed."""
    from graph.cli.locations import default_store, store_url
    from tools import TOOL_NAMES
    from tools.support.files import state_dir

    built_in = all(name in TOOL_NAMES for name in ctx.tools or ())
    default = store_url(run.checkpointer) == default_store()
    return default and _writable(state_dir()) and built_in and not ctx.mcp_config


def _writable(folder: Path) -> bool:
    """Whether `folder` can be written, or created: the nearest existing path above it is a
    folder this user can write."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def _start(ctx: Any) -> None:
    with contextlib.suppress(Exception):  # `Session.ready` starts it again and reports why
        from graph.models.local.shared import local_server

        local_server()  # first: the model loads while LangChain loads below
        from graph.models.factory import resolve_model

        resolve_model(ctx).warm()  # type: ignore[attr-defined]
