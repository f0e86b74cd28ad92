"""Text rules of `knowledge_search`: query words to search terms, notes to sentences.

Kept apart from the SQL (`tools/knowledge_query.py`) because these are plain-text rules, tested
on their own and tuned for how small models phrase searches: whole questions ("How does the
agent resume after a crash?") and words in another form than the notes use ("agents", "stored").

- Query words: English stop words ("what", "how", "the", "does", "my notes"…) are dropped unless
  nothing else is left, and each word also brings its Snowball stem (PyStemmer: agents →
  agent, stored → store, resuming → resum). The index matches substrings (trigrams), so a stem
  also finds the longer forms of the word in the notes.
- Notes: the body is cut into sentences, one per list item, table row or sentence of a
  paragraph (wrapped lines joined), with Markdown heading marks, list bullets and bold marks
  left out, so the excerpt can be the sentence that answers rather than a window of text.
"""

from __future__ import annotations

import functools
import re
from typing import Any

_STOP_TEXT = """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing done during each few for from further get
    gets got had has have having he her here hers him his how i if in into is it its itself
    just let me more most my myself no nor not now of off on once only or other our ours out
    over own please she should so some such tell than that the their theirs them then
    there these they this those through to too under until up us very was we were what when
    where which while who whom why will with would you your yours
    according check find look notes search show
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[`*_]*[A-Z0-9])|(?<=[。！？；])(?!$)"
)


@functools.cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: the Snowball stemmers, compiled

    return Stemmer.Stemmer("english")


def stems(word: str) -> list[str]:
    """The Snowball (Porter 2) stem of a case-folded English word, when it differs from the
    word and is 3+ characters (a trigram can match it); searched as the beginning of longer
    forms: stored -> store, running -> run, agents -> agent."""
    if not word.isascii() or not word.isalpha() or len(word) < 4:
        return []
    stem = _stemmer().stemWord(word)
    return [stem] if stem != word and len(stem) >= 3 else []


def sentences(body: str, title: str = "") -> list[str]:
    """The sentences of a note, in order, each on one line; the title heading is left out."""
    return [sentence for sentence, _ in sections(body, title)]


def sections(body: str, title: str = "") -> list[tuple[str, str]]:
    """Each sentence of a note with the heading it stands under ("" before the first one).

    A heading is a Markdown heading, or in plain text a flush-left line followed by indented
    ones (`web_fetch refuses a URL.` over its explanation). The heading is the sentence's
    context: under "Settings", a line naming a variable answers "which setting…?" though it
    never says "setting" itself."""
    units: list[tuple[str, str]] = []
    paragraph: list[str] = []
    heading = ""
    flush_left = False  # the paragraph so far is one line, flush left, not a list item

    def flush() -> None:
        if paragraph:
            units.append((" ".join(paragraph), heading))
            paragraph.clear()

    lines = body.splitlines()
    if lines and lines[0].strip() == "---":  # front matter: not part of the text
        ends = [i for i, line in enumerate(lines[1:40], 1) if line.strip() in ("---", "...")]
        lines = lines[ends[0] + 1 :] if ends else lines
    in_fence = False
    for raw in lines:
        line = raw.strip()
        if _FENCE.match(raw):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            if line:
                units.append((line, heading))
            continue
        marked = _HEADING.match(raw)
        if not line or marked or _SETEXT.match(raw) or _TABLE_RULE.match(raw):
            flush()
            if marked and marked.group(1) and marked.group(1) != title:
                units.append((marked.group(1), heading))
                heading = marked.group(1)
            flush_left = False
            continue
        bullet = bool(_BULLET.match(raw) or line.startswith("|"))
        if flush_left and not bullet and raw[:1] in (" ", "\t"):
            heading = paragraph[0]  # a plain-text heading over an indented block
            flush()
        if bullet:
            flush()
            line = _BULLET.sub("", raw).strip().strip("|").strip()
        flush_left = not paragraph and not bullet and raw[:1] not in (" ", "\t")
        paragraph.append(line)
    flush()
    found: list[tuple[str, str]] = []
    for unit, context in units:
        unit = " ".join(unit.replace("**", "").split())
        if unit == title and not found:
            continue
        context = " ".join(context.replace("**", "").split())
        found.extend(
            (piece.strip(), context) for piece in _SENTENCE_END.split(unit) if piece.strip()
        )
    return found


_COUNTER = "[个次种天年条项位台分秒周月遍号点]"
_ASKS_A_NUMBER = re.compile(rf"\bhow (?:many|much)\b|多少|几{_COUNTER}", re.IGNORECASE)
_HOLDS_A_NUMBER = re.compile(
    r"(?<![\w-])\d+(?:\.\d+)?(?![\w-])|\b(?:one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve|twenty|thirty|hundred|thousand|once|twice)\b"
    rf"|[一二两三四五六七八九十百千万\d]+{_COUNTER}",
    re.IGNORECASE,
)


def asks_a_number(question: str) -> bool:
    """Whether the answer to `question` is a count or an amount ("how many…?", "重试几次？")."""
    return bool(_ASKS_A_NUMBER.search(question))


def holds_a_number(sentence: str) -> bool:
    """Whether `sentence` states a count or an amount: a number standing alone (not the 8 of
    UTF-8), a number word, or a Chinese numeral with its counter (三次, not the 一 of 统一)."""
    return bool(_HOLDS_A_NUMBER.search(sentence))
