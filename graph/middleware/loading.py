"""Middleware named by import path (`module:attr`), the operator's way to add middleware to the
`react-agent` command and the served graph (`langgraph dev`, Studio), where no code calls
`build_graph(middleware=...)`. Operator-only: no run context can name one."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from graph.settings import ConfigError


def load_middleware(paths: Sequence[str]) -> list[AgentMiddleware]:
    """The middleware each path names: an instance, a class taking no arguments, or a function
    returning an instance or a list of them."""
    found: list[AgentMiddleware] = []
    for path in paths:
        found.extend(_load_one(path.strip()))
    return found


def _load_one(path: str) -> list[AgentMiddleware]:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(
            f"REACT_AGENT_MIDDLEWARE entry {path!r} is not an import path; write module:attr, "
            "e.g. my_project.guards:pii."
        )
    try:
        value: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"REACT_AGENT_MIDDLEWARE entry {path!r} cannot be imported ({exc}); check the "
            "module is installed and the name is right."
        ) from None
    if (isinstance(value, type) and issubclass(value, AgentMiddleware)) or (
        callable(value) and not isinstance(value, AgentMiddleware)
    ):
        value = value()
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items or not all(isinstance(item, AgentMiddleware) for item in items):
        raise ConfigError(
            f"REACT_AGENT_MIDDLEWARE entry {path!r} is not LangChain AgentMiddleware (got "
            f"{type(value).__name__}); name an instance, a class or a function returning one."
        )
    return list(items)


def check_names(wares: Sequence[AgentMiddleware]) -> None:
    """Each middleware runs once: two with one name would share one node and state slice."""
    names = [w.name for w in wares]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ConfigError(
            f"Middleware {', '.join(doubled)} is given twice; each middleware runs once (give "
            "one of them another `name`)."
        )
