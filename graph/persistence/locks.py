"""One run at a time per thread, across processes.

Two processes stepping the same thread would interleave their checkpoints; the second one
gets `ThreadBusy` instead. SQLite stores use an exclusive `flock` on a small file next to the
database (one machine); PostgreSQL stores use a session advisory lock (any number of machines).
The in-memory store lives in one process and needs no lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from graph.persistence.savers import describe, kind_of, sqlite_path


class ThreadBusy(RuntimeError):
    """Another process is running this thread right now."""


def _message(thread_id: str) -> str:
    return (
        f"Thread {thread_id} is busy: another run on it is in progress. Wait for it to finish "
        f"(or stop it), then try again."
    )


def lock_key(thread_id: str) -> int:
    """A stable signed 64-bit key for PostgreSQL advisory locks."""
    digest = hashlib.blake2b(thread_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@asynccontextmanager
async def thread_lock(url: str, thread_id: str) -> AsyncIterator[None]:
    """Hold the thread's lock for the duration of a run; raise ThreadBusy if it is taken."""
    kind = kind_of(url)
    if kind == "sqlite":
        folder = Path(f"{sqlite_path(url)}.locks")
        folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(thread_id.encode()).hexdigest()[:32]
        fd = os.open(folder / f"{name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ThreadBusy(_message(thread_id)) from None
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    elif kind == "postgres":
        import psycopg

        from graph.persistence.savers import _postgres_error

        try:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        except Exception as exc:
            raise _postgres_error(url, exc) from None
        try:
            key = lock_key(thread_id)
            cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cursor.fetchone()
            if not row or not row[0]:
                raise ThreadBusy(_message(thread_id))
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            await conn.close()
    else:
        yield


__all__ = ["ThreadBusy", "describe", "lock_key", "thread_lock"]
