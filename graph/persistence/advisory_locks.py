"""PostgreSQL stores: a thread's lock is a session advisory lock (any number of machines).

It lives as long as its connection, and a connection can die under a run: an idle timeout, a
pooler, a failover, `pg_terminate_backend`. The server then frees the lock and another worker
may take the thread. So the lock's connection is watched: TCP keepalives, a wait on the socket
that sees the server close it within milliseconds, and every `HEARTBEAT` seconds a query asking
`pg_locks` whether the lock is still held (an answer slower than `CHECK_TIMEOUT` counts as
lost). When the lock is lost the run is stopped: the task running the body of
`async with thread_lock(...)` is cancelled, the context manager raises `LockLost` (one sentence
with the resume command), and any later checkpoint write of that thread from this run raises
`LockLost` too (see `fencing`), including writes from worker threads that cancellation cannot
reach.

The lock needs a session of its own: behind pgbouncer, use session pooling for it (transaction
pooling gives no session locks at all).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from graph.persistence.errors import ThreadBusy, reason_of
from graph.persistence.fencing import LockState, holding
from graph.persistence.postgres import connect_error, connect_options
from graph.persistence.urls import url_secrets

HEARTBEAT = 1.0  # seconds between two checks of a PostgreSQL lock
CHECK_TIMEOUT = 5.0  # a check unanswered for this long counts as a lost lock
_HELD_QUERY = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND pid = pg_backend_pid() AND classid = %s::bigint::oid AND objid = %s::bigint::oid"
    " AND objsubid = 1)"
)


def lock_key(thread_id: str) -> int:
    """A stable signed 64-bit key for PostgreSQL advisory locks."""
    digest = hashlib.blake2b(thread_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@asynccontextmanager
async def postgres_lock(
    url: str, thread_id: str, heartbeat: float, check_timeout: float
) -> AsyncIterator[None]:
    """Hold the thread's advisory lock on its own watched session (see above)."""
    import psycopg

    options = connect_options(
        url,
        fallback_application_name="react-agent lock",
        tcp_user_timeout=int(check_timeout * 1000),  # unacknowledged sends fail, not hang
    )
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, **options)
    except Exception as exc:
        raise connect_error(url, exc) from None
    state = LockState(thread_id)
    key = lock_key(thread_id)
    acquired = False
    try:
        try:
            cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cursor.fetchone()
        except psycopg.Error as exc:
            raise connect_error(url, exc) from None
        acquired = bool(row and row[0])
        if not acquired:
            raise ThreadBusy.of(thread_id)
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        watcher = asyncio.create_task(
            _watch(conn, key, state, task, heartbeat, check_timeout, url_secrets(url)),
            name=f"react-agent lock watcher {thread_id}",
        )
        try:
            with holding(state):
                yield
        except (Exception, asyncio.CancelledError) as exc:
            state.closing = True
            if state.lost is None:
                raise
            ours = _ours(task, state, cancelling)
            if isinstance(exc, asyncio.CancelledError) and not ours:
                raise  # cancelled from outside as well: that wins
            raise state.error() from None
        finally:
            state.closing = True
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        if state.lost is not None:  # the body swallowed the cancellation: still not its result
            _ours(task, state, cancelling)
            raise state.error()
    finally:
        await _release(conn, key if acquired else None, state, check_timeout)


def _ours(task: asyncio.Task[Any], state: LockState, cancelling: int) -> bool:
    """Undo the watcher's cancellation of `task`; True if nobody else cancelled it."""
    if not state.cancelled:
        return False
    state.cancelled = False
    return task.uncancel() <= cancelling


async def _watch(
    conn: Any,
    key: int,
    state: LockState,
    task: asyncio.Task[Any],
    heartbeat: float,
    check_timeout: float,
    secrets: tuple[str, ...],
) -> None:
    """Until cancelled: wait on the socket, check the lock; when it is gone, stop the run."""
    high, low = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    try:
        while True:
            # the server closing the session (terminate, idle timeout, shutdown) wakes this at once
            async for _ in conn.notifies(timeout=heartbeat):
                pass
            async with asyncio.timeout(check_timeout):
                cursor = await conn.execute(_HELD_QUERY, (high, low))
                row = await cursor.fetchone()
            if not row or not row[0]:
                state.lost = "the database no longer lists it as held"
                break
    except TimeoutError:
        state.lost = f"the database did not confirm it within {check_timeout:g} s"
    except Exception as exc:
        state.lost = f"its database connection closed: {reason_of(exc, secrets)}"
    if not state.closing:
        state.cancelled = True
        task.cancel(f"lock on thread {state.thread_id} lost")


async def _release(conn: Any, key: int | None, state: LockState, timeout: float) -> None:
    """Unlock (so the next run can start at once) and close; closing alone frees it too."""
    try:
        if key is not None and state.lost is None and not conn.closed:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(timeout):
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    finally:
        await conn.close()
