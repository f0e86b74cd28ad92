"""The tool registry: every built-in tool by name, so configuration can pick them with a string.

Tool modules are imported when a tool is first loaded, not when `tools` is imported, so the
import stays cheap (no LangChain, no HTTP client, no index). `tools_from_env` reads
`REACT_AGENT_TOOLS` at call time.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool


def _lazy(module: str, attribute: str) -> Callable[[], BaseTool]:
    def load() -> BaseTool:
        return getattr(importlib.import_module(module), attribute)

    return load


_REGISTRY: dict[str, Callable[[], BaseTool]] = {
    "calculator": _lazy("tools.calculator", "calculator"),
    "weather": _lazy("tools.weather", "weather"),
    "wikipedia": _lazy("tools.wikipedia", "wikipedia"),
    "knowledge_search": _lazy("tools.knowledge", "knowledge_search"),
    "web_fetch": _lazy("tools.web_fetch", "web_fetch"),
    "current_time": _lazy("tools.clock", "current_time"),
}

TOOL_NAMES: tuple[str, ...] = tuple(_REGISTRY)
TOOLS_VARIABLE = "REACT_AGENT_TOOLS"


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


def tools_from_env(env: Mapping[str, str] | None = None) -> list[BaseTool]:
    """The tools named in `REACT_AGENT_TOOLS` (comma-separated); unset or empty means all."""
    source = os.environ if env is None else env
    raw = source.get(TOOLS_VARIABLE, "")
    names = [name.strip() for name in raw.split(",") if name.strip()]
    if not names:
        return default_tools()
    try:
        return load_tools(names)
    except UnknownToolError as exc:
        raise UnknownToolError(f"{TOOLS_VARIABLE}: {exc}") from None


def mcp_tools(
    config_path: str | os.PathLike[str],
    *,
    timeout: float | None = 30.0,
    max_chars: int = 20_000,
) -> list[BaseTool]:
    """The tools of the MCP servers listed in `config_path` (see `tools.mcp`), each named so it
    never takes a built-in tool's name; the servers start on the first call, once per process.
    `timeout` bounds each call (None: the caller's own wait does), `max_chars` each result."""
    from tools.mcp import mcp_tools as load

    return load(config_path, timeout=timeout, max_chars=max_chars, reserved=TOOL_NAMES)


__all__ = [
    "TOOL_NAMES",
    "UnknownToolError",
    "default_tools",
    "load_tools",
    "mcp_tools",
    "tools_from_env",
]
