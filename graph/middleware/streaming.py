"""The stream transformers the agent registers when it is compiled, as `create_agent` does, so a
client of `stream_events(version="v3")` gets the same projections from either agent.

* `ToolCallTransformer` (LangGraph's): `run.tool_calls`, a handle per tool call with its output;
* `SubagentTransformer` (LangChain's): `run.subagents`, a handle per named agent run inside a
  tool (`build_graph(name=...)` and `create_agent(name=...)` name theirs);
* each middleware's own `transformers` (`AgentMiddleware.transformers`): `PIIMiddleware` scrubs
  the streamed text with one, and `InternalCallTransformer` keeps the model calls a middleware
  makes for itself (a summary, a tool selection) out of `run.messages`;
* then the caller's `transformers=`, as `create_agent` takes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langgraph.prebuilt import ToolCallTransformer

from graph._compat import subagent_transformer

TransformerFactory = Callable[[tuple[str, ...]], Any]


def stream_transformers(
    middleware: Sequence[AgentMiddleware], given: Iterable[TransformerFactory] = ()
) -> list[TransformerFactory]:
    """The factories in `create_agent`'s order, each once (by identity: several middleware may
    declare the same shared transformer, and a factory need not be hashable)."""
    declared = [t for ware in middleware for t in getattr(ware, "transformers", ())]
    factories = [ToolCallTransformer, subagent_transformer(), *declared, *given]
    seen: set[int] = set()
    return [f for f in factories if id(f) not in seen and not seen.add(id(f))]
