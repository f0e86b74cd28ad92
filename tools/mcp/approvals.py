"""Which tools an operator's approval entry names, so a renamed MCP tool keeps its approval.

When two servers expose `delete_file`, the registry renames both (`files_delete_file`,
`backup_delete_file`: see `naming`), and an approval entry `delete_file` compared with registry
names alone would match nothing, so the call would run with no prompt. Every MCP tool carries
`metadata={"mcp_server": server, "mcp_tool": its own name}` (set in `client`), and an entry
matches a tool when it is any of the tool's `approval_keys`:

- its registry name (`files_delete_file`, or `delete_file` when nothing clashed);
- for an MCP tool, its own name (`delete_file`: every server's tool of that name, since the
  operator who wrote it meant all of them), and `server:own name` or `server/own name`
  (`files:delete_file`: that server's alone).

`*` matches every tool. An entry that matches no tool is a mistake that would silently approve
nothing (a typo, a server renamed or gone), so `check_approvals` refuses it with one sentence;
the agent calls it when it starts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from langchain_core.tools import BaseTool

SERVER_KEY = "mcp_server"
TOOL_KEY = "mcp_tool"
EVERY_TOOL = "*"


class ApprovalConfigError(ValueError):
    """An approval entry names no tool."""


def approval_keys(tool: BaseTool) -> frozenset[str]:
    """Every approval entry that names `tool` (see the module docstring)."""
    keys = {tool.name}
    metadata = tool.metadata or {}
    server, own = metadata.get(SERVER_KEY), metadata.get(TOOL_KEY)
    if isinstance(server, str) and isinstance(own, str):
        keys.update({own, f"{server}:{own}", f"{server}/{own}"})
    return frozenset(keys)


def approves(tool: BaseTool, approve: Collection[str]) -> bool:
    """Whether the approval entries name `tool` (by any of its keys, or `*`)."""
    return EVERY_TOOL in approve or not approval_keys(tool).isdisjoint(approve)


def unmatched(approve: Iterable[str], tools: Iterable[BaseTool]) -> list[str]:
    """The entries, in order, that name none of `tools` (`*` always names them all)."""
    known: set[str] = set()
    for tool in tools:
        known.update(approval_keys(tool))
    return [entry for entry in approve if entry != EVERY_TOOL and entry not in known]


def check_approvals(approve: Iterable[str], tools: Iterable[BaseTool]) -> None:
    """Raise `ApprovalConfigError` (one sentence) when an entry names no tool."""
    tools = list(tools)
    missing = unmatched(list(approve), tools)
    if not missing:
        return
    names = ", ".join(repr(m) for m in missing)
    shown = sorted({t.name for t in tools})  # a run's tools are also the registry's: once each
    listed = ", ".join(shown[:20]) + (f" and {len(shown) - 20} more" if len(shown) > 20 else "")
    listed = listed or "none"
    which = "names no tool" if len(missing) == 1 else "name no tool"
    raise ApprovalConfigError(
        f"The approval setting {names} {which}, so nothing would be asked; use a tool's name "
        f"or, for an MCP tool, 'server:tool' (the tools are: {listed})."
    )
