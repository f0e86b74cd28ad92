"""One open store and agent for a command: running turns, answering pauses, reporting the end.

Imported only by command bodies that run or read the agent, so LangGraph, LangChain and the
savers load here and never on the start-up path of `--help`, `config` or `tools`.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command

from graph.cli.approvals import ask_decisions
from graph.cli.locations import store_url
from graph.cli.options import EXIT, RunOptions, Stop
from graph.cli.output import error, json_text, say
from graph.cli.render import StepPrinter
from graph.persistence.errors import program, resume_command
from graph.persistence.locks import thread_lock
from graph.persistence.savers import open_async_saver
from graph.persistence.stores import open_async_store
from graph.settings import AgentContext


@dataclass
class Unsaved:
    """Whether the command's new question is still unsaved, for what Ctrl-C says.

    Until the graph takes a new question (after the model has started, which for the embedded
    one takes seconds) Ctrl-C loses it, and must say so rather than promise a resume. One per
    command invocation, made by the command and handed to `open_thread` (its `Session` sets and
    clears it) and to `run_turns` (`graph.cli.interrupts`, which reads it on Ctrl-C): no
    module-level state (DESIGN).
    """

    question: bool = False


def check(run: RunOptions, ctx: AgentContext) -> str:
    """Check what the user can fix before a thread is touched or a model starts: the settings
    (an error names the flag or variable that gave the bad value; max_steps within the cap the
    settings give), the tools and the approval entries (one that names no tool), the schema
    file, the store URL. `ctx` is the run's settings, resolved once (`RunOptions.context`).
    Returns the store URL."""
    from graph.cli.checks import blamed, check_step_cap, check_store, env_source
    from graph.tooling.registry import registry_tools
    from tools import mcp_tools
    from tools.mcp.approvals import check_approvals

    check_step_cap(run, ctx)
    if ctx.mcp_config:  # first: a tool list naming an MCP tool needs the servers' tools
        with blamed(env_source(run.mcp_config, "REACT_AGENT_MCP_CONFIG")):
            mcp_tools(ctx.mcp_config)
    with blamed(env_source(run.tools, "REACT_AGENT_TOOLS")):
        tools = registry_tools(ctx.tools, ctx.mcp_config)
    if ctx.approve:  # an entry may name any registry tool, not only this run's (as the graph)
        every = registry_tools(None, ctx.mcp_config) if ctx.tools else []
        with blamed(env_source(run.approve, "REACT_AGENT_APPROVE")):
            check_approvals(ctx.approve, [*every, *tools])
    run.response_format()
    return check_store(run)


class Session:
    """The agent on an open store; runs turns and answers approval pauses.

    The model (which may be the embedded llama.cpp server, seconds to start) starts only in
    `ready`, on the first turn: a missing thread or a finished run is reported before it.
    """

    def __init__(
        self,
        saver: Any,
        run: RunOptions,
        url: str,
        *,
        quiet: bool,
        store: Any = None,
        ctx: AgentContext | None = None,
        unsaved: Unsaved | None = None,
    ) -> None:
        from graph.agent import build_graph
        from graph.tooling.registry import registry_tools

        options = run.settings()
        if "tools" in options:  # names on the command line, tool objects for build_graph
            ctx = ctx or run.context()
            options["tools"] = registry_tools(ctx.tools, ctx.mcp_config)
        schema = run.response_format()
        self.agent = build_graph(checkpointer=saver, store=store, response_format=schema, **options)
        self.run = run
        self.saver = saver
        self.url = url
        self.printer = StepPrinter(quiet=quiet)
        self.ctx = ctx
        self.unsaved = unsaved if unsaved is not None else Unsaved()
        self.started = False

    async def ready(self) -> None:
        """Start the model once (off the event loop: the embedded one takes seconds); then
        the garbage collector is on again, what the start built kept out of its passes."""
        if not self.started:
            from graph.models.factory import resolve_model

            ctx = self.ctx or self.run.context()
            await asyncio.to_thread(resolve_model, ctx)
            self.started = True
            if not gc.isenabled():  # paused for the start by the command line (`app.main`)
                gc.freeze()
                gc.enable()

    async def drive(self, payload: Any, config: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Run until the turn ends; return the final values and whether it is paused."""
        thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        if payload is not None and not isinstance(payload, Command):
            self.unsaved.question = True  # a new question: saved once the graph takes it, below
        snapshot = await self.agent.aget_state(config)
        if payload is None and snapshot.interrupts:
            answer = ask_decisions(snapshot.interrupts)
            if answer is None:
                return snapshot.values, True
            payload = Command(resume=answer)
        await self.ready()
        self.unsaved.question = False  # the graph saves the input first (durability "sync")
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
    run: RunOptions,
    thread_id: str,
    quiet: bool,
    body: Any,
    ctx: AgentContext | None = None,
    *,
    unsaved: Unsaved,
) -> Any:
    """Open the checkpoints and the store beside them (the approval and call ledger lives
    there), take the thread's lock, and run `body(session)` (`ctx`: the run's settings,
    resolved once by the command; `unsaved`: the command's, kept up to date by the session)."""
    target = store_url(run.checkpointer)
    async with (
        open_async_saver(target) as saver,
        open_async_store(target) as store,
        thread_lock(target, thread_id),
    ):
        session = Session(saver, run, target, quiet=quiet, store=store, ctx=ctx, unsaved=unsaved)
        return await body(session)


async def with_store(url: str | None, body: Any) -> Any:
    """Open the store (no lock: reading only) and run `body(session)`."""
    target = store_url(url)
    async with open_async_saver(target) as saver:
        return await body(Session(saver, RunOptions(), target, quiet=True))


def closing_line(thread_id: str, url: str, command: str | None = None) -> str:
    """How to go on with the thread (with `command`: the whole command line); a memory store
    ends with the command, so then it says that instead."""
    if url == "memory":
        return f"thread {thread_id} · kept in memory only: it ends with this command"
    if command:
        return f"thread {thread_id} · continue with: {program()} {command} --thread {thread_id}"
    return f"thread {thread_id} · continue with --thread {thread_id}"


def pause_notice(thread_id: str, url: str, options: str = "") -> str:
    """What a run paused for approval says: how to answer it, or that it cannot be."""
    if url == "memory":
        return "Paused for approval; the memory store ends with this command, so it cannot resume."
    return f"Paused for approval. Continue with: {resume_command(thread_id, options)}"


def spent(values: dict[str, Any]) -> dict[str, int] | None:
    """The tokens a paused run has spent so far. The run's total (`usage`) is written when it
    ends, so a paused run's is the last run's, or none: added up here from its steps."""
    from graph.steps import steps_of
    from graph.usage import added

    usages = [step["usage"] for step in steps_of(values) if step.get("usage")]
    return added(*usages) if usages else None


def report(
    values: dict[str, Any],
    thread_id: str,
    paused: bool,
    as_json: bool,
    url: str,
    *,
    typed: bool = False,
    options: str = "",
) -> None:
    """The end of a run: the JSON summary or a closing line, and the exit status. `typed`: the
    run asked for a typed result (`--schema`), whose key the summary then always has."""
    from graph.redaction import redact
    from graph.state import run_status
    from graph.steps import steps_of

    status = "paused" if paused else run_status(values) or "error"
    if as_json:
        summary = {
            "thread_id": thread_id,
            "status": status,
            "answer": values.get("answer"),
            "error": redact(values["error"]) if values.get("error") else values.get("error"),
            "steps": steps_of(values),
            "usage": spent(values) if paused else values.get("usage"),
        }
        if typed or values.get("structured_response") is not None:
            summary["structured_response"] = values.get("structured_response")
        sys.stdout.write(json_text(summary, indent=2) + "\n")
    elif paused:
        say(pause_notice(thread_id, url, options))
    else:
        for step in steps_of(values):
            if step.get("rerun"):
                say(
                    f"Note: the call to {step.get('tool')} ran again (an earlier attempt was "
                    "interrupted by a crash); any effect of it may have happened twice."
                )
        if status == "error":
            error(redact(values.get("error")))
        usage = values.get("usage") or {}
        if usage.get("total_tokens"):
            say(
                f"tokens: {usage.get('input_tokens', 0):,} in, {usage.get('output_tokens', 0):,} "
                f"out, {usage['total_tokens']:,} in all"
            )
        say(closing_line(thread_id, url))
    raise Stop("", EXIT.get(status, 1))
