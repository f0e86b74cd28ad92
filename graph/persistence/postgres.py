"""PostgreSQL connections as every part of the project opens them, and the guard around
creating tables.

Every connection gets TCP keepalives, so a peer that vanished (a dropped network, a
failed-over server) is noticed instead of waited on forever, and a name in pg_stat_activity;
whatever the URL sets itself wins. Failing to connect or to set up is one `ConfigError`
sentence with no password in it.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from graph.persistence.errors import as_sentences
from graph.persistence.urls import ENV_VAR, describe, url_secrets
from graph.redaction import redact
from graph.settings import ConfigError

KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "fallback_application_name": "react-agent",
}

# LangGraph's setup() is not safe to run concurrently on a fresh database (two processes both
# insert the same migration row). Setup is serialized with a session advisory lock, polled with
# pg_try_advisory_lock and never awaited with pg_advisory_lock: the migrations run
# CREATE INDEX CONCURRENTLY, which waits for every open transaction, including a second process
# blocked inside pg_advisory_lock, and the two would wait for each other forever.
SETUP_LOCK = int.from_bytes(
    hashlib.blake2b(b"react-agent:setup", digest_size=8).digest(), "big", signed=True
)
SETUP_WAIT = 60.0
_TRY_SETUP = "SELECT pg_try_advisory_lock(%s)"


def connect_options(url: str, **extra: Any) -> dict[str, Any]:
    """Connection keyword arguments for `url`: the defaults above (and `extra`) that the URL
    does not set."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    return {k: v for k, v in {**KEEPALIVES, **extra}.items() if k not in given}


def connect_error(url: str, exc: Exception) -> ConfigError:
    """The database could not be opened: one sentence, with no password in it."""
    reason = as_sentences(redact(str(exc), url_secrets(url))) or f"{type(exc).__name__}."
    return ConfigError(
        f"Cannot use the PostgreSQL checkpointer at {describe(url)}: {reason} Check that the "
        f"server is running and the URL ({ENV_VAR} or --checkpointer)."
    )


def _options(url: str) -> dict[str, Any]:
    """As LangGraph's savers and stores want a connection: autocommit, no prepared
    statements, dict rows."""
    from psycopg.rows import dict_row

    options = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    return {**options, **connect_options(url)}


@contextmanager
def connection(url: str) -> Iterator[Any]:
    """A connection for a saver or a store, closed on the way out."""
    import psycopg

    try:
        conn = psycopg.connect(url, **_options(url))
    except Exception as exc:
        raise connect_error(url, exc) from None
    try:
        yield conn
    finally:
        conn.close()


@asynccontextmanager
async def aconnection(url: str) -> AsyncIterator[Any]:
    """The async form of `connection`."""
    import psycopg

    try:
        conn = await psycopg.AsyncConnection.connect(url, **_options(url))
    except Exception as exc:
        raise connect_error(url, exc) from None
    try:
        yield conn
    finally:
        await conn.close()


def _polls() -> Iterator[None]:
    """One item per try of the setup lock, until `SETUP_WAIT` has passed: then one sentence."""
    deadline = time.monotonic() + SETUP_WAIT
    while time.monotonic() <= deadline:
        yield
    raise ConfigError(
        f"Another process has been setting up the checkpointer tables for {SETUP_WAIT:.0f} s; "
        "check the database for stuck sessions."
    )


def set_up(url: str, target: Any) -> None:
    """`target.setup()` (a saver's or a store's) under the setup lock; a failure other than
    our own sentence becomes one, without the password."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, **connect_options(url)) as guard:
            for _ in _polls():
                if guard.execute(_TRY_SETUP, (SETUP_LOCK,)).fetchone()[0]:
                    break
                time.sleep(0.05)
            target.setup()  # closing the guard's session releases the lock
    except ConfigError:
        raise
    except Exception as exc:
        raise connect_error(url, exc) from None


async def aset_up(url: str, target: Any) -> None:
    """The async form of `set_up`."""
    import psycopg

    options = connect_options(url)
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True, **options) as guard:
            for _ in _polls():
                row = await (await guard.execute(_TRY_SETUP, (SETUP_LOCK,))).fetchone()
                if row and row[0]:
                    break
                await asyncio.sleep(0.05)
            await target.setup()
    except ConfigError:
        raise
    except Exception as exc:
        raise connect_error(url, exc) from None
