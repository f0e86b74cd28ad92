"""Full-text search over a folder of the user's `.md` / `.txt` notes, with SQLite FTS5.

The folder is `REACT_AGENT_KB_DIR` (default: the small sample corpus shipped in
`tools/knowledge_base/`). Its index is one SQLite file per folder under
`$REACT_AGENT_STATE_DIR/knowledge/` (default `~/.local/state/react-agent`), named by a hash of
the folder's absolute path. The index is built on first use and brought up to date before every
search by comparing each file's relative path, mtime and size with what was indexed, so added,
changed and deleted files are picked up. Updates run in a `BEGIN IMMEDIATE` transaction with a
busy timeout, so two processes can search (and re-index) the same folder at once; if the index
stays locked, the search uses the index as it is.

Matching: the FTS5 table uses the `trigram` tokenizer, so any substring of three or more
characters matches in any script (CJK included). Query text is cut into terms, never passed to
FTS5 as syntax: every term is a double-quoted phrase. Terms of fewer than three characters
(the two-character Chinese word 北京, 'AI') cannot match trigrams and fall back to
`LIKE '%term%'` over the stored text; a run of Chinese characters longer than two also counts
each of its two-character pieces that way, since Chinese words are mostly two characters long
and questions rarely repeat a document's exact phrase. Documents are ranked by the summed
rarity (BM25's IDF) of the terms they contain, ties broken by FTS5's `bm25()` (title weighted
above body). Excerpts are cut around the rarest matching term in Python: with trigram tokens
FTS5's `snippet()` can show at most 64 characters.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools._support import env_str, state_dir

SAMPLE_DIR = Path(__file__).resolve().parent / "knowledge_base"
SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 20_000
MAX_QUERY_CHARS = 500
MAX_TERMS = 40
RESULT_COUNT = 4
EXCERPT_CHARS = 240
BUSY_TIMEOUT_S = 5.0
SCHEMA_VERSION = 1

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(r"[^\W_]+")
_RUNS = re.compile(f"[{_CJK}]+|[^{_CJK}]+")
_IS_CJK = re.compile(f"[{_CJK}]")
_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_HEADING_MARK = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)

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


@dataclass(frozen=True)
class Term:
    text: str  # case-folded
    fts: bool  # True: an FTS5 trigram phrase; False: LIKE '%text%'


@dataclass(frozen=True)
class Hit:
    path: str
    title: str
    excerpt: str
    score: float


# --- configuration and files -------------------------------------------------------------------


def corpus_dir() -> Path:
    """`REACT_AGENT_KB_DIR`, or the shipped sample corpus."""
    raw = env_str("REACT_AGENT_KB_DIR", "")
    return Path(raw).expanduser() if raw else SAMPLE_DIR


def index_path(folder: Path) -> Path:
    """The index file for `folder`: one per absolute folder path."""
    digest = hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:16]
    return state_dir() / "knowledge" / f"{digest}.sqlite"


def _scan(folder: Path) -> dict[str, tuple[int, int]]:
    """{relative posix path: (mtime_ns, size)} of the indexable files, hidden ones skipped."""
    found: dict[str, tuple[int, int]] = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or not name.lower().endswith(SUFFIXES):
                continue
            path = Path(root, name)
            try:
                info = path.stat()
            except OSError:
                continue
            found[path.relative_to(folder).as_posix()] = (info.st_mtime_ns, info.st_size)
            if len(found) >= MAX_FILES:
                return found
    return found


def _read(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(MAX_FILE_BYTES)
    return data.decode("utf-8-sig", errors="replace")


def document_title(text: str, fallback: str) -> str:
    """The front-matter title, the first Markdown heading, a .txt file's short first line
    followed by a blank line, or `fallback` (the file name)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for index, line in enumerate(lines[1:40], start=1):
            if line.strip() in ("---", "..."):
                lines = lines[index + 1 :]
                break
            key, _, value = line.partition(":")
            if key.strip().lower() == "title" and value.strip():
                return value.strip().strip("\"'")
    for index, line in enumerate(lines[:200]):
        match = _ATX.match(line)
        if match:
            return match.group(1).strip()
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and _SETEXT.match(following) and not _SETEXT.match(line):
            return line.strip()
    if fallback.lower().endswith(".txt"):  # plain text: a short first line set off by a blank
        filled = [line.strip() for line in lines[:3]]
        if len(filled) >= 2 and filled[0] and len(filled[0]) <= 80 and not filled[1]:
            return filled[0]
    return fallback


# --- the index ---------------------------------------------------------------------------------


@contextmanager
def _connect(db_path: Path) -> Iterator[sqlite3.Connection]:
    db_path.parent.mkdir(parents=True, exist_ok=True)
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


def _sync(conn: sqlite3.Connection, folder: Path) -> None:
    """Bring the index up to date with the files (path + mtime + size) in one transaction."""
    files = _scan(folder)
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
                text = _read(folder / path)
            except OSError:
                continue  # vanished or unreadable: the next search sees it again
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


def _open_synced(conn: sqlite3.Connection, folder: Path) -> None:
    """Schema + sync, retried while another process holds the lock; a stale index is used if
    the lock never frees, an empty one is an error."""
    for attempt in range(3):
        try:
            _ensure_schema(conn, folder)
            _sync(conn, folder)
            return
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


# --- querying ----------------------------------------------------------------------------------


def query_terms(query: str) -> list[Term]:
    """Free text -> search terms; nothing in it is ever FTS5 syntax.

    Words of 3+ characters and runs of 3+ Chinese characters are trigram phrases; 2-character
    words and the 2-character pieces of Chinese runs are LIKE terms; single characters are used
    only when nothing else is left.
    """
    terms: dict[str, Term] = {}
    singles: list[str] = []

    def add(text: str, fts: bool) -> None:
        if text not in terms or fts:
            terms[text] = Term(text, fts)

    for word in _WORD.findall(query.casefold()):
        for run in _RUNS.findall(word):
            cjk = bool(_IS_CJK.match(run))
            if len(run) >= 3:
                add(run, fts=True)
                if cjk:
                    for i in range(len(run) - 1):
                        add(run[i : i + 2], fts=False)
            elif len(run) == 2:
                add(run, fts=False)
            else:
                singles.append(run)
    if not terms:
        for single in singles:
            add(single, fts=False)
    return list(terms.values())[:MAX_TERMS]


def _fts_phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _matching_ids(conn: sqlite3.Connection, term: Term) -> set[int]:
    if term.fts:
        sql = "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?"
        args: tuple[str, ...] = (_fts_phrase(term.text),)
    else:
        sql = "SELECT id FROM documents WHERE title LIKE ?1 ESCAPE '\\' OR body LIKE ?1 ESCAPE '\\'"
        args = (_like(term.text),)
    try:
        return {row[0] for row in conn.execute(sql, args)}
    except sqlite3.OperationalError:
        return set()


def _search(conn: sqlite3.Connection, terms: list[Term], limit: int) -> list[Hit]:
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    if not total:
        return []
    scores: dict[int, float] = {}
    matched: dict[int, list[tuple[float, Term]]] = {}
    for term in terms:
        ids = _matching_ids(conn, term)
        if not ids:
            continue
        rarity = math.log(1 + (total - len(ids) + 0.5) / (len(ids) + 0.5))
        for doc_id in ids:
            scores[doc_id] = scores.get(doc_id, 0.0) + rarity
            matched.setdefault(doc_id, []).append((rarity, term))
    if not scores:
        return []
    bm25: dict[int, float] = {}
    phrases = " OR ".join(_fts_phrase(t.text) for t in terms if t.fts)
    if phrases:
        rows = conn.execute(
            "SELECT rowid, bm25(documents_fts, 5.0, 1.0) FROM documents_fts "
            "WHERE documents_fts MATCH ?",
            (phrases,),
        )
        bm25 = dict(rows.fetchall())
    ranked = sorted(scores, key=lambda i: (-round(scores[i], 9), bm25.get(i, 0.0), i))[:limit]
    hits = []
    for doc_id in ranked:
        path, title, body = conn.execute(
            "SELECT path, title, body FROM documents WHERE id = ?", (doc_id,)
        ).fetchone()
        best = max(matched[doc_id], key=lambda m: (m[0], len(m[1].text)))[1]
        hits.append(Hit(path, title, excerpt(body, best.text, title), scores[doc_id]))
    return hits


def excerpt(body: str, term: str, title: str = "", width: int = EXCERPT_CHARS) -> str:
    """About `width` characters of `body` around the first occurrence of `term`, on one line;
    Markdown heading marks and a leading copy of the title are left out."""
    text = " ".join(_HEADING_MARK.sub("", body).split())
    if title and text.startswith(title) and len(text) > len(title):
        text = text[len(title) :].lstrip()
    at = text.casefold().find(term)
    if at < 0:
        at = 0
    start = max(0, at - width // 3)
    end = min(len(text), start + width)
    start = max(0, end - width)
    if start > 0 and not _IS_CJK.match(text[start]):
        space = text.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    if end < len(text) and not _IS_CJK.match(text[end - 1]):
        space = text.rfind(" ", at + len(term), end)
        end = space if space > 0 else end
    piece = text[start:end].strip()
    return f"{'…' if start > 0 else ''}{piece}{'…' if end < len(text) else ''}"


def search_knowledge(query: str, *, limit: int = RESULT_COUNT) -> str:
    """Search the configured folder; the compact observation the tool returns."""
    text = " ".join(query.split())
    if not text:
        raise ToolException("Give some words to search the knowledge base for.")
    if len(text) > MAX_QUERY_CHARS:
        raise ToolException(f"The search text is longer than {MAX_QUERY_CHARS} characters.")
    folder = corpus_dir()
    if not folder.is_dir():
        raise ToolException(
            f"Knowledge base folder {folder} does not exist; set REACT_AGENT_KB_DIR to a "
            f"folder of .md or .txt files."
        )
    terms = query_terms(text)
    if not terms:
        raise ToolException(f"The search text {text!r} has no words to search for.")
    db_path = index_path(folder)
    try:
        hits = _with_index(db_path, folder, terms, limit)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):
            raise ToolException(f"The knowledge index {db_path} failed: {exc}.") from None
        db_path.unlink(missing_ok=True)  # not a database (corrupt): rebuild it once
        hits = _with_index(db_path, folder, terms, limit)
    if not hits:
        return f"No documents in {folder} match {text!r}."
    entries = [
        f"{number}. {hit.path} — {hit.title}\n{hit.excerpt}"
        for number, hit in enumerate(hits, start=1)
    ]
    return "\n\n".join(entries)


def _with_index(db_path: Path, folder: Path, terms: list[Term], limit: int) -> list[Hit]:
    try:
        with _connect(db_path) as conn:
            _open_synced(conn, folder)
            return _search(conn, terms, limit)
    except OSError as exc:
        raise ToolException(f"Cannot open the knowledge index {db_path}: {exc}.") from None


class KnowledgeSearchInput(BaseModel):
    query: str = Field(
        description=(
            "Keywords to look for in the user's notes, e.g. 'checkpoint resume' or '天气查询'."
        )
    )


async def _asearch(query: str) -> str:
    return await asyncio.to_thread(search_knowledge, query)


knowledge_search = StructuredTool.from_function(
    func=search_knowledge,
    coroutine=_asearch,
    name="knowledge_search",
    description=(
        "Full-text search over the user's own notes and documents (Markdown and text files, "
        "English or Chinese). Use it first for questions about this project, the user's "
        "notes or anything they documented themselves. Pass a few distinctive keywords; "
        "returns the best matching files with their title and an excerpt."
    ),
    args_schema=KnowledgeSearchInput,
)
