"""The threads in a store, newest first, one damaged thread never hiding the others.

`athread_ids(saver, limit)` asks the store's checkpoint table for thread ids ordered by their
latest checkpoint (checkpoint ids are time-ordered UUIDs), without decoding a single blob, so
its cost is per thread rather than per checkpoint. `athread_rows(agent, limit)` then reads
each thread's state on its own (what `react-agent threads` lists): a thread whose state cannot
be read comes back with the exception that says why, and the listing goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from graph.persistence.history import last_question
from graph.persistence.queries import acolumn, column
from graph.state import run_status

_NEWEST = (
    "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id "
    "ORDER BY MAX(checkpoint_id) DESC LIMIT ?"
)


@contextmanager
def _listing(saver: Any) -> Iterator[None]:
    """A guarded saver's sentence for a store that failed while listing threads."""
    try:
        yield
    except Exception as exc:
        translate = getattr(saver, "store_failure", None)
        failure = translate(exc, None, "listing threads") if translate else exc
        if failure is exc:
            raise
        raise failure from None


def _memory_ids(saver: Any, limit: int) -> list[str]:
    latest = {t: max(ns.get("", {}), default="") for t, ns in saver.storage.items()}
    newest = sorted((t for t in latest if latest[t]), key=latest.__getitem__, reverse=True)
    return newest[:limit]


async def athread_ids(saver: Any, limit: int) -> list[str]:
    """Up to `limit` thread ids, the most recently updated first, no checkpoint decoded."""
    if isinstance(saver, InMemorySaver):
        return _memory_ids(saver, limit)
    with _listing(saver):
        found = await acolumn(saver, _NEWEST, (limit,))
    return found if found is not None else await asyncio.to_thread(thread_ids, saver, limit)


def thread_ids(saver: Any, limit: int) -> list[str]:
    """`athread_ids` for sync savers (SQLite, PostgreSQL, memory)."""
    if isinstance(saver, InMemorySaver):
        return _memory_ids(saver, limit)
    with _listing(saver):
        found = column(saver, _NEWEST, (limit,))
    if found is None:
        raise TypeError(f"cannot list the threads of a {type(saver).__name__}")
    return found


class _Lenient:
    """A serializer that reads what it can and turns an unreadable blob into None, so one
    damaged checkpoint does not hide every other thread while the store is scanned."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failures = 0

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        try:
            return self.inner.loads_typed(data)
        except Exception:
            self.failures += 1
            return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def athread_times(saver: Any, limit: int) -> list[tuple[str, str | None]]:
    """Up to `limit` thread ids with the time of their latest checkpoint, newest first.

    The ids come from the store's index (`athread_ids`: no checkpoint decoded), then
    each thread's latest checkpoint is read for its time only, leniently (`serde` is the
    saver's public serializer attribute, restored afterwards), so a damaged thread still
    lists; reading a thread's state for real is left to the caller, one thread at a time.
    The cost is per thread, not per checkpoint: a long thread does not slow the listing.
    """
    ids = await athread_ids(saver, limit)
    strict = saver.serde
    saver.serde = _Lenient(strict)  # type: ignore[assignment]
    found: list[tuple[str, str | None]] = []
    try:
        for thread in ids:
            try:
                item = await saver.aget_tuple({"configurable": {"thread_id": thread}})
            except Exception:  # an unreadable row: listed without a time, read later
                item = None
            checkpoint = item.checkpoint if item and isinstance(item.checkpoint, dict) else {}
            found.append((thread, checkpoint.get("ts")))
    finally:
        saver.serde = strict
    return found


def _status(snapshot: Any) -> Any:
    """A thread's status from its state: "paused" (waiting for approval), "unfinished" (a run
    cut short, by a crash), else the run's own status, "-" when it has none."""
    if snapshot.interrupts:
        return "paused"
    if snapshot.next:
        return "unfinished"
    return run_status(snapshot.values or {}) or "-"


async def athread_rows(
    agent: Any, limit: int, saver: Any = None
) -> tuple[list[dict[str, Any]], list[tuple[str, Exception]]]:
    """The threads of the agent's store (or `saver`), newest first, each read on its own: a
    row (`thread_id`, `updated`, `status`, `last_question`) for each thread whose state reads,
    and the id and the exception of each one that does not, so one damaged thread never hides
    the others."""
    rows: list[dict[str, Any]] = []
    unreadable: list[tuple[str, Exception]] = []
    store = saver if saver is not None else agent.checkpointer
    for thread_id, ts in await athread_times(store, limit):
        try:
            state = await agent.aget_state({"configurable": {"thread_id": thread_id}})
        except Exception as exc:
            unreadable.append((thread_id, exc))
            continue
        rows.append(
            {
                "thread_id": thread_id,
                "updated": ts,
                "status": _status(state),
                "last_question": last_question((state.values or {}).get("messages", [])),
            }
        )
    return rows, unreadable


__all__ = ["athread_ids", "athread_rows", "athread_times", "thread_ids"]
