"""How every command body runs: `.env` read first, then one sentence and a distinct exit status
for each way it can end, never a traceback (unless REACT_AGENT_DEBUG asks for it).

Error text can carry an endpoint URL or a connection string, so it is redacted before it is
printed; it can carry model or user text, so hiding characters are escaped (`output.error`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from graph.cli.options import EXIT, Stop
from graph.cli.output import error


def run_command(body: Callable[[], Any]) -> None:
    from graph.redaction import redact
    from graph.settings import ConfigError, load_env_file

    try:
        load_env_file()  # here, not in main(): `--help` needs no settings (and no pydantic)
        body()
    except Stop as stop:
        if str(stop):
            error(redact(stop))
        raise typer.Exit(stop.code) from None
    except (typer.Exit, typer.Abort):
        raise
    except BrokenPipeError:  # `react-agent threads | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        raise typer.Exit(EXIT["broken_pipe"]) from None
    except Exception as exc:
        code, message = _classify(exc, ConfigError)
        if code == EXIT["error"] and os.environ.get("REACT_AGENT_DEBUG"):
            raise
        error(redact(message))
        raise typer.Exit(code) from None


def _mcp_server_failed(exc: Exception) -> bool:
    """An MCP server that did not start (its module is loaded only when a server was asked for,
    so an exception of that class cannot exist without it: nothing is imported here)."""
    session = sys.modules.get("tools.mcp.session")
    return session is not None and isinstance(exc, session.MCPServerError)


def _classify(exc: Exception, config_error: type[Exception]) -> tuple[int, str]:
    from graph.persistence.errors import PersistenceError
    from graph.persistence.locks import ThreadBusy

    if isinstance(exc, ThreadBusy):
        return EXIT["busy"], str(exc)
    if isinstance(exc, PersistenceError):  # a store or lock failure: its sentence says what next
        return EXIT["error"], str(exc)
    if _mcp_server_failed(exc):  # names the server and what to check
        return EXIT["error"], str(exc)
    if isinstance(exc, (config_error, ValueError)):
        return EXIT["usage"], str(exc)
    # a bug or an environment problem: one line, the traceback on demand
    return EXIT["error"], (
        f"{type(exc).__name__}: {exc} (set REACT_AGENT_DEBUG=1 for the traceback)"
    )
