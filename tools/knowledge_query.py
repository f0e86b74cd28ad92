"""Searching the knowledge index: free text to terms, terms to ranked hits with excerpts.

Kept apart from the index (`tools/knowledge_index.py`, which writes) because this part only
reads, and its rules are the ones worth testing on their own: nothing in the query text is ever
FTS5 syntax.

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

import math
import re
import sqlite3
from dataclasses import dataclass

MAX_TERMS = 40
EXCERPT_CHARS = 240

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(r"[^\W_]+")
_RUNS = re.compile(f"[{_CJK}]+|[^{_CJK}]+")
_IS_CJK = re.compile(f"[{_CJK}]")
_HEADING_MARK = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)


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


def search(conn: sqlite3.Connection, terms: list[Term], limit: int) -> list[Hit]:
    """The best `limit` documents for `terms`, best first."""
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
