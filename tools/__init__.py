"""The tool registry: every built-in tool by name, so configuration can pick them with a string."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from langchain_core.tools import BaseTool

from tools.calculator import calculator

_REGISTRY: dict[str, Callable[[], BaseTool]] = {
    "calculator": lambda: calculator,
}

TOOL_NAMES: tuple[str, ...] = tuple(_REGISTRY)


class UnknownToolError(ValueError):
    """A tool name that is not in the registry."""


def load_tools(names: Iterable[str]) -> list[BaseTool]:
    """The tools with these names, in order; an unknown name lists the known ones."""
    wanted = [name.strip() for name in names if name.strip()]
    unknown = [name for name in wanted if name not in _REGISTRY]
    if unknown:
        raise UnknownToolError(
            f"Unknown tool {', '.join(repr(n) for n in unknown)}; "
            f"known tools: {', '.join(TOOL_NAMES)}."
        )
    return [_REGISTRY[name]() for name in dict.fromkeys(wanted)]


def default_tools() -> list[BaseTool]:
    """Every built-in tool."""
    return load_tools(TOOL_NAMES)


__all__ = ["TOOL_NAMES", "UnknownToolError", "default_tools", "load_tools"]
