"""The one place that reads LangChain internals, because no public route exists.

`@hook_config(can_jump_to=[...])` (and the `can_jump_to=` argument of the decorator forms)
records a hook's declared jumps as a `__can_jump_to__` attribute on the function;
`create_agent` reads it through a private helper. We read the same attribute here, and
`tests/unit/test_middleware_compat.py` fails loudly if an upgrade moves it.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware

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
