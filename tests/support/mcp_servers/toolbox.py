"""A FastMCP server with one tool per case the MCP client must handle: plain results (echo,
add, a dotted name), a tool error, a slow call, an image, a 1 MB text and a server that kills
itself mid-call.

Run it as a script: `python toolbox.py` speaks stdio; `python toolbox.py --http PORT` serves
streamable HTTP on 127.0.0.1:PORT/mcp, `--sse PORT` the older SSE transport.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from mcp.server.fastmcp import FastMCP, Image

PNG_BYTES = 12_000  # the image tool's payload: shown as "[image/png, 12 kB, not shown]"
BIG_CHARS = 1_000_000  # the big tool's text


def build(port: int = 8000) -> FastMCP:
    """The server; a function so importing this module starts nothing."""
    server = FastMCP("toolbox", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"

    @server.tool()
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    @server.tool(name="math.mul")
    def mul(a: float, b: float) -> float:
        """Multiply two numbers (a tool name that is not a valid function name)."""
        return a * b

    @server.tool()
    def explode(reason: str = "disk on fire") -> str:
        """Always fails."""
        raise RuntimeError(reason)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then report."""
        await asyncio.sleep(seconds)
        return f"slept {seconds:g} s"

    @server.tool()
    def picture() -> Image:
        """A PNG image."""
        return Image(data=b"\x89PNG\r\n\x1a\n" + b"\0" * (PNG_BYTES - 8), format="png")

    @server.tool()
    def big() -> str:
        """One megabyte of text."""
        return "x" * BIG_CHARS

    @server.tool()
    async def die() -> str:
        """Kill this server's own process while the call is running."""
        await asyncio.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.sleep(10)
        return "unreachable"

    @server.tool()
    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    return server


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] in ("--http", "--sse"):
        transport = "streamable-http" if argv[0] == "--http" else "sse"
        build(int(argv[1])).run(transport)
    else:
        build().run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
