"""One run at a time per thread, across processes, and a lock that cannot silently vanish.

Two processes stepping the same thread would interleave their checkpoints; the second one gets
`ThreadBusy` instead. SQLite stores lock the database file itself (`file_locks`), PostgreSQL
stores take a watched session advisory lock (`advisory_locks`: a lost lock stops the run with
`LockLost`). The in-memory store lives in one process and needs no lock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from graph.persistence.advisory_locks import CHECK_TIMEOUT, HEARTBEAT, lock_key, postgres_lock
from graph.persistence.errors import LockLost, ThreadBusy
from graph.persistence.file_locks import OFD_LOCKS, lock_file, lock_offset, sqlite_lock, store_key
from graph.persistence.urls import describe, kind_of


@asynccontextmanager
async def thread_lock(url: str, thread_id: str) -> AsyncIterator[None]:
    """Hold the thread's lock for the duration of a run; raise ThreadBusy if it is taken, and
    LockLost (after cancelling the body) if a PostgreSQL lock is lost during the run."""
    kind = kind_of(url)
    if kind == "sqlite":
        with sqlite_lock(url, thread_id):
            yield
    elif kind == "postgres":
        async with postgres_lock(url, thread_id, HEARTBEAT, CHECK_TIMEOUT):
            yield
    else:
        yield


__all__ = [
    "CHECK_TIMEOUT",
    "HEARTBEAT",
    "OFD_LOCKS",
    "LockLost",
    "ThreadBusy",
    "describe",
    "lock_file",
    "lock_key",
    "lock_offset",
    "store_key",
    "thread_lock",
]
