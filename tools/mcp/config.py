"""The MCP servers file: `{"mcpServers": {name: {...}}}`, as Claude Desktop, Cursor and other
MCP clients write it, read into frozen objects so a bad file fails once, before any server
starts, with one sentence naming the file and the field.

A server is either stdio (`command`, optional `args`, `env`, `cwd`) or remote (`url`, optional
`headers`; `transport` `streamable_http` / `http` (the default for a URL) or `sse`). `type` is
read as `transport` (VS Code and Claude Code write it so), `"disabled": true` leaves a server
out, and other keys (`autoApprove`, `timeout`, ...) are ignored, so a file shared with another
client still loads. `${VAR}` in an `env` or header value is filled from the environment when
the server starts, so secrets can stay out of the file.

Paths: a relative `cwd` and a relative `command` path (`./server.py`, `bin/server`: any command
with a `/` in it) are both taken from the file's folder, whatever folder the agent runs in and
whatever `cwd` says, so a file reads the same from anywhere. A bare command name (`npx`, `uvx`,
`python`) is looked up on `PATH` as usual. `~` is expanded in both.

Trust: a file that starts commands runs them as the agent's user, so one that any user may write
(or that sits in a folder any user may write, without the sticky bit of /tmp) is refused: anyone
on the machine could make the agent run their program. Files with only remote servers are read.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

STDIO = "stdio"
HTTP = "streamable_http"
SSE = "sse"
_TRANSPORTS = {
    "stdio": STDIO,
    "streamable_http": HTTP,
    "streamable-http": HTTP,
    "http": HTTP,
    "sse": SSE,
}
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class MCPConfigError(ValueError):
    """The MCP servers file is missing, is not JSON, or has a field of the wrong shape."""


@dataclass(frozen=True)
class MCPServerConfig:
    """One server: how to start it (stdio) or where to reach it (HTTP)."""

    name: str
    transport: str  # STDIO, HTTP or SSE
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = field(default=None, compare=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = field(default=None, compare=False, repr=False)

    def connection(self) -> dict[str, Any]:
        """The connection dict `langchain_mcp_adapters` takes (`MultiServerMCPClient`)."""
        if self.transport == STDIO:
            out: dict[str, Any] = {
                "transport": STDIO,
                "command": self.command,
                "args": list(self.args),
            }
            if self.env is not None:
                out["env"] = dict(self.env)  # the adapters fill in ${VAR} in env values
            if self.cwd is not None:
                out["cwd"] = self.cwd
            return out
        out = {"transport": self.transport, "url": self.url}
        if self.headers:
            out["headers"] = {k: _expand(v) for k, v in self.headers.items()}
        return out


@dataclass(frozen=True)
class MCPConfig:
    """Every enabled server of one file, in the file's order."""

    path: Path
    servers: tuple[MCPServerConfig, ...]

    def server(self, name: str) -> MCPServerConfig:
        return next(s for s in self.servers if s.name == name)


def load_config(path: str | os.PathLike[str]) -> MCPConfig:
    """Read and check the MCP servers file; raises `MCPConfigError` with one sentence."""
    file = Path(path).expanduser().resolve()
    where = f"MCP config {file}"
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MCPConfigError(f"{where}: the file does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MCPConfigError(f"{where}: cannot be read ({exc}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MCPConfigError(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."
        ) from None
    config = parse_config(data, file)
    if any(s.transport == STDIO for s in config.servers):
        _check_trusted(file, where)
    return config


def _check_trusted(file: Path, where: str) -> None:
    """Refuse a file that starts commands when any user may change it (module docstring)."""
    try:
        mode, folder = file.stat().st_mode, file.parent.stat().st_mode
    except OSError as exc:
        raise MCPConfigError(f"{where}: cannot be checked ({exc}).") from None
    if mode & stat.S_IWOTH:
        raise MCPConfigError(
            f"{where}: any user may write this file, and it starts commands; make it writable "
            f"by its owner only (chmod o-w)."
        )
    if folder & stat.S_IWOTH and not folder & stat.S_ISVTX:
        raise MCPConfigError(
            f"{where}: any user may replace this file (its folder is world-writable), and it "
            f"starts commands; keep it in a folder only its owner may write."
        )


def parse_config(data: Any, path: Path) -> MCPConfig:
    """Check already-decoded JSON; `path` names the file in errors and anchors a relative
    `cwd` and `command`."""
    where = f"MCP config {path}"
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise MCPConfigError(
            f'{where}: expected an object with "mcpServers": {{name: server, ...}}.'
        )
    servers = []
    for name, entry in data["mcpServers"].items():
        if not name.strip():
            raise MCPConfigError(f"{where}: a server in mcpServers has an empty name.")
        if not isinstance(entry, dict):
            raise MCPConfigError(f"{where}: mcpServers.{name} must be an object.")
        if entry.get("disabled") is True:
            continue
        servers.append(_server(name, entry, path, f"{where}: mcpServers.{name}"))
    return MCPConfig(path=path, servers=tuple(servers))


def _server(name: str, entry: dict[str, Any], path: Path, at: str) -> MCPServerConfig:
    raw = entry.get("transport", entry.get("type"))
    if raw is not None and (not isinstance(raw, str) or raw.lower() not in _TRANSPORTS):
        raise MCPConfigError(
            f"{at}.transport must be one of {', '.join(_TRANSPORTS)}, got {raw!r}."
        )
    transport = _TRANSPORTS[raw.lower()] if raw is not None else None
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise MCPConfigError(f'{at} needs exactly one of "command" (stdio) or "url" (HTTP).')
    if has_command:
        if transport not in (None, STDIO):
            raise MCPConfigError(f'{at}.transport is {raw!r}, but a "command" server is stdio.')
        command = entry["command"]
        if not isinstance(command, str) or not command.strip():
            raise MCPConfigError(f"{at}.command must be a non-empty string.")
        if "/" in command or command.startswith("~"):  # a path, not a name to look up on PATH
            # normpath, not resolve: a multi-call program reads which link started it
            command = os.path.normpath(path.parent / Path(command).expanduser())
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise MCPConfigError(f"{at}.args must be a list of strings.")
        env = _string_map(entry.get("env"), f"{at}.env")
        cwd = entry.get("cwd")
        if cwd is not None:
            if not isinstance(cwd, str) or not cwd.strip():
                raise MCPConfigError(f"{at}.cwd must be a non-empty string.")
            cwd = str((path.parent / Path(cwd).expanduser()).resolve())
        return MCPServerConfig(name, STDIO, command=command, args=tuple(args), env=env, cwd=cwd)
    if transport == STDIO:
        raise MCPConfigError(f'{at}.transport is "stdio", which needs a "command", not a "url".')
    url = entry["url"]
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise MCPConfigError(f"{at}.url must be an http:// or https:// URL, got {url!r}.")
    headers = _string_map(entry.get("headers"), f"{at}.headers")
    return MCPServerConfig(name, transport or HTTP, url=url, headers=headers)


def _string_map(value: Any, at: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise MCPConfigError(f"{at} must be an object of string values.")
    return dict(value)


def _expand(value: str) -> str:
    """`${VAR}` from the environment; an unset variable stays as written."""
    return _VARIABLE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
