"""Full-text search over a folder of the user's `.md` / `.txt` notes, with SQLite FTS5.

The folder is `REACT_AGENT_KB_DIR` (default: the small sample corpus shipped in
`tools/knowledge_base/`). This module is the tool: it checks the query, brings the folder's index
up to date and formats the hits. The parts live next to it, each with its own reasons:

- `tools/knowledge_files.py`: what counts as a document (regular files inside the folder only:
  no symlinks, FIFOs or devices; reading never blocks and never leaves the folder);
- `tools/knowledge_index.py`: the private SQLite FTS5 index under `$REACT_AGENT_STATE_DIR`,
  built on first use and re-synced before every search, safe with several processes;
- `tools/knowledge_query.py`: query text to terms (never FTS5 syntax), ranking and excerpts;
- `tools/knowledge_text.py`: stop words, simple stems and a note's sentences.

The observation is bounded: at most `RESULT_COUNT` hits, each with a shortened path and title
and an excerpt (the sentence that holds the most query words, one sentence per line, at most
about 300 + 240 characters), and the whole cut at `MAX_RESULT_CHARS` with a note.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools.knowledge_files import Skipped
from tools.knowledge_index import connect, index_path, open_synced
from tools.knowledge_query import Hit, Term, query_terms, search
from tools.knowledge_text import asks_a_number
from tools.support.settings import env_str

SAMPLE_DIR = Path(__file__).resolve().parent / "knowledge_base"
MAX_QUERY_CHARS = 500
RESULT_COUNT = 4
MAX_PATH_CHARS = 200
MAX_TITLE_CHARS = 120
MAX_RESULT_CHARS = 4000


def corpus_dir() -> Path:
    """`REACT_AGENT_KB_DIR`, or the shipped sample corpus."""
    raw = env_str("REACT_AGENT_KB_DIR", "")
    return Path(raw).expanduser() if raw else SAMPLE_DIR


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
    db_path, wants_number = index_path(folder), asks_a_number(text)
    try:
        hits, skipped = _with_index(db_path, folder, terms, limit, wants_number)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):
            raise ToolException(f"The knowledge index {db_path} failed: {exc}.") from None
        db_path.unlink(missing_ok=True)  # not a database (corrupt): rebuild it once
        hits, skipped = _with_index(db_path, folder, terms, limit, wants_number)
    note = skipped.sentence()
    if not hits:
        return f"No documents in {folder} match {text!r}." + (f"\n{note}" if note else "")
    entries = [
        f"[{number}] {_clip(hit.path, MAX_PATH_CHARS)} — {_clip(hit.title, MAX_TITLE_CHARS)}\n"
        f"{hit.excerpt}"
        for number, hit in enumerate(hits, start=1)
    ]
    result = "\n\n".join(entries)
    if len(result) > MAX_RESULT_CHARS:
        cut = f"\n[Cut: showing the first {MAX_RESULT_CHARS:,} of {len(result):,} characters.]"
        result = result[:MAX_RESULT_CHARS].rstrip() + cut
    return result + (f"\n\n{note}" if note else "")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _with_index(
    db_path: Path, folder: Path, terms: list[Term], limit: int, wants_number: bool
) -> tuple[list[Hit], Skipped]:
    try:
        with connect(db_path) as conn:
            skipped = open_synced(conn, folder)
            return search(conn, terms, limit, wants_number), skipped
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
