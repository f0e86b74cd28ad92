"""The knowledge index: one SQLite FTS5 file per notes folder, kept in step with the files.

Kept apart from the search (`tools/knowledge_query.py`) and the tool (`tools/knowledge.py`)
because this is the part that writes: files, transactions, locking and file modes.

The index is one SQLite file per folder under `$REACT_AGENT_STATE_DIR/knowledge/`, named by a
hash of the folder's absolute path. It is brought up to date before every search by comparing
each document's relative path, mtime and size with what was indexed (`tools/knowledge_files.py`
decides what a document is), so added, changed and deleted files are picked up. Updates run in a
`BEGIN IMMEDIATE` transaction with a busy timeout, so two processes can search (and re-index)
the same folder at once; if the index stays locked, the search uses the index as it is.

The index holds copies of the user's notes, so what is created here is private: missing folders
are made 0700 and the database file is created 0600 before SQLite opens it (its `-wal`/`-shm`
files take the database's mode). Folders and files that already exist keep their modes, as
everywhere in the project (`tools/support/files.py`).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from pathlib import Path

from langchain_core.tools import ToolException

from tools.knowledge_files import Skipped, document_title, read_document, scan
from tools.support.files import private_dir, private_file, state_dir

BUSY_TIMEOUT_S = 5.0
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    title, body, content='documents', content_rowid='id', tokenize='trigram'
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def index_path(folder: Path) -> Path:
    """The index file for `folder`: one per absolute folder path."""
    digest = hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:16]
    return state_dir() / "knowledge" / f"{digest}.sqlite"


@contextmanager
def connect(db_path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the index file, created private (folder 0700, file 0600) if missing."""
    private_dir(db_path.parent)
    private_file(db_path)
    with closing(sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as conn:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        yield conn


def _ensure_schema(conn: sqlite3.Connection, folder: Path) -> None:
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            for table in ("documents_fts", "documents", "meta"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('folder', ?)",
                (str(folder.resolve()),),
            )
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    with suppress(sqlite3.OperationalError):  # busy: the rollback journal works too
        conn.execute("PRAGMA journal_mode = WAL")


def _stored(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    rows = conn.execute("SELECT path, mtime_ns, size FROM documents")
    return {path: (mtime, size) for path, mtime, size in rows}


def _delete(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT id, title, body FROM documents WHERE path = ?", (path,)).fetchone()
    if row is None:
        return
    conn.execute(
        "INSERT INTO documents_fts(documents_fts, rowid, title, body) VALUES ('delete', ?, ?, ?)",
        row,
    )
    conn.execute("DELETE FROM documents WHERE id = ?", (row[0],))


def _sync(conn: sqlite3.Connection, folder: Path, skipped: Skipped) -> None:
    """Bring the index up to date with the files (path + mtime + size) in one transaction."""
    files = scan(folder, skipped)
    if files == _stored(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = _stored(conn)  # another process may have synced while we waited
        for path in stored.keys() - files.keys():
            _delete(conn, path)
        for path, stat in files.items():
            if stored.get(path) == stat:
                continue
            try:
                text = read_document(folder, path)
            except OSError:
                text = None  # vanished or unreadable: the next search sees it again
            if text is None:  # or no longer a regular file inside the folder
                continue
            _delete(conn, path)
            title = document_title(text, Path(path).name)
            cursor = conn.execute(
                "INSERT INTO documents(path, mtime_ns, size, title, body) VALUES (?, ?, ?, ?, ?)",
                (path, stat[0], stat[1], title, text),
            )
            conn.execute(
                "INSERT INTO documents_fts(rowid, title, body) VALUES (?, ?, ?)",
                (cursor.lastrowid, title, text),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def open_synced(conn: sqlite3.Connection, folder: Path) -> Skipped:
    """Schema + sync, retried while another process holds the lock; a stale index is used if
    the lock never frees, an empty one is an error. What the scan left out is returned."""
    skipped = Skipped()
    for attempt in range(3):
        try:
            skipped = Skipped()
            _ensure_schema(conn, folder)
            _sync(conn, folder, skipped)
            return skipped
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            time.sleep(0.05 * (attempt + 1))
    try:
        conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        raise ToolException(
            f"The knowledge index for {folder} is busy (locked by another process); try again."
        ) from None
    return skipped
