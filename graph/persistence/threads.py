"""The threads in a store, newest first, one damaged thread never hiding the others.

`athread_ids(saver, limit)` asks the store's checkpoint table for thread ids ordered by their
latest checkpoint (checkpoint ids are time-ordered UUIDs), without decoding a single blob, so
its cost is per thread rather than per checkpoint. `alist_threads(agent, limit)` then reads
each thread's state on its own: a thread whose checkpoints cannot be decoded comes back as
`BrokenThread` with one sentence naming the thread and the store, and the listing goes on. A
store that stops answering (`StoreError`) ends the listing: that is not one thread's fault.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from graph.persistence.errors import PersistenceError, StoreError
from graph.persistence.history import last_question
from graph.persistence.queries import acolumn, column
from graph.redaction import redact
from graph.state import run_status

_NEWEST = (
    "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id "
    "ORDER BY MAX(checkpoint_id) DESC LIMIT ?"
)


@dataclass(frozen=True)
class ThreadSummary:
    thread_id: str
    updated: str  # ISO time of the latest checkpoint
    status: str  # the run's status, "paused" (approval), "unfinished" (crash) or "-"
    question: str  # the person's latest question


@dataclass(frozen=True)
class BrokenThread:
    thread_id: str
    error: str  # one sentence naming the thread and the store


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


def summarize_state(thread_id: str, snapshot: Any) -> ThreadSummary:
    values = snapshot.values or {}
    if snapshot.interrupts:
        status = "paused"
    elif snapshot.next:
        status = "unfinished"
    else:
        status = run_status(values) or "-"
    return ThreadSummary(
        thread_id=thread_id,
        updated=str(snapshot.created_at or ""),
        status=str(status),
        question=last_question(values.get("messages", [])),
    )


def _summary(thread_id: str, found: Any) -> ThreadSummary | BrokenThread:
    """The thread's line from its state, or from why it could not be read (a store that
    stopped answering is not one thread's fault: it ends the listing)."""
    if isinstance(found, StoreError):
        raise found
    if isinstance(found, PersistenceError):
        return BrokenThread(thread_id, str(found))
    if isinstance(found, Exception):
        reason = redact(f"{type(found).__name__}: {found}".split("\n", 1)[0])
        return BrokenThread(thread_id, f"Thread {thread_id} cannot be read ({reason}).")
    return summarize_state(thread_id, found)


async def alist_threads(
    agent: Any, limit: int = 50, saver: Any = None
) -> AsyncIterator[ThreadSummary | BrokenThread]:
    """The threads of the agent's store (or `saver`), newest first, each read on its own."""
    for thread_id in await athread_ids(saver if saver is not None else agent.checkpointer, limit):
        try:
            found = await agent.aget_state({"configurable": {"thread_id": thread_id}})
        except Exception as exc:
            found = exc
        yield _summary(thread_id, found)


def list_threads(
    agent: Any, limit: int = 50, saver: Any = None
) -> Iterator[ThreadSummary | BrokenThread]:
    """`alist_threads` for an agent with a sync saver."""
    for thread_id in thread_ids(saver if saver is not None else agent.checkpointer, limit):
        try:
            found = agent.get_state({"configurable": {"thread_id": thread_id}})
        except Exception as exc:
            found = exc
        yield _summary(thread_id, found)


__all__ = [
    "BrokenThread",
    "ThreadSummary",
    "alist_threads",
    "athread_ids",
    "athread_times",
    "list_threads",
    "summarize_state",
    "thread_ids",
]
