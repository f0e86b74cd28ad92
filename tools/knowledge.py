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
import re
import sqlite3
from pathlib import Path

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools._support import env_str
from tools.knowledge_index import connect, index_path, open_synced
from tools.knowledge_query import Hit, Term, best_sentence_score, query_terms, search
from tools.knowledge_text import asks_a_number

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
        hits = _with_index(db_path, folder, terms, limit, wants_number)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):
            raise ToolException(f"The knowledge index {db_path} failed: {exc}.") from None
        db_path.unlink(missing_ok=True)  # not a database (corrupt): rebuild it once
        hits = _with_index(db_path, folder, terms, limit, wants_number)
    if not hits:
        return f"No documents in {folder} match {text!r}."
    entries = [
        f"[{number}] {_clip(hit.path, MAX_PATH_CHARS)} — {_clip(hit.title, MAX_TITLE_CHARS)}\n"
        f"{hit.excerpt}"
        for number, hit in enumerate(hits, start=1)
    ]
    result = "\n\n".join(entries)
    if len(result) > MAX_RESULT_CHARS:
        note = f"\n[Cut: showing the first {MAX_RESULT_CHARS:,} of {len(result):,} characters.]"
        result = result[:MAX_RESULT_CHARS].rstrip() + note
    return result


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _with_index(
    db_path: Path, folder: Path, terms: list[Term], limit: int, wants_number: bool
) -> list[Hit]:
    try:
        with connect(db_path) as conn:
            open_synced(conn, folder)
            return search(conn, terms, limit, wants_number)
    except OSError as exc:
        raise ToolException(f"Cannot open the knowledge index {db_path}: {exc}.") from None


# A question whose best sentence in the notes scores this (about one rare word) is not about
# them; each further AFFINITY_SPAN counts fully. Measured on the eval's questions: notes
# questions mostly score 1.2 to 9, arithmetic and clock questions 0 to 1.3.
AFFINITY_FLOOR = 1.0
AFFINITY_SPAN = 2.0
# A question that names the notes is about them, whatever its words score.
_NAMES_THE_NOTES = re.compile(
    r"\b(?:my|our|your|the|these|those)\s+(?:[\w-]+\s+){0,2}?notes?\b"
    r"|\b(?:my|our) (?:docs|documentation)\b|\bknowledge[ _]?(?:base|search)\b"
    r"|笔记(?!本)|文档|知识库",
    re.IGNORECASE,
)


def notes_affinity(question: str) -> float:
    """How much `question` is about what the user's notes say, from 0 to 1: the score of the
    notes' sentence that holds its words best. Small models pick their examples with it
    (`graph.models.local.selection`): a question that never says "my notes" still gets the
    notes' examples when the notes answer it, and one that names them ("according to the
    weather note…") gets 1. Never raises; 0 when it cannot tell."""
    text = " ".join(question.split())[:MAX_QUERY_CHARS]
    if _NAMES_THE_NOTES.search(text):
        return 1.0
    folder = corpus_dir()
    terms = query_terms(text) if text else []
    if not terms or not folder.is_dir():
        return 0.0
    try:
        with connect(index_path(folder)) as conn:
            open_synced(conn, folder)
            best = best_sentence_score(conn, terms)
    except (OSError, sqlite3.Error):
        return 0.0
    return min(1.0, max(0.0, (best - AFFINITY_FLOOR) / AFFINITY_SPAN))


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


# Worked examples for small local models (graph.models.local.examples): the real output layout
# (hits headed "[n] path — title", then the excerpt), over notes that are not in the sample corpus.
# The query is the question's own words (a small model copies well and picks keywords badly; the
# search drops the filler words), and the answer copies the sentence that answers it.
EXAMPLES = [
    {
        "question": "When should I water the tomatoes? Search my notes.",
        "thought": "I search the notes for the question.",
        "input": {"query": "When should I water the tomatoes?"},
        "observation": (
            "[1] garden.md — Garden plan\nTomatoes are watered every morning at 7, and twice a "
            "day in July.\nThe roses need water twice a week.\n\n"
            "[2] shopping.txt — Shopping list\nSeeds for tomatoes, basil and mint."
        ),
        "answer": "Tomatoes are watered every morning at 7, and twice a day in July.",
    },
    {
        "question": "I restarted the staging server. Which port does it use? Check my notes.",
        "thought": "I search the notes for the question.",
        "input": {"query": "I restarted the staging server. Which port does it use?"},
        "observation": (
            "[1] servers.md — Servers\nThe staging server listens on port 8443.\n"
            "Production uses port 443 behind the load balancer."
        ),
        "answer": "The staging server listens on port 8443.",
    },
    {
        "question": "我的笔记里，周会是星期几？",
        "thought": "I search the notes for the question.",
        "input": {"query": "周会是星期几？"},
        "observation": (
            "[1] meetings-zh.md — 会议安排\n每周的周会在星期二上午十点，地点是三楼会议室。"
            "月度总结会在每个月最后一个星期五下午。"
        ),
        "answer": "每周的周会在星期二上午十点，地点是三楼会议室。",
    },
    {
        "question": "数据库多久备份一次？查一下我的笔记。",
        "thought": "I search the notes for the question.",
        "input": {"query": "数据库多久备份一次？"},
        "observation": (
            "[1] backup-zh.md — 备份策略\n数据库每天凌晨两点自动备份一次。\n备份文件保存三十天。"
        ),
        "answer": "数据库每天凌晨两点自动备份一次。",
    },
    {
        "question": "How many servers do we run according to my notes? Multiply that by 4.",
        "steps": [
            {
                "tool": "knowledge_search",
                "thought": "First I search the notes for the servers.",
                "input": {"query": "How many servers do we run?"},
                "observation": (
                    "[1] servers.md — Servers\nWe run three servers: staging, production and "
                    "backup.\nThe staging server listens on port 8443."
                ),
            },
            {
                "tool": "calculator",
                "thought": "We run three servers. Now I multiply 3 by 4.",
                "input": {"expression": "3 * 4"},
                "observation": "12",
            },
        ],
        "answer": "12",
    },
]

# The argument that takes the user's question (graph.models.local.copying): a small model that
# copied only part of a question of several sentences gets the whole question searched.
QUESTION_ARGUMENT = "query"

# How much a question is about this tool's contents (graph.models.local.examples.tool_affinity).
AFFINITY = notes_affinity
