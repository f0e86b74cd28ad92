"""A ReAct agent as a LangGraph state machine.

    from graph import build_graph, graph
    agent = build_graph(model="gpt-4o-mini", tools=[...], checkpointer=saver)
    out = agent.invoke({"messages": [("user", "What is 17 * 23?")]},
                       {"configurable": {"thread_id": "t1"}})
    out["answer"], out["status"], out["steps"]

Importing this package has no side effects: it reads no environment, no `.env` file and builds
nothing. `graph` (what `langgraph.json` serves: `build_graph()` with defaults and no
checkpointer) is compiled on first access; `.env` is read by the `react-agent` command and by
`langgraph.json`'s `env` key, not here.

The folders, one concern each (docs/architecture.md draws them): `nodes/` (think, review, act,
observe, finish), `loop/` (what the nodes share), `policies/` (the loop's policies as
middleware), `middleware/` (LangChain middleware hosted on this graph, approvals), `protocols/`
(native tool calls; the text ReAct protocol as a chat model), `models/` (chat models, the
embedded llama.cpp model), `tooling/` (the tool registry, running calls), `settings/`,
`persistence/` (savers, locks, resume, forks, history), `tracing/`, `cli/` (`react-agent`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from graph.agent import build_graph, recursion_limit_for
    from graph.settings import AgentContext, ConfigError

    graph: CompiledStateGraph

_EXPORTS = {
    "build_graph": "graph.agent",
    "recursion_limit_for": "graph.agent",
    "AgentContext": "graph.settings",
    "ConfigError": "graph.settings",
}

__all__ = ["AgentContext", "ConfigError", "build_graph", "graph", "recursion_limit_for"]


def __getattr__(name: str) -> Any:
    """Resolve the public names on first use, so `import graph` stays cheap and inert."""
    if name == "graph":
        from graph.agent import served_graph

        return served_graph()  # built once per process
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graph' has no attribute {name!r}")
