"""One persistent session per MCP server, held open on an event loop this module owns.

An MCP session (and a stdio server's child process) is bound to the event loop and the task
that opened it, while the agent calls tools from sync code, from worker threads and from other
event loops (`langgraph dev`). So every session lives on one daemon thread running its own
loop (`SessionLoop`), inside one task per server that opens the session with the adapters'
`MultiServerMCPClient.session(name)` and keeps it open until told to stop; callers only
submit coroutines to that loop. Stopping goes through the same task, so the transport's own
shutdown runs (stdin closed, then SIGTERM, then SIGKILL for a stdio server's process group).

A server whose connection breaks mid-call (its process died, the HTTP endpoint went away) is
closed at once, so its process is reaped, and started again on its next call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import anyio
from langchain_core.tools import BaseTool, ToolException
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED

from tools.mcp.convert import result_text

T = TypeVar("T")
STOP_TIMEOUT = 8.0  # seconds for a server's transport to shut down before it is cancelled
SESSION_TERMINATED = "Session terminated"  # the MCP SDK's error for an HTTP session gone (404)
PING_EVERY = 2.0  # seconds between pings to a remote server while a call is pending


class MCPServerError(RuntimeError):
    """An MCP server that did not start; the message names it and says why."""


class SessionLoop:
    """An event loop on a daemon thread: the home of every MCP session of this process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="mcp-sessions", daemon=True
        )
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("MCP tools cannot be called from the MCP session loop itself.")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait for it from this (sync) thread."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None
        except BaseException:  # e.g. Ctrl-C while waiting: the call stops too
            future.cancel()
            raise

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and await it from another loop; cancelling cancels it."""
        return await asyncio.wrap_future(self.submit(coro))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class MCPServer:
    """One server's session: started on demand, kept open, restarted after its connection
    breaks. Every coroutine here runs on the session loop."""

    def __init__(
        self, name: str, client: MultiServerMCPClient, *, remote: bool, advice: str = ""
    ) -> None:
        self.name = name
        self.client = client
        self.remote = remote  # HTTP: a dead server is noticed by pinging it during calls
        self.advice = advice  # what a person checks when it does not start ("check its ...")
        self.failure: BaseException | None = None  # why the transport last broke
        self.tools: list[BaseTool] = []  # from the adapters' load_mcp_tools: names and schemas
        self.closed = False
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None

    async def session(self, start_timeout: float) -> ClientSession:
        """The open session, starting the server first if it is not running."""
        if self.closed:
            raise MCPServerError(f"MCP server '{self.name}' was closed.")
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._session is None or self._task is None or self._task.done():
                await self.stop()
                await self._start(start_timeout)
            assert self._session is not None
            return self._session

    async def _start(self, timeout: float) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop, self.failure = asyncio.Event(), None
        self._task = asyncio.create_task(self._hold(ready, self._stop), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self.stop(wait=0)  # stuck in the handshake: nothing to wait for
            why = f"no answer within {timeout:g} s"
        except Exception as exc:
            await self.stop()
            why = why_not_started(exc)
        else:
            return
        advice = f"; {self.advice}" if self.advice else ""
        raise MCPServerError(f"MCP server '{self.name}' did not start: {why}{advice}.")

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """Open the session, list its tools, then keep it open until `stop` is set."""
        opened: ClientSession | None = None
        try:
            async with self.client.session(self.name) as opened:
                self.tools = await load_mcp_tools(
                    opened, server_name=self.name, handle_tool_errors=False
                )
                self._session = opened
                ready.set_result(None)
                await stop.wait()
        except Exception as exc:  # after `ready`: the transport broke (server gone)
            self.failure = exc
            if not ready.done():
                ready.set_exception(exc)
        except BaseException:
            ready.cancel()
            raise
        finally:
            if self._session is opened:
                self._session = None

    async def stop(self, wait: float = STOP_TIMEOUT) -> None:
        """Close the session through its own task, so the transport shuts down in order;
        cancel the task if that takes longer than `wait` seconds."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        except BaseException:  # the task's own failure: it is finished either way
            pass

    async def close(self) -> None:
        self.closed = True
        await self.stop()

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        start_timeout: float,
        max_chars: int,
    ) -> str:
        """Call `tool`; every failure is a `ToolException` whose message the model can read.
        A call the server certainly never received (the session was gone: a stdio server that
        died since the last call, an HTTP server that restarted and forgot the session) starts
        the server again and is made once more."""
        try:
            return await self._call(tool, arguments, timeout, start_timeout, max_chars)
        except _NotSent:
            await self.stop()
        try:
            return await self._call(tool, arguments, timeout, start_timeout, max_chars)
        except _NotSent:
            await self.stop()
            raise ToolException(
                f"MCP server '{self.name}' could not be reached for the call to '{tool}', "
                "which was not made; it will be started again on the next call."
            ) from None

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float | None,
        start_timeout: float,
        max_chars: int,
    ) -> str:
        try:
            session = await self.session(start_timeout)
        except MCPServerError as exc:
            text = str(exc).rstrip(".")
            raise ToolException(f"{text}. The call to '{tool}' was not made.") from None
        held = self._task
        assert held is not None
        call = asyncio.create_task(session.call_tool(tool, arguments))
        watch = [asyncio.create_task(_ping(session))] if self.remote else []
        try:
            done, _ = await asyncio.wait(
                {call, held, *watch}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in (call, *watch):
                task.cancel()
        if call not in done:
            if held in done:  # the transport broke while the call was pending
                await self._broken(tool, self.failure or ConnectionError("connection lost"))
            raise ToolException(
                f"MCP tool '{tool}' (server '{self.name}') timed out after {timeout:g} s."
            )
        try:
            result = call.result()
        except McpError as exc:
            if exc.error.message == SESSION_TERMINATED:  # the server answered 404: not run
                raise _NotSent from None
            if exc.error.code != CONNECTION_CLOSED:
                raise ToolException(
                    f"MCP tool '{tool}' (server '{self.name}') failed: {exc.error.message}"
                ) from None
            await self._broken(tool, exc)
        except Exception as exc:
            if isinstance(_innermost(exc), (anyio.ClosedResourceError, anyio.BrokenResourceError)):
                raise _NotSent from None  # the request could not be written
            await self._broken(tool, exc)
        return result_text(result, tool=tool, server=self.name, max_chars=max_chars)

    async def _broken(self, tool: str, exc: BaseException) -> NoReturn:
        if self.closed:
            raise ToolException(f"MCP server '{self.name}' was closed during the call to '{tool}'.")
        await self.stop()  # reaps a dead process; the next call starts a new one
        raise ToolException(
            f"MCP server '{self.name}' stopped during the call to '{tool}' ({reason(exc)}); "
            "it will be started again on the next call."
        ) from None


class _NotSent(Exception):
    """The call never reached the server: its session was gone before it was written."""


async def _ping(session: ClientSession) -> None:
    """Ping a remote server while a call is pending: over HTTP a server that died mid-call
    is otherwise only noticed at the timeout, while a ping to it breaks the transport."""
    while True:
        await asyncio.sleep(PING_EVERY)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.send_ping(), PING_EVERY * 5)


def reason(exc: BaseException) -> str:
    """The innermost cause of a failure, in a few words a person reads (no class names: task
    groups wrap the cause in groups, and "FileNotFoundError" says less than what was missing)."""
    exc = _innermost(exc)
    if isinstance(exc, McpError):
        text = exc.error.message
    elif isinstance(exc, FileNotFoundError) and exc.filename:
        text = f"no program {str(exc.filename)!r} was found"
    elif isinstance(exc, PermissionError) and exc.filename:
        text = f"{str(exc.filename)!r} may not be run (permission denied)"
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    else:
        text = str(exc)
    text = " ".join(text.split()).rstrip(".")
    return text or f"it failed without saying why ({type(exc).__name__})"


def why_not_started(exc: BaseException) -> str:
    """Why a server's session failed to open. A server that exits before the handshake
    fails on whichever side of the pipe notices first: reading its answer ("Connection
    closed") or, when it is gone before the first request is written, writing that request
    (a broken stream). Both are the same fact for the person who configured it."""
    innermost = _innermost(exc)
    if isinstance(innermost, _HUNG_UP) or (
        isinstance(innermost, McpError) and innermost.error.message == "Connection closed"
    ):
        return "the server exited or hung up before the MCP handshake finished"
    return reason(exc)


_HUNG_UP = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    BrokenPipeError,
    ConnectionResetError,
)


def _innermost(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
