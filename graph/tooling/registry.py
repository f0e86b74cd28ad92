"""Which tools a run gets: built-in tools by name, and `package.module:attribute` entries that
name your own tool or list of tools (so the command line and the server can load them too)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from langchain_core.tools import BaseTool

from tools import default_tools, load_tools, mcp_tools

MCP_MAX_CHARS = 100_000  # the largest `observation_limit`: the run's own limit cuts a result


def registry_tools(names: list[str] | None, mcp_config: str | None = None) -> list[BaseTool]:
    """The tools named (all built-in tools, and every MCP tool, when `names` is empty), each
    name once. MCP servers start on first use, once per process (`tools.mcp`)."""
    # the run's own `tool_timeout` and `observation_limit` bound each call and cut each result
    served = mcp_tools(mcp_config, timeout=None, max_chars=MCP_MAX_CHARS) if mcp_config else []
    if not names:
        return one_per_name([*default_tools(), *served])
    by_name = {tool.name: tool for tool in served}
    loaded: list[BaseTool] = []
    for name in names:
        if ":" in name:
            loaded += import_tools(name)
        elif name in by_name:
            loaded.append(by_name[name])
        else:
            loaded += load_tools([name])
    return one_per_name(loaded)


def one_per_name(tools: Sequence[BaseTool]) -> list[BaseTool]:
    """One tool per name, the last given, in the order names first came: what `create_agent`
    offers and runs (its `ToolNode` keeps one tool per name); a provider refuses two."""
    return list({tool.name: tool for tool in tools}.values())


def import_tools(spec: str) -> list[BaseTool]:
    """The tool, or list of tools, at `package.module:attribute`."""
    module_name, _, attribute = spec.partition(":")
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"Cannot load tools from {spec!r}: {exc}.") from None
    found = (
        [value]
        if isinstance(value, BaseTool)
        else list(value)
        if isinstance(value, (list, tuple))
        else []
    )
    if not found or not all(isinstance(tool, BaseTool) for tool in found):
        raise ValueError(f"{spec!r} is not a LangChain tool or a list of them.")
    return found
