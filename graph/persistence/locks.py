"""One run at a time per thread, across processes, and a lock that cannot silently vanish.

Two processes stepping the same thread would interleave their checkpoints; the second one gets
`ThreadBusy` instead. The in-memory store lives in one process and needs no lock.

SQLite stores lock the database file itself, keyed on the file (its device and inode), never
on a name: a symlink, a relative path, a renamed file or a hard link from another folder all
reach the same lock. On Linux the lock is an open-file-description byte-range lock
(`F_OFD_SETLK`) on one byte of the database per thread, far past the bytes SQLite locks (its
lock page sits at 1 GiB; ours start at 1 TiB, and locking past the end of a file does not grow
it). The kernel drops it when the process ends. Elsewhere, an exclusive `flock` on a small file
in a folder named after the database's device and inode, next to its real path.

Each held lock has a descriptor of its own (two runs of one thread in one process must see
each other), and a released descriptor is kept for the next lock instead of closed: closing
any descriptor of a file drops every POSIX lock the process holds on it, SQLite's included, and
a worker running other threads on the same store may be inside a transaction right then.

PostgreSQL stores use a session advisory lock (any number of machines). It lives as long as
its connection, and a connection can die under a run: an idle timeout, a pooler, a failover,
`pg_terminate_backend`. The server then frees the lock and another worker may take the thread.
So the lock's connection is watched: TCP keepalives, a wait on the socket that sees the server
close it within milliseconds, and every `HEARTBEAT` seconds a query asking `pg_locks` whether the
lock is still held (an answer slower than `CHECK_TIMEOUT` counts as lost). When the lock is lost
the run is stopped: the task running the body of `async with thread_lock(...)` is cancelled,
the context manager raises `LockLost` (one sentence with the resume command), and any later
checkpoint write of that thread from this run raises `LockLost` too (see `fencing`), including
writes from worker threads that cancellation cannot reach.

The lock needs a session of its own: behind pgbouncer, use session pooling for it (transaction
pooling gives no session locks at all).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import os
import struct
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from graph.persistence.errors import LockLost, reason_of
from graph.persistence.fencing import LockState, holding
from graph.persistence.savers import (
    _postgres_error,
    connect_options,
    describe,
    kind_of,
    read_only_message,
    sqlite_path,
    url_secrets,
)
from graph.settings import ConfigError
from graph.support.files import private_dir, private_file

# Open-file-description locks where the kernel has them (Linux, 64-bit struct flock).
OFD_LOCKS = sys.platform == "linux" and hasattr(fcntl, "F_OFD_SETLK") and struct.calcsize("@q") == 8
_BASE = 1 << 40  # the first byte of a thread lock: far past SQLite's lock page at 1 GiB
# Descriptors of SQLite stores whose lock was released, by (device, inode): reused, never
# closed, since closing one would drop SQLite's own locks in this process (see above).
_IDLE: dict[tuple[int, int], list[int]] = {}
HEARTBEAT = 1.0  # seconds between two checks of a PostgreSQL lock
CHECK_TIMEOUT = 5.0  # a check unanswered for this long counts as a lost lock
_HELD_QUERY = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND pid = pg_backend_pid() AND classid = %s::bigint::oid AND objid = %s::bigint::oid"
    " AND objsubid = 1)"
)


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


def store_key(url: str) -> tuple[int, int]:
    """The SQLite store's (device, inode), the file created (0600) if new."""
    path = sqlite_path(url)
    try:
        private_file(path)
        info = path.stat()
    except PermissionError:
        raise ConfigError(read_only_message(path)) from None
    except OSError as exc:
        raise ConfigError(f"Cannot open the SQLite checkpointer {path}: {exc.strerror}.") from None
    return info.st_dev, info.st_ino


def lock_offset(thread_id: str) -> int:
    """The byte of the database file that stands for the thread (past 1 TiB)."""
    digest = hashlib.blake2b(thread_id.encode(), digest_size=8).digest()
    return _BASE + int.from_bytes(digest, "big") % _BASE


def lock_file(url: str, thread_id: str) -> Path:
    """Where systems without open-file-description locks keep the thread's flock file: a
    folder named after the database's device and inode, next to its real path."""
    real = Path(os.path.realpath(sqlite_path(url)))
    device, inode = store_key(url)
    name = hashlib.sha256(thread_id.encode()).hexdigest()[:32]
    return real.with_name(f"{real.name}.locks") / f"{device}-{inode}" / f"{name}.lock"


@asynccontextmanager
async def thread_lock(
    url: str,
    thread_id: str,
    *,
    heartbeat: float = HEARTBEAT,
    check_timeout: float = CHECK_TIMEOUT,
) -> AsyncIterator[None]:
    """Hold the thread's lock for the duration of a run; raise ThreadBusy if it is taken, and
    LockLost (after cancelling the body) if a PostgreSQL lock is lost during the run."""
    kind = kind_of(url)
    if kind == "sqlite":
        async with _sqlite_lock(url, thread_id):
            yield
    elif kind == "postgres":
        async with _postgres_lock(url, thread_id, heartbeat, check_timeout):
            yield
    else:
        yield


@asynccontextmanager
async def _sqlite_lock(url: str, thread_id: str) -> AsyncIterator[None]:
    if not OFD_LOCKS:
        async with _flock_file(url, thread_id):
            yield
        return
    key = store_key(url)
    fd = _idle_descriptor(key, sqlite_path(url))
    offset = lock_offset(thread_id)
    try:
        _ofd_lock(fd, fcntl.F_WRLCK, offset)
    except OSError as exc:
        _IDLE.setdefault(key, []).append(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise ThreadBusy(_message(thread_id)) from None
        raise
    try:
        yield
    finally:
        _ofd_lock(fd, fcntl.F_UNLCK, offset)
        _IDLE.setdefault(key, []).append(fd)


def _idle_descriptor(key: tuple[int, int], path: Path) -> int:
    """A descriptor of the store with no lock on it: a kept one, or a new one."""
    idle = _IDLE.get(key)
    while idle:
        fd = idle.pop()
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) == key and info.st_nlink:
            return fd
        os.close(fd)  # that file was deleted (and its inode reused): nothing of it is open
    try:
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except PermissionError:
        raise ConfigError(read_only_message(path)) from None


def _ofd_lock(fd: int, kind: int, offset: int) -> None:
    """Set or clear the open-file-description lock on one byte (struct flock, 64-bit Linux:
    type, whence, start, length, pid, padded to 32 bytes)."""
    request = struct.pack("@hhqqi", kind, os.SEEK_SET, offset, 1, 0).ljust(32, b"\0")
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)  # type: ignore[attr-defined]


@asynccontextmanager
async def _flock_file(url: str, thread_id: str) -> AsyncIterator[None]:
    path = lock_file(url, thread_id)
    private_dir(path.parent.parent)
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
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


@asynccontextmanager
async def _postgres_lock(
    url: str, thread_id: str, heartbeat: float, check_timeout: float
) -> AsyncIterator[None]:
    import psycopg

    options = connect_options(
        url,
        fallback_application_name="react-agent lock",
        tcp_user_timeout=int(check_timeout * 1000),  # unacknowledged sends fail, not hang
    )
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, **options)
    except Exception as exc:
        raise _postgres_error(url, exc) from None
    state = LockState(thread_id)
    key = lock_key(thread_id)
    acquired = False
    try:
        try:
            cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cursor.fetchone()
        except psycopg.Error as exc:
            raise _postgres_error(url, exc) from None
        acquired = bool(row and row[0])
        if not acquired:
            raise ThreadBusy(_message(thread_id))
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


__all__ = [
    "CHECK_TIMEOUT",
    "HEARTBEAT",
    "LockLost",
    "ThreadBusy",
    "describe",
    "lock_file",
    "lock_key",
    "lock_offset",
    "store_key",
    "thread_lock",
]
