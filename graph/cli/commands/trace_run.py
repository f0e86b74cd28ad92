"""`react-agent trace`: a run drawn as a waterfall from the thread's checkpoints.

No collector and no tracing set-up are needed: the checkpoints already hold when each node
finished and the messages hold the tokens, the calls, their results and durations
(`graph.tracing.waterfall`). A table on a terminal, plain aligned text when piped, one JSON
object with `--json`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from graph.cli import options as o
from graph.cli.guard import run_command

RunOpt = Annotated[
    str | None,
    typer.Option(
        "--run",
        "-r",
        help="Which run of the thread: its number (1 = the first, -1 = the last) or the id of "
        "its input checkpoint (see `history`). Default: the last.",
    ),
]
JsonOne = Annotated[bool, typer.Option("--json", help="Print the run as one JSON object.")]


def trace(
    thread: o.ThreadRequired,
    run: RunOpt = None,
    checkpointer: o.Checkpointer = None,
    as_json: JsonOne = False,
) -> None:
    """A run of the thread as a waterfall: each step's model and tool time, tokens, errors and
    approvals waited on, from the checkpoints alone."""

    def body() -> None:
        import asyncio
        import sys

        from graph.cli.output import is_terminal, json_text, say, table
        from graph.cli.session import with_store
        from graph.tracing.waterfall import heading, rows_of

        o.thread_id(thread)
        found = asyncio.run(with_store(checkpointer, lambda s: _read(s, thread, run)))
        if found is None:
            raise o.no_thread(thread, _url(checkpointer))
        if as_json:
            sys.stdout.write(json_text(found.as_dict()) + "\n")
            return
        say(heading(found), stream=sys.stdout)
        fill = "█" if is_terminal(sys.stdout) else "#"
        table(
            ("step", "node", "time", "waterfall", "what happened"),
            rows_of(found, fill),
            right=("step", "time"),
        )

    run_command(body)


async def _read(session: Any, thread: str, wanted: str | None) -> Any:
    """The Timeline of the wanted run, or None when the thread has no checkpoint."""
    from graph.persistence.timeline import aiter_history
    from graph.steps import run_messages
    from graph.tracing.waterfall import split_runs, timeline

    try:
        rows = [row async for row in aiter_history(session.agent, thread)]
    except Exception as exc:
        from graph.redaction import redact

        reason = redact(f"{type(exc).__name__}: {exc}".split("\n", 1)[0])
        raise o.Stop(
            f"thread {thread!r} cannot be read: a stored checkpoint is damaged ({reason}).",
            o.EXIT["error"],
        ) from None
    if not rows:
        return None
    runs = split_runs(rows)
    if not runs:
        raise o.Stop(f"thread {thread!r} has no run yet (no question was asked).", o.EXIT["usage"])
    index = _index(wanted, runs, thread)
    last = runs[index][-1]
    config = {"configurable": {"thread_id": thread, "checkpoint_id": last.checkpoint_id}}
    snapshot = await session.agent.aget_state(config)
    values = snapshot.values or {}
    question = (values.get("run") or {}).get("question_id")
    messages = run_messages(values.get("messages") or [], question)
    return timeline(thread, runs, index, values, messages, bool(snapshot.interrupts))


def _index(wanted: str | None, runs: list[Any], thread: str) -> int:
    if wanted is None:
        return len(runs) - 1
    text = wanted.strip()
    if text.lstrip("-").isdigit():
        number = int(text)
        if 1 <= number <= len(runs):
            return number - 1
        if -len(runs) <= number <= -1:
            return len(runs) + number
        raise o.Stop(
            f"--run {number}: thread {thread!r} has {len(runs)} run"
            f"{'s' * (len(runs) != 1)} (1 to {len(runs)}, or -1 for the last).",
            o.EXIT["usage"],
        )
    for index, rows in enumerate(runs):
        if rows[0].checkpoint_id == text:
            return index
    raise o.Stop(
        f"--run {text}: no run of thread {thread!r} starts at that checkpoint; give a run "
        "number or an input checkpoint id from `react-agent history`.",
        o.EXIT["usage"],
    )


def _url(checkpointer: str | None) -> str:
    from graph.cli.locations import store_url

    return store_url(checkpointer)
