"""The one place that leans on other packages' internals, because no public route exists.
`tests/unit/test_compat.py` fails loudly if an upgrade moves either.

* `@hook_config(can_jump_to=[...])` (and the `can_jump_to=` argument of the decorator forms)
  records a hook's declared jumps as a `__can_jump_to__` attribute on the function;
  `create_agent` reads it through a private helper. We read the same attribute.
* `StateGraph.compile()` has no parameter for the compiled graph's class. The agent's
  `AgentGraph` (input checks before a run starts) is built by its own constructor from the
  compiled graph's fields, the way `Pregel.copy()` builds every copy (`with_config` too).
* `StateGraph.add_node` takes a function or a runnable, not a sync and an async form without a
  runnable around them. A `RunnableLambda` gives both but opens a callback run of its own on
  every call, on top of the one LangGraph opens for the task (a sixth of the agent's CPU
  per iteration), and a plain function as a router runs in a worker thread after every node in
  async runs. `create_agent` builds its nodes and routers as LangGraph's `RunnableCallable`
  with `trace=False`; so do we (`untraced`).
* Whether a run has a checkpointer: LangGraph puts it in the run's config under
  `langgraph.constants.CONFIG_KEY_CHECKPOINTER` (exported "for backwards compatibility"), and
  no public accessor says it. A run without one can be neither resumed nor replayed, so the
  approvals ledger has nothing to record for it (`checkpointed`).
* `ToolNode` takes one call with the state to inject as a `ToolCallWithContext` dict (the
  payload `create_agent`'s `Send` used to carry; LangGraph calls it internal). Given a bare list
  of calls instead, it reads the state again by copying every channel of the graph: act already
  holds the state when it is reached by an edge, so it hands it over (`tool_input`).
* A router that asks for LangGraph's `runtime` argument cannot be run by
  `update_state(as_node=...)`, which runs the node's edges without one (LangGraph raises); the
  run's runtime is in the config under `CONFIG_KEY_RUNTIME` when there is one (`config_runtime`).
* `create_agent` traces a middleware's `wrap_*` calls as LangSmith spans and its node hooks
  with the middleware's `TracePolicy`, else the default `configure_trace_policy` set; that
  default is read at call time through private helpers (`wrap_span`, `node_trace_policy`).
* `create_agent` registers LangChain's `SubagentTransformer` (`run.subagents` in
  `stream_events(version="v3")`) from a private module; nothing exports it
  (`subagent_transformer`).
* An aiosqlite connection that fails to open stops its worker thread without joining it, and
  the thread then reports to an event loop `asyncio.run` may have closed (a traceback on a
  user's terminal). aiosqlite keeps the thread as `_thread` (`aiosqlite_worker`), so the
  store's opener waits for it while the loop runs.
* A paused task's interrupt is stored among a checkpoint's pending writes (public, in
  `CheckpointTuple`) under a channel whose name LangGraph keeps private (`__interrupt__`):
  `holds_interrupt` reads it, so a paused thread is known without rebuilding its state.
* A resume keyed by interrupt ids (`Command(resume={id: value})`) reaches a task as a map in
  its config under a private key; LangGraph hands the value keyed by a task's *first* interrupt
  id to its later interrupts too ("older versions gave all of a task's interrupts the first
  id"). act's question about a spent decision is such a later interrupt, so it reads the map
  (`resume_keys`) to tell an answer to itself from a copy of the first.
* Whether a model takes the provider's structured output beside its tools is `create_agent`'s
  private `_supports_provider_strategy` (it knows that Gemini before 3 cannot combine the two):
  `provider_output_with_tools` asks it, where the model's profile says it has one.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from langchain.agents.factory import _wrap_trace_kwargs
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware._trace_policy import _node_trace_policy
from langchain_core.runnables import Runnable
from langgraph._internal._constants import CONFIG_KEY_RESUME_MAP, CONFIG_KEY_RUNTIME
from langgraph._internal._runnable import RunnableCallable
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import TracePolicy
from langsmith import traceable

G = TypeVar("G", bound=CompiledStateGraph)

JUMP_ATTRIBUTE = "__can_jump_to__"


def declared_jumps(middleware: AgentMiddleware, hook: str) -> list[str]:
    """The destinations a hook declared (`'model'`, `'tools'`, `'end'`), or none."""
    for name in (hook, f"a{hook}"):
        method: Any = getattr(type(middleware), name, None)
        if method is None or method is getattr(AgentMiddleware, name, None):
            continue
        jumps = getattr(method, JUMP_ATTRIBUTE, None)
        if jumps:
            return list(jumps)
    return []


def compiled_as(compiled: CompiledStateGraph, kind: type[G]) -> G:
    """The compiled graph as an instance of `kind`, a subclass that adds checks only."""
    fields = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
    return kind(**fields)


def tool_input(call: dict[str, Any], state: dict[str, Any] | None) -> Any:
    """ToolNode's input for one call: with the state act read (injected into the tools that
    ask for it), or, without one, the bare call (ToolNode reads the state itself)."""
    if state is None:
        return [call]
    return {"__type": "tool_call_with_context", "tool_call": call, "state": state}


def untraced(func: Any, afunc: Any, name: str) -> Runnable:
    """A node or a router, run by LangGraph as it runs `create_agent`'s: inline in both kinds
    of run (with no async form, `ainvoke` calls the sync one), with no callback run of its own
    (the task's run is the node's run, so the messages a node writes still reach clients
    streaming `messages`)."""
    return RunnableCallable(func, afunc, name=name, trace=False)


def both(func: Any, afunc: Any = None, *, name: str | None = None) -> Runnable:
    """A node with a sync and an async form. Bookkeeping runs inline in async runs too (a plain
    function would be sent to a worker thread for every call)."""
    if afunc is None:

        async def afunc(state: Any) -> Any:
            return func(state)

    return untraced(func, afunc, name or func.__name__)


def inline(router: Any) -> Runnable:
    """A router as `create_agent` adds its own: run inline in async runs too (a plain function
    would go to a worker thread after every node), its input read by its annotation."""
    return untraced(router, None, router.__name__)


def checkpointed(config: Any) -> bool:
    """Whether the run this config belongs to stores checkpoints (so it can be resumed)."""
    configurable = (config or {}).get("configurable") or {}
    return configurable.get(CONFIG_KEY_CHECKPOINTER) is not None


def subagent_transformer() -> Any:
    """LangChain's stream transformer for nested named agents, as `create_agent` registers it
    (imported here, on first use: `graph.middleware.streaming`)."""
    from langchain.agents._subagent_transformer import SubagentTransformer

    return SubagentTransformer


def config_runtime(config: Any) -> Any:
    """The run's `Runtime` as LangGraph keeps it in a task's config, or None (a client's
    `update_state`, which runs a node's edges outside a run)."""
    return ((config or {}).get("configurable") or {}).get(CONFIG_KEY_RUNTIME)


def wrap_span(middleware: AgentMiddleware, hook: str, func: Any) -> Any:
    """`func` (the middleware's `hook`) in the LangSmith span `create_agent` gives it."""
    return traceable(name=f"{middleware.name}.{hook}", **_wrap_trace_kwargs(middleware))(func)


def node_trace_policy(policy: TracePolicy | None) -> TracePolicy:
    """A node hook's `TracePolicy` as `create_agent` builds it: the middleware's own, else the
    process default, looked up when the hook runs."""
    return _node_trace_policy(policy)


def aiosqlite_worker(conn: Any) -> threading.Thread | None:
    """The worker thread of an aiosqlite connection, or None where aiosqlite keeps none."""
    worker = getattr(conn, "_thread", None)
    return worker if isinstance(worker, threading.Thread) else None


INTERRUPT_CHANNEL = "__interrupt__"  # langgraph._internal._constants.INTERRUPT


def holds_interrupt(saved: Any) -> bool:
    """Whether a checkpoint (a `CheckpointTuple`, or None) has a paused task."""
    writes = getattr(saved, "pending_writes", None) or ()
    return any(channel == INTERRUPT_CHANNEL for _, channel, _ in writes)


def resume_keys(config: Any) -> frozenset[str] | None:
    """The interrupt ids the run's resume answers by id, None for a run not resumed by ids."""
    resume = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_RESUME_MAP)
    return frozenset(resume) if isinstance(resume, dict) else None


def provider_output_with_tools(model: Any, tools: list[Any]) -> bool:
    """`create_agent`'s answer to "provider structured output for this model and tools?"."""
    from langchain.agents.factory import _supports_provider_strategy

    return bool(_supports_provider_strategy(model, tools=tools))
