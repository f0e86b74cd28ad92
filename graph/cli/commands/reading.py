"""Commands that read the store: `history`, `show`, `threads`.

Each prints plain, unwrapped text when piped, a Rich table on a terminal, and JSON Lines with
`--json`. A thread whose stored checkpoints cannot be read is named in one sentence; it does not
stop `threads` from listing the others.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from graph.cli import options as o
from graph.cli.guard import run_command
from graph.cli.output import error, json_lines, json_text, say, table


def _unreadable(thread: str, exc: Exception) -> str:
    from graph.redaction import redact

    reason = redact(f"{type(exc).__name__}: {exc}".split("\n", 1)[0])
    return f"thread {thread!r} cannot be read: a stored checkpoint is damaged ({reason})."


def history(
    thread: o.ThreadRequired, checkpointer: o.Checkpointer = None, as_json: o.JsonLines = False
) -> None:
    """The thread step by step: one row per checkpoint, oldest first."""

    def body() -> None:
        import asyncio

        from graph.cli.session import with_store
        from graph.persistence.timeline import aiter_history

        o.thread_id(thread)

        async def read(session: Any) -> list[Any]:
            try:  # streamed: no full state is rebuilt, memory bounded whatever the length
                return [row async for row in aiter_history(session.agent, thread)]
            except Exception as exc:
                raise o.Stop(_unreadable(thread, exc), o.EXIT["error"]) from None

        rows = asyncio.run(with_store(checkpointer, read))
        if not rows:
            raise o.no_thread(thread, _url(checkpointer))
        if as_json:
            json_lines({"thread_id": thread, **row.as_dict()} for row in rows)
            return
        table(
            ("step", "node", "checkpoint", "next", "what happened"),
            (
                (row.step, row.node, row.checkpoint_id, ",".join(row.next), row.summary)
                for row in rows
            ),
            title=f"thread {thread}",
            right=("step",),
        )

    run_command(body)


def show(
    thread: o.ThreadRequired,
    checkpoint: o.CheckpointId,
    checkpointer: o.Checkpointer = None,
    as_json: o.JsonLines = False,
) -> None:
    """The full state at one checkpoint, as JSON (indented; one line with --json)."""

    def body() -> None:
        import asyncio

        from graph.cli.session import with_store
        from graph.persistence.history import state_as_dict

        o.thread_id(thread)

        async def read(session: Any) -> Any:
            config = {"configurable": {"thread_id": thread, "checkpoint_id": checkpoint}}
            try:
                return await session.agent.aget_state(config)
            except Exception as exc:
                raise o.Stop(_unreadable(thread, exc), o.EXIT["error"]) from None

        snapshot = asyncio.run(with_store(checkpointer, read))
        if snapshot.created_at is None:
            raise o.no_checkpoint(checkpoint, thread)
        following = ", ".join(snapshot.next) or "(end)"
        say(f"thread {thread} · checkpoint {checkpoint} · next: {following}")
        state = state_as_dict(snapshot.values or {})
        sys.stdout.write(json_text(state, indent=None if as_json else 2) + "\n")

    run_command(body)


def threads(
    limit: Annotated[int, typer.Option(help="Most threads to list, newest first.")] = 50,
    checkpointer: o.Checkpointer = None,
    as_json: o.JsonLines = False,
) -> None:
    """The threads in the store, newest first, with their last status and question."""

    def body() -> None:
        import asyncio

        from graph.cli.output import is_terminal
        from graph.cli.session import with_store
        from graph.persistence.history import excerpt
        from graph.persistence.threads import athread_rows
        from graph.redaction import redact

        o.positive("--limit", limit, most=2**63 - 1)  # SQLite's and PostgreSQL's largest

        async def read(session: Any) -> tuple[list[dict[str, Any]], list[str]]:
            rows, unreadable = await athread_rows(session.agent, limit, session.saver)
            return rows, [_unreadable(thread_id, exc) for thread_id, exc in unreadable]

        rows, problems = asyncio.run(with_store(checkpointer, read))
        if as_json:
            json_lines(rows)
        else:
            short = is_terminal(sys.stdout)  # a terminal row stays short; a pipe gets it all
            table(
                ("thread", "updated", "status", "last question"),
                (
                    (
                        r["thread_id"],
                        str(r["updated"] or "")[:19],
                        r["status"],
                        excerpt(r["last_question"], 80) if short else r["last_question"],
                    )
                    for r in rows
                ),
                title=f"threads in {redact(_url(checkpointer))}",
            )
        for problem in problems:
            error(problem)
        if problems:
            raise o.Stop("", o.EXIT["error"])

    run_command(body)


def _url(checkpointer: str | None) -> str:
    from graph.cli.locations import store_url

    return store_url(checkpointer)
