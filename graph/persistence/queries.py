"""One column from the checkpoint tables of LangGraph's SQL savers, for what the savers' API
has no cheap way to ask: a thread's checkpoint ids in order (`timeline`), the threads by their
latest checkpoint (`threads`). Both read ids only, never a blob, so their cost does not grow
with what the checkpoints hold.

Queries are written with `?` placeholders (SQLite's); PostgreSQL gets `%s`. Each runs under
the saver's own lock, on its connection (or one from its pool). `None` means the saver has no
SQL tables this module knows: the caller falls back to the saver's own listing.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any


def column(saver: Any, sql: str, params: tuple[Any, ...]) -> list[Any] | None:
    """The first column of the query's rows on a sync SQLite or PostgreSQL saver."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(saver, SqliteSaver):
        with saver.cursor(transaction=False) as cursor:
            cursor.execute(sql, params)
            return [row[0] for row in cursor.fetchall()]
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import tuple_row
    from psycopg_pool import ConnectionPool

    if not isinstance(saver, PostgresSaver):
        return None
    pooled = isinstance(saver.conn, ConnectionPool)
    with saver.lock, saver.conn.connection() if pooled else nullcontext(saver.conn) as conn:
        cursor = conn.cursor(row_factory=tuple_row)
        return [row[0] for row in cursor.execute(sql.replace("?", "%s"), params)]


async def acolumn(saver: Any, sql: str, params: tuple[Any, ...]) -> list[Any] | None:
    """`column` on an async SQLite or PostgreSQL saver."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(saver, AsyncSqliteSaver):
        await saver.setup()  # a new file has no tables until the first write
        async with saver.lock, saver.conn.execute(sql, params) as cursor:
            return [row[0] for row in await cursor.fetchall()]
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import tuple_row
    from psycopg_pool import AsyncConnectionPool

    if not isinstance(saver, AsyncPostgresSaver):
        return None
    pooled = isinstance(saver.conn, AsyncConnectionPool)
    async with saver.lock, saver.conn.connection() if pooled else nullcontext(saver.conn) as conn:
        cursor = conn.cursor(row_factory=tuple_row)
        await cursor.execute(sql.replace("?", "%s"), params)
        return [row[0] for row in await cursor.fetchall()]
