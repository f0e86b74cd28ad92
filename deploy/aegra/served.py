"""What Aegra serves (deploy/aegra/aegra.json): the graph `langgraph.json` names, with one run at
a time per thread.

Aegra 0.11 ignores a run's `multitask_strategy`: two runs created on one thread (a double
submit, two tabs, `enqueue`) are executed at once, both start from the same checkpoint, and the
one that finishes last overwrites the other's turn while both report success. So each run's
execution holds the project's thread lock (`graph.persistence.locks.thread_lock`, a PostgreSQL
advisory lock in Aegra's database, watched for loss), taken before the run reads the thread's
checkpoint: a second run on a busy thread waits until the first has finished, then continues
from its result, whichever instance executes it. Instance crashes free the lock with the dead
instance's connection, so a run taken over after a crash (Aegra's leases) gets it back.

Aegra calls `agent(config, runtime)` for every use of the graph and enters the context manager
it returns around that use; only executions (`threads.create_run`) take the lock, reads of
state, history and schemas never wait.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any

from aegra_api.settings import settings
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph_sdk.runtime import ServerRuntime

from graph.persistence.locks import ThreadBusy, thread_lock
from graph.tracing import trace_from_environment

REPO = Path(__file__).resolve().parents[2]
GRAPH_ID = "agent"
RETRY = 0.1  # seconds between two tries of a busy thread's lock


@cache
def langgraph_json_graph(graph_id: str = GRAPH_ID) -> Pregel:
    """The graph `langgraph.json` names under `graph_id` (one source of truth for what
    `langgraph dev` and Aegra serve), built once per process: a factory is called, a compiled
    graph used as it is."""
    # OpenTelemetry when the standard OTEL_* variables ask (docs/tracing.md); nothing when Aegra's
    # own set-up (OTEL_TARGETS) instrumented LangChain first, so each run is traced once
    trace_from_environment()
    spec = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))["graphs"][graph_id]
    path, _, attribute = spec.partition(":")
    module = ".".join(Path(path).with_suffix("").parts).lstrip(".")
    target = getattr(importlib.import_module(module), attribute)
    return target if isinstance(target, Pregel) else target()


@asynccontextmanager
async def one_run_per_thread(url: str, thread_id: str) -> AsyncIterator[None]:
    """Hold the thread's lock for the body, waiting while another run holds it."""
    async with AsyncExitStack() as stack:
        while True:
            try:
                await stack.enter_async_context(thread_lock(url, thread_id))
                break
            except ThreadBusy:
                await asyncio.sleep(RETRY)
        yield


@asynccontextmanager
async def agent(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    """Aegra's graph factory for `agent` (see the module docstring)."""
    graph = langgraph_json_graph()
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if runtime.access_context != "threads.create_run" or not thread_id:
        yield graph
        return
    async with one_run_per_thread(settings.db.database_url_sync, str(thread_id)):
        yield graph
