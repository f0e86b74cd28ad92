"""Start the embedded model while a command gets ready, for a run that nothing can stop first.

The embedded model takes seconds before its first answer: its llama.cpp server starts (about a
second) and evaluates the worked records at the head of every prompt (about two and a half on
two cores). Both run in the server's process, so they can overlap with what this process does
meanwhile: importing LangGraph, building the graph, opening the store. `start_model` does that
for a question on a new thread whose settings, tools and store are the kind that cannot fail
later (default store, built-in tools); any other run starts its model on its first turn, as
before. `Session.ready` then finds the model started.

The thread is not a daemon: a command that ends early (an error, a run with nothing to do)
waits for the start to finish before the interpreter exits, then stops the server, instead of
leaving a thread mid-start while the interpreter shuts down.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any


def start_model(run: Any) -> threading.Thread | None:
    """The run's model started in a background thread (the embedded one: its server up and
    its worked records evaluated), or None when the run is not one to start early."""
    from graph.models.factory import wants_local
    from graph.settings import resolve_context

    try:
        ctx = resolve_context(run.settings(), labels=run.flags())
    except Exception:
        return None  # the command's own check reports it, in one sentence
    if not (wants_local(ctx) and _nothing_left_to_check(run, ctx)):
        return None
    thread = threading.Thread(target=_start, args=(ctx,), name="model-start")
    thread.start()
    return thread


def _nothing_left_to_check(run: Any, ctx: Any) -> bool:
    """The default store, and only built-in tools by name: what the command checks next
    cannot fail, so the model is surely needed."""
    from graph.cli.locations import default_store, store_url
    from tools import TOOL_NAMES

    built_in = all(name in TOOL_NAMES for name in ctx.tools or ())
    return store_url(run.checkpointer) == default_store() and built_in and not ctx.mcp_config


def _start(ctx: Any) -> None:
    with contextlib.suppress(Exception):  # `Session.ready` starts it again and reports why
        from graph.models.local.server import local_server, prefill

        server = local_server()  # first: it starts while LangChain loads below
        from graph.models.factory import resolve_model

        model = resolve_model(ctx)
        prefill(server.base_url, model.prompt_for([], None))  # type: ignore[attr-defined]
