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
    apostgres_connection,
    async_setup_lock,
    default_url,
    kind_of,
    postgres_connection,
    set_up,
    setup_lock,
    sqlite_file,
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

        path = sqlite_file(url)
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        try:
            store = SqliteStore(conn)
            store.setup()
            yield store
        finally:
            conn.close()
    else:
        from langgraph.store.postgres import PostgresStore

        with postgres_connection(url) as conn:
            store = PostgresStore(conn)
            with set_up(url), setup_lock(url):
                store.setup()
            yield store


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

        path = sqlite_file(url)
        async with aiosqlite.connect(str(path), isolation_level=None) as conn:
            store = AsyncSqliteStore(conn)
            await store.setup()
            yield store
    else:
        from langgraph.store.postgres.aio import AsyncPostgresStore

        async with apostgres_connection(url) as conn:
            store = AsyncPostgresStore(conn)
            with set_up(url):
                async with async_setup_lock(url):
                    await store.setup()
            yield store
