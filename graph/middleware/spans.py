"""A user's `wrap_model_call` / `wrap_tool_call` traced as `create_agent` traces it: each
call a LangSmith span of its own, named `<middleware>.wrap_model_call` (`awrap_...` in async
runs), its inputs scrubbed of the handler and the runtime and passed through the middleware's
`trace_policy` (else the process default). Node hooks: `graph.middleware.hooks`.

The loop's own policies (`graph.policies`) get no span per call: the `think` node's run holds
them, and a span costs about 40 µs per call even with tracing off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from graph._compat import wrap_span
from graph.middleware.chain import async_form


def traced_wrap(middleware: AgentMiddleware, hook: str) -> Callable[[Any, Any], Any]:
    """The middleware's sync `hook` (`wrap_model_call` or `wrap_tool_call`) in its span."""
    return wrap_span(middleware, hook, getattr(middleware, hook))


def traced_awrap(middleware: AgentMiddleware, hook: str) -> Callable[[Any, Any], Any]:
    """Its async form (a sync-only one run on a worker, `async_form`) in its span."""
    return wrap_span(middleware, f"a{hook}", async_form(middleware, hook))
