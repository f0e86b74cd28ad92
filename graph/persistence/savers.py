"""Checkpointers from a URL: `memory`, `sqlite:///path/file.sqlite`, `postgresql://...`.

SQLite is the embedded default (one file under the state folder); PostgreSQL is for several
worker processes or machines sharing one store. Both are LangGraph's own savers, guarded (see
`guarded`): a store failing mid-run is `StoreError`, an undecodable checkpoint
`CorruptCheckpoint`, each one sentence with the thread and the way to resume. A bad URL or a
database that cannot be reached when opening is one sentence, raised as `ConfigError`; a SQLite
file that cannot be opened as a store (not a database, a folder) is a `StoreError` naming the
file. No message shows a password: URLs go through `describe`, driver text through `redact`.

`opened` / `aopened` are the one way this package opens anything on a URL (the savers here,
the stores in `stores`): the connection, the tables, and closing.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from graph.persistence import postgres
from graph.persistence.errors import StoreError, reason_of
from graph.persistence.guarded import guarded
from graph.persistence.urls import (
    ENV_VAR,
    default_url,
    describe,
    kind_of,
    sqlite_file,
    sqlite_path,
    url_secrets,
)

# make(kind, url, connection or None, sync) -> the saver or store, not yet set up
Make = Callable[[str, str, Any, bool], Any]


@contextmanager
def opened(url: str | None, make: Make, *, eager: bool = False, **sqlite: Any) -> Iterator[Any]:
    """What `make` builds on the URL's connection, its tables set up (on SQLite only when
    `eager`: LangGraph's SQLite savers set up on first use), closed on the way out. `sqlite`:
    options for `sqlite3.connect`."""
    url = url or default_url()
    kind = kind_of(url)
    if kind == "memory":
        yield make(kind, url, None, True)
    elif kind == "sqlite":
        path = sqlite_file(url)
        try:
            conn = sqlite3.connect(str(path), check_same_thread=False, **sqlite)
        except sqlite3.Error as exc:
            raise unopenable(path, exc) from None
        try:
            target = make(kind, url, conn, True)
            if eager:
                with _opening(path):
                    target.setup()
            yield target
        finally:
            conn.close()
    else:
        with postgres.connection(url) as conn:
            target = make(kind, url, conn, True)
            postgres.set_up(url, target)
            yield target


@asynccontextmanager
async def aopened(
    url: str | None, make: Make, *, eager: bool = False, **sqlite: Any
) -> AsyncIterator[Any]:
    """The async form of `opened`."""
    url = url or default_url()
    kind = kind_of(url)
    if kind == "memory":
        yield make(kind, url, None, False)
    elif kind == "sqlite":
        path = sqlite_file(url)
        async with _aconnected(path, **sqlite) as conn:
            target = make(kind, url, conn, False)
            if eager:
                with _opening(path):
                    await target.setup()
            yield target
    else:
        async with postgres.aconnection(url) as conn:
            target = make(kind, url, conn, False)
            await postgres.aset_up(url, target)
            yield target


@asynccontextmanager
async def _aconnected(path: Path, **options: Any) -> AsyncIterator[Any]:
    """An aiosqlite connection to `path`, closed on the way out. When SQLite cannot open the
    file (a folder, no permission) aiosqlite stops its worker thread without waiting for it;
    the thread then reports to the event loop, which `asyncio.run` may have closed by then,
    and prints a traceback. So the thread is waited for here, while the loop still runs."""
    import aiosqlite

    conn = aiosqlite.connect(str(path), **options)
    try:
        await conn
    except sqlite3.Error as exc:
        await _worker_ended(conn)
        raise unopenable(path, exc) from None
    try:
        yield conn
    finally:
        await conn.close()


async def _worker_ended(conn: Any) -> None:
    """Wait (off the loop, briefly) for an aiosqlite connection's worker thread to end."""
    import asyncio

    from graph._compat import aiosqlite_worker  # on this failure path only: it loads LangChain

    worker = aiosqlite_worker(conn)
    if worker is not None and worker.is_alive():
        await asyncio.to_thread(worker.join, 5)


@contextmanager
def _opening(path: Path) -> Iterator[None]:
    """Setting up the tables is the first read of the file: a driver error there means the
    file is not a store this command can use, said in one sentence naming it."""
    try:
        yield
    except sqlite3.Error as exc:
        raise unopenable(path, exc) from None


def unopenable(path: Path, exc: sqlite3.Error) -> StoreError:
    """One sentence for a SQLite store that cannot be opened: the file, SQLite's reason, and
    what to do (wait for a lock; else give a store that is a SQLite database)."""
    reason = reason_of(exc)
    if "locked" in reason or "busy" in reason:
        advice = "wait for the other process that holds it to finish, then try again"
    else:
        advice = (
            f"give --checkpointer or {ENV_VAR} a SQLite database file, or move this one "
            "aside to start an empty store"
        )
    return StoreError(f"The SQLite checkpointer {path} cannot be opened ({reason}); {advice}.")


class _Zlib:
    """A "cipher" for LangGraph's `EncryptedSerializer` that compresses instead of encrypting:
    the serializer's own extension point, so stored blobs stay readable by LangGraph and rows
    written without it still load."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        packed = zlib.compress(plaintext, 6)
        return ("zlib", packed) if len(packed) < len(plaintext) else ("raw", plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        return zlib.decompress(ciphertext) if ciphername == "zlib" else ciphertext


def compressed_serde() -> SerializerProtocol:
    """JSON-plus serialization with zlib: checkpoints repeat channel names and versions and
    observations are text, so blobs shrink severalfold. Pass it to any saver as `serde=`."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return EncryptedSerializer(_Zlib(), JsonPlusSerializer())


def _saver(kind: str, url: str, conn: Any, sync: bool) -> BaseCheckpointSaver:
    """LangGraph's saver for the kind, guarded, with the compressed serializer."""
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        base: type[BaseCheckpointSaver] = SqliteSaver if sync else AsyncSqliteSaver
        label, errors = f"the SQLite checkpointer {sqlite_path(url)}", (sqlite3.Error,)
    else:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        base = PostgresSaver if sync else AsyncPostgresSaver
        label, errors = f"the PostgreSQL checkpointer at {describe(url)}", (psycopg.Error,)
    saver = guarded(base)(conn, serde=compressed_serde())  # type: ignore[call-arg]
    saver.configure_guard(label, errors, url_secrets(url))  # type: ignore[attr-defined]
    return saver


def open_saver(url: str | None = None) -> Any:
    """A sync saver for the URL (default: the SQLite file under the state folder), as a
    context manager: `with open_saver(url) as saver: ...`."""
    return opened(url, _saver)


def open_async_saver(url: str | None = None) -> Any:
    """An async saver for the URL, as an async context manager."""
    return aopened(url, _saver)


__all__ = [
    "ENV_VAR",
    "compressed_serde",
    "default_url",
    "describe",
    "kind_of",
    "open_async_saver",
    "open_saver",
]
