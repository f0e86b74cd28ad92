"""LangGraph's key-value store on the same URL as the checkpointer: its own tables in the same
SQLite file or PostgreSQL database (`memory`: an in-process store).

The agent keeps its call ledger there (`graph.persistence.ledger`: approval decisions spent,
tool calls started), which must outlive the checkpoints a fork or a replay restores.
`langgraph dev`, Aegra and LangGraph Server give the graph their own store; the CLI opens this
one beside its checkpointer and passes it to `build_graph(store=...)`. Opening fails as the
savers do: one sentence, no password.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from graph.persistence.savers import (
    _async_setup_lock,
    _postgres_error,
    _setup_lock,
    _sqlite_file,
    connect_options,
    default_url,
    kind_of,
)


@contextmanager
def open_store(url: str | None = None) -> Iterator[Any]:
    """A sync LangGraph store on the checkpointer's URL (default: the state folder's SQLite)."""
    url = url or default_url()
    kind = kind_of(url)
    if kind == "memory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore()
    elif kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        path = _sqlite_file(url)
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        try:
            store = SqliteStore(conn)
            store.setup()
            yield store
        finally:
            conn.close()
    else:
        import psycopg
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row

        try:
            conn = psycopg.connect(
                url,
                autocommit=True,
                prepare_threshold=0,
                row_factory=dict_row,
                **connect_options(url),
            )
        except Exception as exc:
            raise _postgres_error(url, exc) from None
        try:
            store = PostgresStore(conn)
            with _setup_lock(url):
                store.setup()
        except Exception as exc:
            conn.close()
            raise _postgres_error(url, exc) from None
        try:
            yield store
        finally:
            conn.close()


@asynccontextmanager
async def open_async_store(url: str | None = None) -> AsyncIterator[Any]:
    """An async LangGraph store on the checkpointer's URL, as `open_async_saver` opens it."""
    url = url or default_url()
    kind = kind_of(url)
    if kind == "memory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore()
    elif kind == "sqlite":
        import aiosqlite
        from langgraph.store.sqlite.aio import AsyncSqliteStore

        path = _sqlite_file(url)
        async with aiosqlite.connect(str(path), isolation_level=None) as conn:
            store = AsyncSqliteStore(conn)
            await store.setup()
            yield store
    else:
        import psycopg
        from langgraph.store.postgres.aio import AsyncPostgresStore
        from psycopg.rows import dict_row

        try:
            conn = await psycopg.AsyncConnection.connect(
                url,
                autocommit=True,
                prepare_threshold=0,
                row_factory=dict_row,
                **connect_options(url),
            )
        except Exception as exc:
            raise _postgres_error(url, exc) from None
        try:
            store = AsyncPostgresStore(conn)
            async with _async_setup_lock(url):
                await store.setup()
        except Exception as exc:
            await conn.close()
            raise _postgres_error(url, exc) from None
        try:
            yield store
        finally:
            await conn.close()
