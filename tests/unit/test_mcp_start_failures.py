"""Why an MCP server did not start, told the same way whichever side of the pipe noticed.

A stdio server that exits before the handshake is seen either by the reader (the SDK's
"Connection closed") or, when it is already gone as the first request is written, by the
writer (a broken stream inside the transport's task group). Which one wins is a race that
a loaded machine decides, so both must read as the same sentence; the integration test in
tests/integration/test_mcp.py starts real servers, this one pins each shape of the failure.
"""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED, ErrorData

from tools.mcp.session import why_not_started

HUNG_UP = "the server exited or hung up before the MCP handshake finished"


def closed() -> McpError:
    return McpError(ErrorData(code=CONNECTION_CLOSED, message="Connection closed"))


@pytest.mark.parametrize(
    "failure",
    [
        closed(),
        ExceptionGroup("transport", [closed()]),
        ExceptionGroup("transport", [anyio.BrokenResourceError()]),
        ExceptionGroup("outer", [ExceptionGroup("inner", [anyio.ClosedResourceError()])]),
        anyio.EndOfStream(),
        BrokenPipeError(32, "Broken pipe"),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
    ids=["read", "read-in-group", "write", "write-nested", "eof", "pipe", "reset"],
)
def test_a_server_gone_before_the_handshake_reads_the_same_whoever_noticed(
    failure: BaseException,
) -> None:
    assert why_not_started(failure) == HUNG_UP


def test_a_server_error_that_shares_the_code_keeps_its_own_words() -> None:
    # -32000 is JSON-RPC's generic server error too: a server refusing the handshake says why
    refused = McpError(ErrorData(code=CONNECTION_CLOSED, message="Unknown protocol version"))
    assert why_not_started(ExceptionGroup("transport", [refused])) == "Unknown protocol version"


def test_a_missing_program_is_named_not_called_a_hang_up() -> None:
    missing = FileNotFoundError(2, "No such file or directory", "/nonexistent/mcp-server")
    assert why_not_started(missing) == "no program '/nonexistent/mcp-server' was found"
