"""The process-wide MCP manager: one set of running servers per config file, their tools as
LangChain tools, and cleanup at exit.

Servers start when something first asks for a file's tools (`mcp_tools`, `amcp_tools`,
`describe`), never at import: their names and schemas come from the servers themselves. They
start together, once per process per file (the result is cached under the file's resolved
path), and stay up: each tool call goes over the server's open session. `close(path)`,
`close_all()` and the `atexit` hook registered with the first server stop them through their
transports, so no child process outlives the agent.

The returned tools (`MCPTool`) carry the server's JSON schema as `args_schema`; their sync and
async forms both hand the call to the session loop, so they work from sync code, from worker
threads and from inside a running event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from langchain_core.tools import BaseTool, ToolException
from langchain_mcp_adapters.client import MultiServerMCPClient

from tools.mcp.config import STDIO, MCPConfig, MCPServerConfig, load_config
from tools.mcp.convert import DEFAULT_MAX_CHARS
from tools.mcp.naming import assign_names
from tools.mcp.session import MCPServer, MCPServerError, SessionLoop

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0  # seconds per tool call
DEFAULT_START_TIMEOUT = 60.0  # seconds for a server to start and list its tools (npx, uvx...)
_GRACE = 5.0  # a sync caller's extra wait past the call's own limits

_LOCK = threading.Lock()
_LOOP: SessionLoop | None = None
_CLIENTS: dict[Path, MCPClient] = {}
_ATEXIT = False


class MCPClient:
    """The servers of one config file and the tools they offer."""

    def __init__(self, config: MCPConfig, loop: SessionLoop) -> None:
        self.config = config
        self.loop = loop
        adapters = MultiServerMCPClient({s.name: s.connection() for s in config.servers})
        self.servers = {
            s.name: MCPServer(
                s.name, adapters, remote=s.transport != STDIO, advice=_advice(s, config.path)
            )
            for s in config.servers
        }

    async def start(self, start_timeout: float) -> None:
        """Start every server not yet running; one `MCPServerError` names those that failed."""
        results = await asyncio.gather(
            *(server.session(start_timeout) for server in self.servers.values()),
            return_exceptions=True,
        )
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if not isinstance(failure, Exception):
                raise failure
        if failures:
            raise MCPServerError(" ".join(str(f) for f in failures))

    def entries(self, reserved: tuple[str, ...]) -> list[tuple[str, MCPServer, BaseTool]]:
        """(registry name, server, the adapters' tool) for every tool, in config order."""
        pairs = [(s, t) for s in self.servers.values() for t in s.tools]
        names = assign_names([(s.name, t.name) for s, t in pairs], reserved)
        return [(name, s, t) for name, (s, t) in zip(names, pairs, strict=True)]

    def tools(
        self, timeout: float | None, start_timeout: float, max_chars: int, reserved: tuple[str, ...]
    ) -> list[BaseTool]:
        limits = {"timeout": timeout, "start_timeout": start_timeout, "max_chars": max_chars}
        return [self._wrap(name, s, t, limits) for name, s, t in self.entries(reserved)]

    def _wrap(
        self, name: str, server: MCPServer, tool: BaseTool, limits: dict[str, Any]
    ) -> BaseTool:
        """A tool that runs the call on the server's open session, wherever it is called from."""
        loop, remote, where = self.loop, tool.name, self.config.path
        own = limits["timeout"]  # None: the caller's own wait bounds the call (the agent's)
        wait = None if own is None else own + limits["start_timeout"] + _GRACE

        def check() -> None:
            if server.closed:
                raise ToolException(
                    f"MCP server '{server.name}' was closed; load the tools of {where} again."
                )

        def run(**arguments: Any) -> str:
            check()
            try:
                return loop.run(server.call(remote, arguments, **limits), wait)
            except TimeoutError:
                raise ToolException(
                    f"MCP tool '{remote}' (server '{server.name}') gave no result in {wait:g} s."
                ) from None

        async def arun(**arguments: Any) -> str:
            check()
            return await loop.arun(server.call(remote, arguments, **limits))

        return MCPTool(
            name=name,
            description=tool.description or f"The '{remote}' tool of MCP server '{server.name}'.",
            args_schema=tool.args_schema,
            call=run,
            acall=arun,
            metadata={**(tool.metadata or {}), "mcp_server": server.name, "mcp_tool": remote},
        )

    async def aclose(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers.values()))


class MCPTool(BaseTool):
    """An MCP server's tool: its arguments, whatever their names, go to the server. (LangChain
    hands a `StructuredTool`'s function its own `config` and `run_manager` under those names,
    so a tool argument called `config` would never reach the server.)"""

    call: Callable[..., str]
    acall: Callable[..., Awaitable[str]]

    def _run(self, **arguments: Any) -> str:
        return self.call(**arguments)

    async def _arun(self, **arguments: Any) -> str:
        return await self.acall(**arguments)


def _advice(server: MCPServerConfig, path: Path) -> str:
    """What a person checks when `server` does not start: its command or its address, and the
    file that names it (a URL without its credentials or query: the sentence is printed)."""
    if server.transport == STDIO:
        return f"check its command in {path} and that the program is installed and runs"
    parts = urlsplit(server.url or "")
    port = f":{parts.port}" if parts.port else ""
    where = f"{parts.scheme}://{parts.hostname}{port}{parts.path}"
    return f"check that a server is up at {where} and that its url in {path} is right"


def _client(path: str | os.PathLike[str]) -> MCPClient:
    """The cached client of this file, created (config checked, nothing started) on first use."""
    global _LOOP, _ATEXIT
    key = Path(path).expanduser().resolve()
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            config = load_config(key)
            if _LOOP is None:
                _LOOP = SessionLoop()
            if not _ATEXIT:
                atexit.register(close_all)
                _ATEXIT = True
            client = _CLIENTS[key] = MCPClient(config, _LOOP)
        return client


def mcp_tools(
    path: str | os.PathLike[str],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    max_chars: int = DEFAULT_MAX_CHARS,
    reserved: tuple[str, ...] = (),
) -> list[BaseTool]:
    """The tools of every server in the MCP config file at `path`, starting the servers on the
    first call (later calls reuse them). `timeout` bounds each tool call (None: the caller's
    own wait does), `max_chars` each
    result; names in `reserved` (e.g. the built-in tools') count as taken, so a clashing MCP
    tool is prefixed with its server's name. Raises `MCPConfigError` for a bad file and one
    `MCPServerError` naming the servers that did not start."""
    client = _client(path)
    client.loop.run(client.start(start_timeout))
    return client.tools(timeout, start_timeout, max_chars, tuple(reserved))


async def amcp_tools(
    path: str | os.PathLike[str],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    max_chars: int = DEFAULT_MAX_CHARS,
    reserved: tuple[str, ...] = (),
) -> list[BaseTool]:
    """`mcp_tools` for async code: reads the file and waits for the servers without blocking
    the caller's loop (`langgraph dev` refuses blocking calls on it)."""
    client = await asyncio.to_thread(_client, path)
    await client.loop.arun(client.start(start_timeout))
    return client.tools(timeout, start_timeout, max_chars, tuple(reserved))


def describe(
    path: str | os.PathLike[str],
    *,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    reserved: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Each tool as `name` (in the registry), `server`, `mcp_name` (on the server),
    `description` and `schema` (its JSON schema), for listings; starts the servers like
    `mcp_tools`."""
    client = _client(path)
    client.loop.run(client.start(start_timeout))
    return [
        {
            "name": name,
            "server": server.name,
            "mcp_name": tool.name,
            "description": tool.description or "",
            "schema": tool.args_schema,  # the server's JSON schema, as the adapters keep it
        }
        for name, server, tool in client.entries(tuple(reserved))
    ]


def close(path: str | os.PathLike[str], timeout: float = 15.0) -> None:
    """Stop the servers of this file (a later `mcp_tools(path)` starts them again)."""
    with _LOCK:
        client = _CLIENTS.pop(Path(path).expanduser().resolve(), None)
    if client is not None:
        _shut([client], client.loop, timeout)


def close_all(timeout: float = 15.0) -> None:
    """Stop every server and the session loop; safe to call twice (it also runs at exit)."""
    global _LOOP
    with _LOCK:
        clients, loop = list(_CLIENTS.values()), _LOOP
        _CLIENTS.clear()
        _LOOP = None
    if loop is not None:
        _shut(clients, loop, timeout)
        loop.stop()


def _shut(clients: list[MCPClient], loop: SessionLoop, timeout: float) -> None:
    async def stop_all() -> None:
        await asyncio.gather(*(client.aclose() for client in clients))

    try:
        loop.run(stop_all(), timeout)
    except Exception as exc:  # at exit there is no one left to tell but the log
        log.warning("MCP servers did not all stop cleanly: %s", exc)
