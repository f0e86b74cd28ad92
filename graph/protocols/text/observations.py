"""How an observation is laid out for a small model, and which of its lines an answer may quote.

- The embedded model's prompt shows every observation as `observation_text`: one sentence per
  line (a small model that starts copying a line ends where the sentence ends), no blank lines
  (a blank line ends a record), bounded.
- Quoted answers (the `quoted_answers` setting, on for the embedded model): right after an
  observation, the Final Answer may only be its first line as the prompt showed it
  (`quotable_lines`). Asked to answer from a search result, a 270M model paraphrased it into
  something false or copied a line of the wrong note. The model still decides whether to
  answer or act again.

Pure functions: `grammar.py` turns the lines into alternatives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

QUOTED_THOUGHT = "I have the answer."  # before a quoted answer, in the examples and when forced
OBSERVATION_CHARS = 700  # of one observation in the prompt (example or real)
QUOTE_CHARS = 300  # of a quoted answer: the answer line must fit in the embedded model's step

# Where a sentence ends, and where a list item begins in text a tool flattened to one line.
_SENTENCE_END = re.compile(
    r"(?<=[.!?;])\s+(?=[A-Z0-9`*\"'(])|(?<=[。！？；])|(?<=[.!?;)…])\s+-\s+(?=\S)"
)
_HIT_NUMBER = re.compile(r"\d{1,3}\.")
_HEADING = re.compile(r"\[\d{1,3}\] ")  # "[1] notes.md — Title": which hit, not what it says
_WORD = re.compile(r"\w")
_BULLET = re.compile(r"^[-*•]\s+")
_FIELD = re.compile(r"[A-Z][A-Za-z ]{0,20}: (.+)")


def observation_text(text: str, limit: int = OBSERVATION_CHARS) -> str:
    """An observation as the prompt shows it: one sentence per line, no blank lines, at most
    `limit` characters (the cut marked with " …")."""
    lines: list[str] = []
    for line in str(text).replace("\r\n", "\n").split("\n"):
        if _HEADING.match(line.strip()):  # "[1] U.S. Army (url)": one heading, not sentences
            lines.append(line.strip())
            continue
        parts = [part.strip() for part in _SENTENCE_END.split(line.strip()) if part.strip()]
        for part in parts:
            if lines and _HIT_NUMBER.fullmatch(lines[-1]) and parts[0] is not part:
                lines[-1] = f"{lines[-1]} {part}"  # "1." numbers a hit: not a sentence
            else:
                lines.append(part)
    body = "\n".join(lines)
    if len(body) > limit:
        body = body[:limit].rstrip() + " …"
    return body or "(empty)"


def quotable_lines(observations: Iterable[str]) -> list[str]:
    """The lines a quoted answer may be: of each observation, its first line that says
    something, as the prompt shows it.

    Only the first: the tools put the answer there, and asked to choose among a few lines, a
    270M model chose the wrong one more often than not. Skipped on the way: a hit's heading
    (`[1] notes.md — Title` names a source), a header of `Key: value` lines (and a line
    repeating one of its values), bullets, lines with no word or wholly in parentheses, the
    cut mark, code fences, lines starting with markdown emphasis (the reader drops a leading
    `**`). A quote is one line, at most `QUOTE_CHARS`; none worth quoting: the answer is free.
    """
    found: list[str] = []
    for observation in observations:
        fields, body = _header(str(observation))
        if not body.strip():
            continue
        for line in observation_text(body).split("\n"):
            line = " ".join(_BULLET.sub("", line.removesuffix(" …")).split())[:QUOTE_CHARS].rstrip()
            if _quotable(line) and line not in fields:
                if line not in found:
                    found.append(line)
                break
    return found


def _header(text: str) -> tuple[set[str], str]:
    """A leading block of `Key: value` lines ended by a blank line (web_fetch's `Title:` and
    `URL:`) is about the result, not its content: its values, and the text after it. A page's
    first line often repeats its title, so a line equal to a value is not quoted either."""
    head, blank, rest = text.strip().partition("\n\n")
    lines = head.split("\n")
    if blank and all(_FIELD.match(line) for line in lines):
        return {_FIELD.match(line).group(1).strip() for line in lines}, rest
    return set(), text


def _quotable(line: str) -> bool:
    return (
        bool(_WORD.search(line))
        and not line.startswith(("*", "_", "```", "~~~"))
        and not (line.startswith("(") and line.endswith(")"))  # "(no summary)", an aside
        and not _HEADING.match(line)
    )
