"""One open store and agent for a command: running turns, answering pauses, reporting the end.

Imported only by command bodies that run or read the agent, so LangGraph, LangChain and the
savers load here and never on the start-up path of `--help`, `config` or `tools`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from langgraph.types import Command

from graph.cli.approvals import ask_decisions
from graph.cli.locations import store_url
from graph.cli.options import EXIT, Stop
from graph.cli.output import error, say
from graph.cli.render import StepPrinter
from graph.persistence.locks import thread_lock
from graph.persistence.savers import open_async_saver
from graph.settings import resolve_context

T = TypeVar("T")


def preflight(settings: dict[str, Any]) -> None:
    """Catch what the user can fix before a thread is touched: settings, tools, endpoint."""
    from graph.models.factory import resolve_model
    from graph.tooling.registry import registry_tools

    ctx = resolve_context(settings)
    registry_tools(ctx.tools, ctx.mcp_config)
    resolve_model(ctx)


class Session:
    """The agent on an open store; runs turns and answers approval pauses."""

    def __init__(self, saver: Any, settings: dict[str, Any], url: str, *, quiet: bool) -> None:
        from graph.agent import build_graph
        from graph.tooling.registry import registry_tools

        options = dict(settings)
        if "tools" in options:  # names on the command line, tool objects for build_graph
            ctx = resolve_context(settings)
            options["tools"] = registry_tools(ctx.tools, ctx.mcp_config)
        self.agent = build_graph(checkpointer=saver, **options)
        self.saver = saver
        self.url = url
        self.printer = StepPrinter(quiet=quiet)

    async def drive(self, payload: Any, config: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Run until the turn ends; return the final values and whether it is paused."""
        thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        snapshot = await self.agent.aget_state(config)
        if payload is None and snapshot.interrupts:
            answer = ask_decisions(snapshot.interrupts)
            if answer is None:
                return snapshot.values, True
            payload = Command(resume=answer)
        while True:
            stream = self.agent.astream(payload, config, stream_mode=["custom"], durability="sync")
            async for _mode, chunk in stream:
                self.printer.event(chunk)
            snapshot = await self.agent.aget_state(thread)
            if not snapshot.interrupts:
                return snapshot.values, False
            answer = ask_decisions(snapshot.interrupts)
            if answer is None:
                return snapshot.values, True
            payload, config = Command(resume=answer), thread


async def open_thread(
    url: str | None, settings: dict[str, Any], thread_id: str, quiet: bool, body: Any
) -> Any:
    """Open the store, take the thread's lock, and run `body(session)`."""
    target = store_url(url)
    async with open_async_saver(target) as saver, thread_lock(target, thread_id):
        return await body(Session(saver, settings, target, quiet=quiet))


async def with_store(url: str | None, body: Any) -> Any:
    """Open the store (no lock: reading only) and run `body(session)`."""
    target = store_url(url)
    async with open_async_saver(target) as saver:
        return await body(Session(saver, {}, target, quiet=True))


def report(values: dict[str, Any], thread_id: str, paused: bool, as_json: bool) -> None:
    """The end of a run: the JSON summary or a closing line, and the exit status."""
    from graph.redaction import redact
    from graph.steps import steps_of

    status = "paused" if paused else values.get("status") or "error"
    if as_json:
        summary = {
            "thread_id": thread_id,
            "status": status,
            "answer": values.get("answer"),
            "error": redact(values["error"]) if values.get("error") else values.get("error"),
            "steps": steps_of(values),
        }
        sys.stdout.write(json.dumps(summary, ensure_ascii=False, default=str, indent=2) + "\n")
    elif paused:
        say(f"Paused for approval. Continue with: react-agent resume --thread {thread_id}")
    else:
        if status == "error":
            error(redact(values.get("error")))
        say(f"thread {thread_id} · continue with --thread {thread_id}")
    raise Stop("", EXIT.get(status, 1))


def run_turns(coro: Coroutine[Any, Any, T], thread_id: str) -> T:
    """Run the agent; on Ctrl-C say how to resume and leave at once.

    Every finished step is already checkpointed (durability "sync"). A tool still running in a
    worker thread cannot be cancelled, and waiting for it would make Ctrl-C hang, so the process
    exits without waiting; that call runs again on resume (at least once, like a crash).
    """
    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(coro)
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        resume = f"react-agent resume --thread {thread_id}"
        say(f"Interrupted. The run is saved; continue it with: {resume}")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
    return result
