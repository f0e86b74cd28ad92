"""Which tools a run gets: built-in tools by name, and `package.module:attribute` entries that
name your own tool or list of tools (so the command line and the server can load them too)."""

from __future__ import annotations

import importlib

from langchain_core.tools import BaseTool


def registry_tools(names: list[str] | None) -> list[BaseTool]:
    """The tools named (all built-in tools when `names` is empty), each name once."""
    from tools import default_tools, load_tools

    if not names:
        return default_tools()
    loaded: list[BaseTool] = []
    for name in names:
        loaded += import_tools(name) if ":" in name else load_tools([name])
    return list({tool.name: tool for tool in loaded}.values())


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
