"""Commands that run the agent: `ask`, `chat`, `resume`, `replay`.

Each checks what the user typed, the settings, the tools and the store before any model starts
(the embedded model takes seconds to start): a bad flag, an unknown thread or a finished run is
reported first. The options they share are declared once (`options.with_run_options`).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import typer

from graph.cli import options as o
from graph.cli.guard import run_command
from graph.cli.output import is_terminal, say


@o.with_run_options
def ask(
    question: Annotated[str, typer.Argument(help="The question or task.")],
    thread: o.Thread = None,
    as_json: o.AsJson = False,
    *,
    run: o.RunOptions,
) -> None:
    """Ask one question; each step is shown as it happens."""

    async def turn(session: Any, thread_id: str) -> tuple[dict[str, Any], bool]:
        payload = {"messages": [("user", question)]}
        return await session.drive(payload, {"configurable": {"thread_id": thread_id}})

    _run_thread(run, thread, as_json, turn, new=True, first=lambda: o.question(question))


@o.with_run_options
def chat(thread: o.Thread = None, *, run: o.RunOptions) -> None:
    """An interactive conversation on one thread (Ctrl-D or /exit to leave)."""

    def body() -> None:
        from graph.cli.approvals import read_line
        from graph.cli.output import error
        from graph.cli.session import (
            Unsaved,
            check,
            closing_line,
            open_thread,
            pause_notice,
        )
        from graph.redaction import redact

        thread_id = o.thread_id(thread) or uuid.uuid4().hex[:12]
        ctx = run.context()  # once, for the checks, the model and the agent
        if not thread:  # a new thread: the model is surely needed, so it loads meanwhile
            from graph.cli.warmup import start_model

            start_model(run, ctx)
        url = check(run, ctx)
        # the prompt is for a person: piped input gets none (the answers alone go to stdout)
        prompt = "you> " if is_terminal(sys.stdin) else ""

        async def conversation(session: Any) -> bool:
            await session.ready()
            say(f"thread {thread_id} · /exit or Ctrl-D to leave")
            while True:
                line = read_line(prompt)
                if line is None or line.strip() in ("/exit", "/quit"):
                    return False
                if not line.strip():
                    continue
                config = {"configurable": {"thread_id": thread_id}}
                values, paused = await session.drive({"messages": [("user", line)]}, config)
                if paused:  # ended as ask and resume end: the resume command, exit 4
                    return True
                if values.get("status") == "error":
                    error(redact(values.get("error")))

        unsaved = Unsaved()  # this command's: each new line is unsaved until the graph takes it
        opened = open_thread(run, thread_id, False, conversation, ctx, unsaved=unsaved)
        from graph.cli.interrupts import run_turns

        again = run.repeated()
        if run_turns(opened, thread_id, unsaved, url, options=again):
            say(pause_notice(thread_id, url, again))
            raise o.Stop("", o.EXIT["paused"])
        say(closing_line(thread_id, url, "chat"))

    run_command(body)


@o.with_run_options
def resume(thread: o.ThreadRequired, as_json: o.AsJson = False, *, run: o.RunOptions) -> None:
    """Continue a run that stopped early: a crash, Ctrl-C, an approval pause, a model outage."""

    async def go(session: Any, _thread: str) -> tuple[dict[str, Any], bool]:
        from graph.persistence.resume import aresume_config

        config = {"configurable": {"thread_id": thread}}
        snapshot = await session.agent.aget_state(config)
        if snapshot.created_at is None:
            raise o.no_thread(thread, session.url)
        target = await aresume_config(session.agent, config)
        if target is None:
            status = (snapshot.values or {}).get("status")
            raise o.Stop(
                f"thread {thread!r} has nothing to resume: its last run ended with status "
                f"{status!r}. Ask a new question with --thread {thread}.",
                o.EXIT["usage"],
            )
        return await session.drive(None, target)

    _run_thread(run, thread, as_json, go)


@o.with_run_options
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
    as_json: o.AsJson = False,
    *,
    run: o.RunOptions,
) -> None:
    """Time travel: re-run from a checkpoint as a fork (the original history stays)."""
    new_input: list[Any] = []  # the parsed --input, read before the store is opened

    def first() -> None:
        if tool_input is not None:
            new_input.append(_parse_input(tool_input))

    async def go(session: Any, _thread: str) -> tuple[dict[str, Any], bool]:
        from graph.persistence.forks import fork_with_input

        config = {"configurable": {"thread_id": thread, "checkpoint_id": checkpoint}}
        snapshot = await session.agent.aget_state(config)
        if snapshot.created_at is None:
            raise o.no_checkpoint(checkpoint, thread)
        if new_input:
            config = await fork_with_input(session.agent, snapshot, new_input[0], call)
        say(f"forking thread {thread} from checkpoint {checkpoint}")
        return await session.drive(None, config)

    _run_thread(run, thread, as_json, go, first=first)


def _run_thread(
    run: o.RunOptions,
    thread: str | None,
    as_json: bool,
    go: Callable[[Any, str], Awaitable[tuple[dict[str, Any], bool]]],
    *,
    new: bool = False,
    first: Callable[[], object] = lambda: None,
) -> None:
    """Run `go(session, thread_id)` on a thread (a new one when `new` and none is given): the
    checks first (`first`, then the options and the store), then the thread's lock, the run
    (the model starts on its first turn) and the report."""

    def body() -> None:
        first()
        ctx = run.context()  # once, for the checks, the model and the agent
        if new and not thread:  # no thread to look up: the model is surely needed
            from graph.cli.warmup import start_model

            start_model(run, ctx)
        from graph.cli.interrupts import run_turns
        from graph.cli.session import Unsaved, check, open_thread, report

        thread_id = o.thread_id(thread) or (uuid.uuid4().hex[:12] if new else "")
        url = check(run, ctx)
        # this command's; a new question is saved only once the graph takes it (Ctrl-C says so)
        unsaved = Unsaved(question=new)

        async def on_thread(session: Any) -> tuple[dict[str, Any], bool]:
            return await go(session, thread_id)

        opened = open_thread(run, thread_id, as_json, on_thread, ctx, unsaved=unsaved)
        again = run.repeated()
        values, paused = run_turns(opened, thread_id, unsaved, url, as_json, again)
        report(values, thread_id, paused, as_json, url, typed=run.schema is not None, options=again)

    run_command(body)


def _parse_input(raw: str) -> Any:
    """`--input` as JSON, refused in one sentence (exit 2) before anything is forked: text that
    is not JSON is a typo far more often than a tool's whole string input."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise o.Stop(
            f"--input is not JSON ({exc.msg} at column {exc.colno}); give the tool's input as "
            """a JSON object, e.g. '{"expression": "2+2"}', or a JSON string, e.g. '"hello"'.""",
            o.EXIT["usage"],
        ) from None
