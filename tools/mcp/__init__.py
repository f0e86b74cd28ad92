"""Tools from MCP (Model Context Protocol) servers: one concern, turning the servers listed in
an MCP config file into LangChain tools for the agent's registry, with the servers' lifetime
(lazy start, one persistent session each, cleanup at exit) handled here.

    from tools.mcp import mcp_tools, describe, close_all
    tools = mcp_tools("mcp.json", timeout=30)  # starts the servers on the first call
    describe("mcp.json")                       # name, server, mcp_name, description, schema
    close_all()                                # also runs at exit

The file has MCP clients' usual shape, `{"mcpServers": {name: {...}}}` (see `config`). Tool
failures (an error result, a timeout, a server dying mid-call) raise `ToolException` with one
sentence, which the agent reports as an observation; a server that does not start raises one
`MCPServerError` naming it when the tools are asked for.

Importing this package is cheap and starts nothing: the MCP SDK and the adapters are imported
on first use of a name below (the config reader needs neither).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.mcp.client import amcp_tools, close, close_all, describe, mcp_tools
    from tools.mcp.config import MCPConfig, MCPConfigError, MCPServerConfig, load_config
    from tools.mcp.session import MCPServerError

_EXPORTS = {
    "mcp_tools": "tools.mcp.client",
    "amcp_tools": "tools.mcp.client",
    "describe": "tools.mcp.client",
    "close": "tools.mcp.client",
    "close_all": "tools.mcp.client",
    "load_config": "tools.mcp.config",
    "MCPConfig": "tools.mcp.config",
    "MCPServerConfig": "tools.mcp.config",
    "MCPConfigError": "tools.mcp.config",
    "MCPServerError": "tools.mcp.session",
}

__all__ = [
    "MCPConfig",
    "MCPConfigError",
    "MCPServerConfig",
    "MCPServerError",
    "amcp_tools",
    "close",
    "close_all",
    "describe",
    "load_config",
    "mcp_tools",
]


def __getattr__(name: str) -> Any:
    """Resolve the public names on first use, so `import tools.mcp` stays cheap and inert."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tools.mcp' has no attribute {name!r}")
