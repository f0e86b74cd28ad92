"""LangGraph's key-value store on the same URL as the checkpointer: its own tables in the same
SQLite file or PostgreSQL database (`memory`: an in-process store).

The agent keeps its call ledger there (`graph.persistence.ledger`: approval decisions spent,
tool calls started), which must outlive the checkpoints a fork or a replay restores.
`langgraph dev`, Aegra and LangGraph Server give the graph their own store; the CLI opens this
one beside its checkpointer and passes it to `build_graph(store=...)`. Opening fails as the
savers do: one sentence, no password.
"""

from __future__ import annotations

from typing import Any

from graph.persistence.savers import aopened, opened


def _store(kind: str, url: str, conn: Any, sync: bool) -> Any:
    if kind == "memory":
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore()
    if kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore
        from langgraph.store.sqlite.aio import AsyncSqliteStore

        return SqliteStore(conn) if sync else AsyncSqliteStore(conn)
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.postgres.aio import AsyncPostgresStore

    return PostgresStore(conn) if sync else AsyncPostgresStore(conn)


def open_store(url: str | None = None) -> Any:
    """A sync LangGraph store on the checkpointer's URL (default: the state folder's SQLite),
    as a context manager. Its SQLite connection commits each statement itself."""
    return opened(url, _store, eager=True, isolation_level=None)


def open_async_store(url: str | None = None) -> Any:
    """An async LangGraph store on the checkpointer's URL, as `open_async_saver` opens it."""
    return aopened(url, _store, eager=True, isolation_level=None)
