"""The graph Aegra serves beside `agent` for tests/integration/test_probe_aegra_threads.py (loaded
by Aegra from this file, in the serving environment): `per_call`, the repository's graph with
`approval_mode="per_call"`, under the same one-run-per-thread lock deploy/aegra/served.py holds
for `agent` (Aegra takes a factory of two parameters only when they are annotated).
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph_sdk.runtime import ServerRuntime

REPO = Path(__file__).resolve().parents[2]


@cache
def _served() -> ModuleType:
    """deploy/aegra/served.py (its lock), loaded once under a name of its own."""
    spec = importlib.util.spec_from_file_location(
        "aegra_probe_served", REPO / "deploy" / "aegra" / "served.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _per_call_graph() -> Any:
    from graph import build_graph

    return build_graph(approval_mode="per_call")


@asynccontextmanager
async def per_call(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    """Aegra's factory for `per_call`: served.py's `agent` with another graph."""
    graph = _per_call_graph()
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if runtime.access_context != "threads.create_run" or not thread_id:
        yield graph
        return
    served = _served()
    async with served.one_run_per_thread(served.settings.db.database_url_sync, str(thread_id)):
        yield graph
