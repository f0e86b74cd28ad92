"""Searching the knowledge index: free text to terms, terms to ranked hits with excerpts.

Kept apart from the index (`tools/knowledge_index.py`, which writes) because this part only
reads, and its rules are the ones worth testing on their own: nothing in the query text is ever
FTS5 syntax.

Matching: the FTS5 table uses the `trigram` tokenizer, so any substring of three or more
characters matches in any script (CJK included). Query text is cut into words, never passed to
FTS5 as syntax: every term is a double-quoted phrase. English stop words are dropped and each
English word also searches for its Snowball stem (`tools/knowledge_text.py`: agents → agent), so
a question phrased as a sentence still finds the note; an identifier such as REACT_AGENT_KB_DIR
or a hyphenated word such as "check-in" is searched whole as well as word by word. Terms of
fewer than three characters (the two-character Chinese word 北京, 'AI') cannot match trigrams
and fall back to `LIKE '%term%'` over the stored text; a run of Chinese characters longer than
two also counts each of its two-character pieces that way, since Chinese words are mostly two
characters long and questions rarely repeat a document's exact phrase.

Ranking: a shortlist of documents by how many distinct query words they contain (a word found
only through a stem counts less), then by the summed rarity (BM25's IDF) of
those words, ties broken by FTS5's `bm25()` (title weighted above body). Then, in Python, each
document's best sentence: the one with the most query words, each weighed by its rarity among
the sentences (`RARITY_SHARE` of its weight: "calculator" says more than "tool"), where a match
inside another word counts little ("let" in "deleted"), and the words of the heading it stands
under count half.
Documents come in the order of their best sentences, and the excerpt is that sentence, then
the next one if it is short.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field

from tools.knowledge_text import STOP_WORDS, holds_a_number, sections, stems

MAX_TERMS = 40
EXCERPT_CHARS = 240
MAX_SENTENCE_CHARS = 300
NUMBER_ANSWER = 1.0  # a sentence with a number, for a "how many" question (`excerpt_and_score`)
LABEL_WORDS = 3  # a "sentence" this short is a label for the next one (see `_is_label`)
LABEL_CJK_CHARS = 6
STEM_WEIGHT = 0.75  # a word found only through one of its stems
TABLE_ROW_WEIGHT = 0.8  # a sentence that is a table row
RARITY_SHARE = 0.7  # of a word's weight in a sentence that depends on its rarity there
CONTEXT_WEIGHT = 0.5  # a query word found only in the heading a sentence stands under

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(r"[^\W_]+")
_TABLE_ROW = re.compile(r"\S \| \S")
_IDENTIFIER = re.compile(r"[^\W_]+(?:_[^\W_]+)+")
_COMPOUND = re.compile(r"[^\W_]+(?:-[^\W_]+)+")  # check-in, wi-fi, x-ray
_RUNS = re.compile(f"[{_CJK}]+|[^{_CJK}]+")
_IS_CJK = re.compile(f"[{_CJK}]")
_INNER = re.compile(r"[^\W]")  # a letter, digit or underscore: inside a word
SHORTLIST = 3  # times the limit: documents whose sentences are scored for the final order


@dataclass(frozen=True)
class Term:
    text: str  # case-folded
    fts: bool  # True: an FTS5 trigram phrase; False: LIKE '%text%'
    word: str = field(default="", compare=False)  # the query word it stands for
    stem: bool = field(default=False, compare=False)  # a stem of `word`, not the word itself

    @property
    def weight(self) -> float:
        """How much finding this term counts toward finding its query word."""
        return STEM_WEIGHT if self.stem else 1.0

    @property
    def key(self) -> str:
        return self.word or self.text


@dataclass(frozen=True)
class Hit:
    path: str
    title: str
    excerpt: str
    score: float


def query_terms(query: str) -> list[Term]:
    """Free text -> search terms; nothing in it is ever FTS5 syntax.

    English stop words are left out (unless nothing else is left); words of 3+ characters and
    runs of 3+ Chinese characters are trigram phrases, followed by the word's stems;
    2-character words and the 2-character pieces of Chinese runs are LIKE terms; single
    characters are used only when nothing else is left.
    """
    terms: dict[str, Term] = {}
    singles: list[str] = []

    def add(text: str, fts: bool, word: str = "", stem: bool = False) -> None:
        if text not in terms:
            terms[text] = Term(text, fts, word or text, stem)

    folded = query.casefold()
    runs = [run for word in _WORD.findall(folded) for run in _RUNS.findall(word)]
    runs = [run for run in runs if _IS_CJK.match(run) or run not in STOP_WORDS] or runs
    for run in runs:
        cjk = bool(_IS_CJK.match(run))
        if len(run) >= 3:
            add(run, fts=True)
            if cjk:
                for i in range(len(run) - 1):
                    add(run[i : i + 2], fts=False)
            for stem in stems(run):
                add(stem, fts=len(stem) >= 3, word=run, stem=True)
        elif len(run) == 2:
            add(run, fts=False)
        else:
            singles.append(run)
    for identifier in _IDENTIFIER.findall(folded):  # REACT_AGENT_KB_DIR as a whole, too
        add(identifier, fts=True)
    for compound in _COMPOUND.findall(folded):  # a "check-in" is not any check: whole, too
        if len(compound) >= 3:
            add(compound, fts=True)
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


def search(
    conn: sqlite3.Connection, terms: list[Term], limit: int, wants_number: bool = False
) -> list[Hit]:
    """The best `limit` documents for `terms`, best first; `wants_number`: the question asks
    how many or how much (see `excerpt_and_score`)."""
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    if not total:
        return []
    # per document, per query word: (weight, rarity) of its best matching form
    found: dict[int, dict[str, tuple[float, float]]] = {}
    for term in terms:
        ids = _matching_ids(conn, term)
        if not ids:
            continue
        rarity = math.log(1 + (total - len(ids) + 0.5) / (len(ids) + 0.5))
        weight = term.weight
        for doc_id in ids:
            words = found.setdefault(doc_id, {})
            words[term.key] = max(words.get(term.key, (0.0, 0.0)), (weight, rarity))
    if not found:
        return []
    scores = {
        doc_id: (sum(w for w, _ in words.values()), sum(r for _, r in words.values()))
        for doc_id, words in found.items()
    }
    bm25: dict[int, float] = {}
    phrases = " OR ".join(_fts_phrase(t.text) for t in terms if t.fts)
    if phrases:
        rows = conn.execute(
            "SELECT rowid, bm25(documents_fts, 5.0, 1.0) FROM documents_fts "
            "WHERE documents_fts MATCH ?",
            (phrases,),
        )
        bm25 = dict(rows.fetchall())
    ranked = sorted(
        scores,
        key=lambda i: (-round(scores[i][0], 6), -round(scores[i][1], 9), bm25.get(i, 0.0), i),
    )[: limit * SHORTLIST]
    rows = [
        conn.execute("SELECT path, title, body FROM documents WHERE id = ?", (i,)).fetchone()
        for i in ranked
    ]
    rarity = sentence_rarities([sections(body, title) for _, title, body in rows], terms)
    hits = []
    for order, (path, title, body) in enumerate(rows):
        text, best = excerpt_and_score(body, terms, title, rarity, wants_number=wants_number)
        words = round(_sentence_score(f"{title}\n{body}", terms, {}), 6)
        hits.append((-words, -best, order, Hit(path, title, text, best)))
    # the document whose best sentence answers best first; then the one holding more query
    # words, weighed as in a sentence (the "react" inside REACT_AGENT_TOOLS counts less than
    # the word ReAct)
    hits.sort(key=lambda h: (h[1], h[0], h[2]))
    return [hit for *_, hit in hits[:limit]]


def best_sentence_score(conn: sqlite3.Connection, terms: list[Term]) -> float:
    """The score of the one sentence in all the notes that holds the query's words best
    (weighed as in the excerpt, by rarity among the notes' sentences, headings aside)."""
    ids = set().union(*(_matching_ids(conn, term) for term in terms)) if terms else set()
    notes = []
    for doc_id in sorted(ids):
        title, body = conn.execute(
            "SELECT title, body FROM documents WHERE id = ?", (doc_id,)
        ).fetchone()
        notes.append(sections(body, title))
    rarity = sentence_rarities(notes, terms)
    return max(
        (_sentence_score(unit, terms, rarity) for note in notes for unit, _ in note), default=0.0
    )


def _sentence_score(sentence: str, terms: list[Term], rarities: dict[str, float]) -> float:
    """How many query words `sentence` holds: a stem counts less, and so does a match inside
    a longer word or identifier (the "agent" of REACT_AGENT_TOOLS), and a word common among
    the sentences (`rarities`, from `sentence_rarities`; absent: as rare as can be). A table
    row counts less than a sentence with as many words: a row is a fragment (`name | what it
    does`), and the sentence the question was asked about is usually the prose explaining it."""
    folded = sentence.casefold()
    words: dict[str, float] = {}
    for term in terms:
        at = folded.find(term.text)
        if at < 0:
            continue
        weight = term.weight
        if not _IS_CJK.match(term.text):
            starts = [m.start() for m in re.finditer(re.escape(term.text), folded)]
            prefix = term.stem  # meant to begin longer forms: save → saved
            weight *= max(_placement(folded, i, len(term.text), prefix) for i in starts)
        weight *= 1 - RARITY_SHARE + RARITY_SHARE * rarities.get(term.key, 1.0)
        words[term.key] = max(words.get(term.key, 0.0), weight)
    return sum(words.values()) * (TABLE_ROW_WEIGHT if _TABLE_ROW.search(sentence) else 1.0)


def sentence_rarities(notes: list[list[tuple[str, str]]], terms: list[Term]) -> dict[str, float]:
    """Per query word, how rare it is among the sentences of these notes, from 0 (in every
    one) to 1 (in one only): IDF at the scale of the answer, a sentence, normalised."""
    units = [unit.casefold() for note in notes for unit, _ in note]
    if len(units) < 2:
        return {}
    holding: dict[str, int] = {}
    for unit in units:
        for key in {t.key for t in terms if t.text in unit}:
            holding[key] = holding.get(key, 0) + 1
    top = math.log(len(units))
    return {key: math.log(len(units) / n) / top for key, n in holding.items()}


def _placement(folded: str, at: int, length: int, stem: bool) -> float:
    """How much a match at `at` counts: a whole word 1; a word's beginning 0.9 (a stem: 1, a
    stem is meant to begin longer forms); a piece of an identifier after `_` 0.5 (the "tools"
    of REACT_AGENT_TOOLS); inside a word 0.1 (the "let" of "deleted", the "set" of "reset")."""
    before = folded[at - 1] if at > 0 else " "
    if before == "_":
        return 0.5
    if _INNER.match(before):
        return 0.1
    whole = not _INNER.match(folded[at + length : at + length + 1])
    return 1.0 if whole or stem else 0.9


def _context_score(sentence: str, heading: str, terms: list[Term]) -> float:
    """What the heading a sentence stands under adds: its query words the sentence lacks, at
    `CONTEXT_WEIGHT` ("Which setting…?" and a line under "Settings" that names a variable)."""
    if not heading or heading == sentence:
        return 0.0
    alone = _sentence_score(sentence, terms, {})
    return CONTEXT_WEIGHT * max(_sentence_score(f"{sentence}\n{heading}", terms, {}) - alone, 0.0)


def excerpt_and_score(
    body: str,
    terms: list[Term],
    title: str = "",
    rarities: dict[str, float] | None = None,
    width: int = EXCERPT_CHARS,
    wants_number: bool = False,
) -> tuple[str, float]:
    """The sentence of `body` with the most query words (ties: the one whose words are rarer
    in this note, then the earlier one; a heading stands for the sentence under it), then the
    sentence after it if the first is short; one
    sentence per line, each cut to about `MAX_SENTENCE_CHARS` around its first match. The title
    heading is left out.

    Rarer in the note: in a note about weather, 天气 is in every other sentence and says little
    about which one answers "天气工具默认用哪个数据源？"; 默认 ("default") is in one.

    `wants_number`: the question asks how many or how much, and a sentence that states a
    number gains `NUMBER_ANSWER` ("The agent ships six tools." over "Tool errors … come back",
    for "how many tools does the agent come with?")."""
    placed = sections(body, title) or [(" ".join(body.split()), "")]
    units = [unit for unit, _ in placed]
    holds = [{t.key for t in terms if t.text in unit.casefold()} for unit in units]
    counts = Counter(key for keys in holds for key in keys)
    scores = [
        _sentence_score(unit, terms, rarities or {})
        + _context_score(unit, heading, terms)
        + sum(math.log(len(units) / counts[key]) / 10 for key in keys)
        + (NUMBER_ANSWER if wants_number and keys and holds_a_number(unit) else 0.0)
        for (unit, heading), keys in zip(placed, holds, strict=True)
    ]
    best = max(range(len(units)), key=lambda i: (scores[i], -i))
    shown = best
    while _is_heading(placed, shown):  # "## Settings" over "### Folder" over the sentence
        shown += 1
    first = units[shown]
    if _is_label(first) and shown + 1 < len(units) and placed[shown + 1][1] == placed[shown][1]:
        shown += 1  # "Native tool calls." leads its sentence on one line
        first = f"{first} {units[shown]}"
    lines = [_clip_around(first, terms, MAX_SENTENCE_CHARS)]
    if len(lines[0]) < width // 2 and shown + 1 < len(units):
        lines.append(_clip_around(units[shown + 1], terms, width))
    return "\n".join(line for line in lines if line), scores[best]


def _is_heading(placed: list[tuple[str, str]], at: int) -> bool:
    """Whether the unit at `at` is a heading with text under it. A heading names what the
    text under it answers, it is not the answer: a small model copies the excerpt's first
    line, and "Settings" or "knowledge_search finds nothing." answered nothing."""
    return at + 1 < len(placed) and placed[at + 1][1] == placed[at][0]


def _is_label(unit: str) -> bool:
    """A few words that name what follows ("Native tool calls.", a list item's bold lead-in):
    shown with the sentence after it, never alone as the line a small model copies."""
    if _IS_CJK.search(unit):
        return len(unit) <= LABEL_CJK_CHARS
    return len(unit.split()) <= LABEL_WORDS


def excerpt(body: str, terms: list[Term], title: str = "") -> str:
    """The excerpt alone (see `excerpt_and_score`)."""
    return excerpt_and_score(body, terms, title)[0]


def _clip_around(text: str, terms: list[Term], width: int) -> str:
    """`text` if it fits in `width` characters, else about `width` characters around the first
    match of the longest matching term, with "…" where it was cut."""
    if len(text) <= width:
        return text
    folded = text.casefold()
    matching = sorted((t.text for t in terms if t.text in folded), key=len, reverse=True)
    at = folded.find(matching[0]) if matching else 0
    length = len(matching[0]) if matching else 0
    start = max(0, at - width // 3)
    end = min(len(text), start + width)
    start = max(0, end - width)
    if start > 0 and not _IS_CJK.match(text[start]):
        space = text.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    if end < len(text) and not _IS_CJK.match(text[end - 1]):
        space = text.rfind(" ", at + length, end)
        end = space if space > 0 else end
    piece = text[start:end].strip()
    return f"{'…' if start > 0 else ''}{piece}{'…' if end < len(text) else ''}"
