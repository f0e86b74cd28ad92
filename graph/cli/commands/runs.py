"""Commands that run the agent: `ask`, `chat`, `resume`, `replay`."""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any

import typer

from graph.cli import options as o
from graph.cli.guard import run_command
from graph.cli.output import say


def ask(
    question: Annotated[str, typer.Argument(help="The question or task.")],
    thread: o.Thread = None,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    protocol: o.ProtocolOpt = None,
    max_steps: o.MaxSteps = None,
    tools: o.Tools = None,
    approve: o.Approve = None,
    mcp_config: o.McpConfig = None,
    checkpointer: o.Checkpointer = None,
    as_json: o.AsJson = False,
) -> None:
    """Ask one question; each step is shown as it happens."""
    settings = o.given(
        model=model,
        base_url=base_url,
        protocol=protocol,
        max_steps=max_steps,
        tools=tools,
        approve=approve,
        mcp_config=mcp_config,
    )

    def body() -> None:
        from graph.cli.session import open_thread, preflight, report, run_turns

        text = o.question(question)
        thread_id = o.thread_id(thread) or uuid.uuid4().hex[:12]
        preflight(settings)

        async def turn(session: Any) -> tuple[dict[str, Any], bool]:
            payload = {"messages": [("user", text)]}
            return await session.drive(payload, {"configurable": {"thread_id": thread_id}})

        values, paused = run_turns(
            open_thread(checkpointer, settings, thread_id, as_json, turn), thread_id
        )
        report(values, thread_id, paused, as_json)

    run_command(body)


def chat(
    thread: o.Thread = None,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    protocol: o.ProtocolOpt = None,
    max_steps: o.MaxSteps = None,
    tools: o.Tools = None,
    approve: o.Approve = None,
    mcp_config: o.McpConfig = None,
    checkpointer: o.Checkpointer = None,
) -> None:
    """An interactive conversation on one thread (Ctrl-D or /exit to leave)."""
    settings = o.given(
        model=model,
        base_url=base_url,
        protocol=protocol,
        max_steps=max_steps,
        tools=tools,
        approve=approve,
        mcp_config=mcp_config,
    )

    def body() -> None:
        from graph.cli.approvals import read_line
        from graph.cli.output import error
        from graph.cli.session import open_thread, preflight, run_turns
        from graph.redaction import redact

        thread_id = o.thread_id(thread) or uuid.uuid4().hex[:12]
        preflight(settings)
        say(f"thread {thread_id} · /exit or Ctrl-D to leave")

        async def conversation(session: Any) -> None:
            while True:
                line = read_line("you> ")
                if line is None or line.strip() in ("/exit", "/quit"):
                    return
                if not line.strip():
                    continue
                config = {"configurable": {"thread_id": thread_id}}
                values, paused = await session.drive({"messages": [("user", line)]}, config)
                if paused:
                    return
                if values.get("status") == "error":
                    error(redact(values.get("error")))

        run_turns(open_thread(checkpointer, settings, thread_id, False, conversation), thread_id)
        say(f"thread {thread_id} · continue with: react-agent chat --thread {thread_id}")

    run_command(body)


def resume(
    thread: o.ThreadRequired,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    protocol: o.ProtocolOpt = None,
    tools: o.Tools = None,
    approve: o.Approve = None,
    mcp_config: o.McpConfig = None,
    checkpointer: o.Checkpointer = None,
    as_json: o.AsJson = False,
) -> None:
    """Continue a run that stopped early: a crash, Ctrl-C, an approval pause, a model outage."""
    settings = o.given(
        model=model,
        base_url=base_url,
        protocol=protocol,
        tools=tools,
        approve=approve,
        mcp_config=mcp_config,
    )

    async def go(session: Any) -> tuple[dict[str, Any], bool]:
        from graph.persistence.resume import aresume_config
        from graph.redaction import redact

        config = {"configurable": {"thread_id": thread}}
        snapshot = await session.agent.aget_state(config)
        if snapshot.created_at is None:
            raise o.Stop(f"no thread {thread!r} in {redact(session.url)}.", 1)
        target = await aresume_config(session.agent, config)
        if target is None:
            status = (snapshot.values or {}).get("status")
            raise o.Stop(
                f"thread {thread!r} has nothing to resume: its last run ended with status "
                f"{status!r}. Ask a new question with --thread {thread}.",
                1,
            )
        return await session.drive(None, target)

    _continue_thread(thread, settings, checkpointer, as_json, go)


def replay(
    thread: o.ThreadRequired,
    checkpoint: o.CheckpointId,
    tool_input: Annotated[
        str | None,
        typer.Option(
            "--input",
            help="New JSON input for the tool call pending at that "
            "checkpoint (a checkpoint whose next node is act).",
        ),
    ] = None,
    call: Annotated[int, typer.Option(help="Which pending call --input replaces.")] = 0,
    model: o.Model = None,
    base_url: o.BaseUrl = None,
    protocol: o.ProtocolOpt = None,
    tools: o.Tools = None,
    approve: o.Approve = None,
    mcp_config: o.McpConfig = None,
    checkpointer: o.Checkpointer = None,
    as_json: o.AsJson = False,
) -> None:
    """Time travel: re-run from a checkpoint as a fork (the original history stays)."""
    settings = o.given(
        model=model,
        base_url=base_url,
        protocol=protocol,
        tools=tools,
        approve=approve,
        mcp_config=mcp_config,
    )

    async def go(session: Any) -> tuple[dict[str, Any], bool]:
        from graph.persistence.forks import fork_with_input

        config = {"configurable": {"thread_id": thread, "checkpoint_id": checkpoint}}
        snapshot = await session.agent.aget_state(config)
        if snapshot.created_at is None:
            raise o.Stop(f"no checkpoint {checkpoint!r} in thread {thread!r}.", 1)
        if tool_input is not None:
            config = await fork_with_input(session.agent, snapshot, _parse_input(tool_input), call)
        say(f"forking thread {thread} from checkpoint {checkpoint}")
        return await session.drive(None, config)

    _continue_thread(thread, settings, checkpointer, as_json, go)


def _continue_thread(
    thread: str, settings: dict[str, Any], checkpointer: str | None, as_json: bool, go: Any
) -> None:
    """Run `go` on an existing thread (resume, replay): the thread's lock, the run, the report."""

    def body() -> None:
        from graph.cli.session import open_thread, preflight, report, run_turns

        o.thread_id(thread)
        preflight(settings)
        values, paused = run_turns(open_thread(checkpointer, settings, thread, as_json, go), thread)
        report(values, thread, paused, as_json)

    run_command(body)


def _parse_input(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
