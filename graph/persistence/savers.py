"""Checkpointers from a URL: `memory`, `sqlite:///path/file.sqlite`, `postgresql://...`.

SQLite is the embedded default (one file under the state folder); PostgreSQL is for several
worker processes or machines sharing one store. Both are LangGraph's own savers. A bad URL or a
database that cannot be reached is one sentence, raised as `ConfigError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from graph.settings import ConfigError

ENV_VAR = "REACT_AGENT_CHECKPOINTER"
_HELP = (
    "use 'memory', 'sqlite:///path/to/file.sqlite' or "
    "'postgresql://user:password@host:5432/database'"
)


def state_dir() -> Path:
    """Where the agent keeps its files: REACT_AGENT_STATE_DIR, else the XDG state folder."""
    explicit = os.environ.get("REACT_AGENT_STATE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME", "").strip() or "~/.local/state"
    return Path(base).expanduser() / "react-agent"


def default_url() -> str:
    return os.environ.get(ENV_VAR, "").strip() or f"sqlite:///{state_dir() / 'checkpoints.sqlite'}"


def describe(url: str) -> str:
    """The URL without its password, for messages."""
    parsed = urlparse(url)
    if parsed.password:
        netloc = parsed.netloc.replace(f":{parsed.password}@", ":***@")
        return parsed._replace(netloc=netloc).geturl()
    return url


def kind_of(url: str) -> str:
    """`memory`, `sqlite` or `postgres`; anything else is a ConfigError."""
    if url == "memory":
        return "memory"
    scheme = urlparse(url).scheme
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
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Cannot create the folder for {path}: {exc.strerror}.") from None
    return path


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
def _setup_lock(url: str) -> Iterator[None]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as guard:
        deadline = time.monotonic() + SETUP_WAIT
        while not guard.execute("SELECT pg_try_advisory_lock(%s)", (SETUP_LOCK,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise _setup_timeout()
            time.sleep(0.05)
        yield  # closing the session releases the lock


@asynccontextmanager
async def _async_setup_lock(url: str) -> AsyncIterator[None]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as guard:
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


def _postgres_error(url: str, exc: Exception) -> ConfigError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return ConfigError(
        f"Cannot use the PostgreSQL checkpointer at {describe(url)}: {reason}. Check that the "
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

        conn = sqlite3.connect(str(sqlite_path(url)), check_same_thread=False)
        try:
            yield SqliteSaver(conn, serde=compressed_serde())
        finally:
            conn.close()
    else:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        try:
            conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
            saver = PostgresSaver(conn, serde=compressed_serde())
            with _setup_lock(url):
                saver.setup()
        except ConfigError:
            raise
        except Exception as exc:
            raise _postgres_error(url, exc) from None
        try:
            yield saver
        finally:
            conn.close()


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

        async with aiosqlite.connect(str(sqlite_path(url))) as conn:
            yield AsyncSqliteSaver(conn, serde=compressed_serde())
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        try:
            manager = AsyncPostgresSaver.from_conn_string(url, serde=compressed_serde())
            saver = await manager.__aenter__()
            async with _async_setup_lock(url):
                await saver.setup()
        except ConfigError:
            raise
        except Exception as exc:
            raise _postgres_error(url, exc) from None
        try:
            yield saver
        finally:
            await manager.__aexit__(None, None, None)
