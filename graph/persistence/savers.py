"""Checkpointers from a URL: `memory`, `sqlite:///path/file.sqlite`, `postgresql://...`.

SQLite is the embedded default (one file under the state folder); PostgreSQL is for several
worker processes or machines sharing one store. Both are LangGraph's own savers, guarded (see
`guarded`): a store failing mid-run is `StoreError`, an undecodable checkpoint
`CorruptCheckpoint`, each one sentence with the thread and the way to resume. A bad URL or a
database that cannot be reached when opening is one sentence, raised as `ConfigError`. No
message shows a password: URLs go through `describe`, driver text through `redact`.

Files created here are private: the state folder 0700, a new SQLite file 0600 (its -wal/-shm
files follow it).
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import sqlite3
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from graph.persistence.errors import as_sentences
from graph.persistence.guarded import guarded
from graph.redaction import redact
from graph.settings import ConfigError
from graph.support.files import private_dir, private_file, state_dir

ENV_VAR = "REACT_AGENT_CHECKPOINTER"
_HELP = (
    "use 'memory', 'sqlite:///path/to/file.sqlite' or "
    "'postgresql://user:password@host:5432/database'"
)


def default_url() -> str:
    return os.environ.get(ENV_VAR, "").strip() or f"sqlite:///{state_dir() / 'checkpoints.sqlite'}"


def describe(url: str) -> str:
    """The URL for messages: its password (in the userinfo, the query string, or a
    `key=value` connection string) masked, the user name and the rest kept."""
    if "://" not in url:
        return redact(url)  # `memory`, or a libpq key=value string
    parts = urlsplit(url)
    shown = url
    if parts.password is not None:
        user = parts.netloc.rpartition("@")[0].split(":", 1)[0]
        host = parts.netloc.rpartition("@")[2]
        shown = shown.replace(parts.netloc, f"{user}:***@{host}", 1)
    if parts.query:
        shown = shown.replace(f"?{parts.query}", f"?{redact(parts.query)}", 1)
    return shown


def url_secrets(url: str) -> tuple[str, ...]:
    """The URL's password as written and decoded, to mask verbatim in driver messages
    (libpq quotes what it cannot parse, spaces included)."""
    try:
        password = urlsplit(url).password if "://" in url else None
    except ValueError:
        password = None
    return tuple({password, unquote(password)}) if password else ()


def kind_of(url: str) -> str:
    """`memory`, `sqlite` or `postgres`; anything else is a ConfigError."""
    if url == "memory":
        return "memory"
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        sqlite_path(url)
        return "sqlite"
    if scheme in ("postgres", "postgresql"):
        return "postgres"
    raise ConfigError(f"Unknown checkpointer URL {describe(url)!r}: {_HELP}.")


def sqlite_path(url: str) -> Path:
    """The file of a `sqlite:///relative` or `sqlite:////absolute` URL, its folder created."""
    rest = url[len("sqlite://") :]
    if not rest.startswith("/") or len(rest) < 2:
        raise ConfigError(f"Checkpointer URL {url!r} names no file: {_HELP}.")
    path = Path(rest[1:]).expanduser()  # sqlite:///rel/file or sqlite:////abs/file
    try:
        private_dir(path.parent)
    except OSError as exc:
        raise ConfigError(f"Cannot create the folder for {path}: {exc.strerror}.") from None
    return path


def sqlite_file(url: str) -> Path:
    """The SQLite file, created 0600 if new (SQLite gives its -wal/-shm files the same mode).
    A store this process cannot write (its file, or the folder its -wal and -shm files go in)
    is one sentence saying so, before SQLite fails on it half way through a command."""
    path = sqlite_path(url)
    try:
        private_file(path)
    except PermissionError:
        raise ConfigError(read_only_message(path)) from None
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise ConfigError(read_only_message(path)) from None
        raise ConfigError(f"Cannot create the checkpointer file {path}: {exc.strerror}.") from None
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)):
        raise ConfigError(read_only_message(path))
    return path


def read_only_message(path: Path) -> str:
    return (
        f"The SQLite checkpointer {path} is read-only: give this user write access to it and to "
        f"its folder (SQLite writes its -wal and -shm files there), or choose another store "
        f"with --checkpointer or {ENV_VAR}."
    )


# Every PostgreSQL connection of the project: TCP keepalives, so a peer that vanished (a
# dropped network, a failed-over server) is noticed instead of waited on forever, and a name in
# pg_stat_activity. Whatever the URL sets itself wins.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "fallback_application_name": "react-agent",
}


def connect_options(url: str, **extra: Any) -> dict[str, Any]:
    """Connection keyword arguments for `url`: the defaults above (and `extra`) that the URL
    does not set."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    return {k: v for k, v in {**KEEPALIVES, **extra}.items() if k not in given}


# PostgresSaver.setup() is not safe to run concurrently on a fresh database (two processes both
# insert the same migration row). Setup is serialized with a session advisory lock, polled with
# pg_try_advisory_lock and never awaited with pg_advisory_lock: the migrations run
# CREATE INDEX CONCURRENTLY, which waits for every open transaction, including a second process
# blocked inside pg_advisory_lock, and the two would wait for each other forever.
SETUP_LOCK = int.from_bytes(
    hashlib.blake2b(b"react-agent:setup", digest_size=8).digest(), "big", signed=True
)
SETUP_WAIT = 60.0


def _setup_timeout() -> ConfigError:
    return ConfigError(
        f"Another process has been setting up the checkpointer tables for {SETUP_WAIT:.0f} s; "
        "check the database for stuck sessions."
    )


@contextmanager
def setup_lock(url: str) -> Iterator[None]:
    import psycopg

    with psycopg.connect(url, autocommit=True, **connect_options(url)) as guard:
        deadline = time.monotonic() + SETUP_WAIT
        while not guard.execute("SELECT pg_try_advisory_lock(%s)", (SETUP_LOCK,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise _setup_timeout()
            time.sleep(0.05)
        yield  # closing the session releases the lock


@asynccontextmanager
async def async_setup_lock(url: str) -> AsyncIterator[None]:
    import psycopg

    options = connect_options(url)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True, **options) as guard:
        deadline = time.monotonic() + SETUP_WAIT
        while True:
            cursor = await guard.execute("SELECT pg_try_advisory_lock(%s)", (SETUP_LOCK,))
            row = await cursor.fetchone()
            if row and row[0]:
                break
            if time.monotonic() > deadline:
                raise _setup_timeout()
            await asyncio.sleep(0.05)
        yield


def postgres_label(url: str) -> str:
    return f"the PostgreSQL checkpointer at {describe(url)}"


def sqlite_label(path: Path) -> str:
    return f"the SQLite checkpointer {path}"


def _postgres_error(url: str, exc: Exception) -> ConfigError:
    """The database could not be opened: one sentence, with no password in it."""
    reason = as_sentences(redact(str(exc), url_secrets(url))) or f"{type(exc).__name__}."
    return ConfigError(
        f"Cannot use the PostgreSQL checkpointer at {describe(url)}: {reason} Check that the "
        f"server is running and the URL ({ENV_VAR} or --checkpointer)."
    )


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


def _postgres_errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error,)


@contextmanager
def postgres_connection(url: str) -> Iterator[Any]:
    """A connection as the savers and stores use one (autocommit, no prepared statements, dict
    rows), closed on the way out; failing to connect is one sentence with no password."""
    import psycopg

    try:
        conn = psycopg.connect(url, **_connection_options(url))
    except Exception as exc:
        raise _postgres_error(url, exc) from None
    try:
        yield conn
    finally:
        conn.close()


@asynccontextmanager
async def apostgres_connection(url: str) -> AsyncIterator[Any]:
    """The async form of `postgres_connection`."""
    import psycopg

    try:
        conn = await psycopg.AsyncConnection.connect(url, **_connection_options(url))
    except Exception as exc:
        raise _postgres_error(url, exc) from None
    try:
        yield conn
    finally:
        await conn.close()


def _connection_options(url: str) -> dict[str, Any]:
    from psycopg.rows import dict_row

    options = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    return {**options, **connect_options(url)}


@contextmanager
def set_up(url: str) -> Iterator[None]:
    """Setting up tables: a failure other than our own sentence becomes one, no password."""
    try:
        yield
    except ConfigError:
        raise
    except Exception as exc:
        raise _postgres_error(url, exc) from None


@contextmanager
def open_saver(url: str | None = None) -> Iterator[BaseCheckpointSaver]:
    """A sync saver for the URL (default: the SQLite file under the state folder)."""
    url = url or default_url()
    kind = kind_of(url)
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = sqlite_file(url)
        conn = sqlite3.connect(str(path), check_same_thread=False)
        try:
            saver = guarded(SqliteSaver)(conn, serde=compressed_serde())
            saver.configure_guard(sqlite_label(path), (sqlite3.Error,))
            yield saver
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with postgres_connection(url) as conn:
            saver = guarded(PostgresSaver)(conn, serde=compressed_serde())
            with set_up(url):
                saver.configure_guard(postgres_label(url), _postgres_errors(), url_secrets(url))
                with setup_lock(url):
                    saver.setup()
            yield saver


@asynccontextmanager
async def open_async_saver(url: str | None = None) -> AsyncIterator[BaseCheckpointSaver]:
    """An async saver for the URL (default: the SQLite file under the state folder)."""
    url = url or default_url()
    kind = kind_of(url)
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif kind == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = sqlite_file(url)
        async with aiosqlite.connect(str(path)) as conn:
            saver = guarded(AsyncSqliteSaver)(conn, serde=compressed_serde())
            saver.configure_guard(sqlite_label(path), (sqlite3.Error,))
            yield saver
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with apostgres_connection(url) as conn:
            saver = guarded(AsyncPostgresSaver)(conn, serde=compressed_serde())
            with set_up(url):
                saver.configure_guard(postgres_label(url), _postgres_errors(), url_secrets(url))
                async with async_setup_lock(url):
                    await saver.setup()
            yield saver
