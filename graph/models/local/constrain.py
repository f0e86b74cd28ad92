"""Grammars built per question: what the embedded model may write at each point of a step.

Nothing here repairs what the model wrote; it only narrows what it can write:

- the choice: one of the offered tools' names, or `none` (answer directly);
- an arithmetic argument: expressions over the numbers the question holds (in digits, in
  English words read by `text2num`, in Chinese read by `cn2an`) and a few constants every
  percentage, halving or unit conversion needs, with + - * / ** and parentheses (no `%`:
  in a question it means percent, and read as modulo it misled the model);
- a copied argument (a place, a title, a URL): a piece of the question of a few words;
- an answer after an observation: one of the lines it may quote.

All GBNF for llama.cpp; greedy decoding under the grammar is the model's most likely option.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from graph.protocols.text.gbnf import literal, one_line

# Constants an expression may use besides the question's numbers: 100 (percent), 2 (half,
# double, square), 60, 24, 7, 12, 1000 (minutes, hours, days, months, units). Chosen from what
# arithmetic in everyday wording needs, not from any question set.
CONSTANTS = ("2", "7", "12", "24", "60", "100", "1000")
MAX_PIECE_WORDS = 5  # a place or a title is a few words
MAX_ARITHMETIC_WORDS = 12  # "six thousand and eighty plus four hundred and seventy-one"
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"[^\s,;:!?。，；：！？、\"“”‘’()（）]+")
_BRACKETED = re.compile(r"[^\s,;:!?。，；：！？、\"“”‘’（）]+")  # a word, its round brackets kept
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_EDGE = ".'’"


@lru_cache(maxsize=256)
def question_numbers(question: str) -> tuple[str, ...]:
    """The numbers a question states, as digits, in order of appearance, without repeats: its
    digits, and its numbers in words as the calculator reads them (`read_numbers`)."""
    from tools.math_words import read_numbers

    text = _THOUSANDS.sub("", question)
    readings = [text, read_numbers(text.casefold()) or ""]
    found = [n for reading in readings for n in _DIGITS.findall(reading)]
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=256)
def arithmetic_pieces(
    question: str, reads: Callable[[str], str | None] | None = None
) -> tuple[str, ...]:
    """Pieces of the question of up to `MAX_ARITHMETIC_WORDS` words that state arithmetic
    ("15 percent of 80", "3 * (2.4 + 1.1)", "6000 / 8" for "6,000 / 8"); cached, since each
    reading is a calculation. With what the tool `reads` in a piece (None: it refuses it, as
    "40 miles"), only pieces it reads, each stating the arithmetic once: not one inside a longer
    piece read otherwise ("sixty divided by three" in "two hundred sixty divided by three"),
    nor one holding a shorter piece read the same ("What is 38 * 12" holds "38 * 12")."""
    text = _THOUSANDS.sub("", question)
    pieces = [p for p in question_pieces(text, MAX_ARITHMETIC_WORDS, True) if _arithmetic_piece(p)]
    if reads is None:
        return tuple(pieces)
    values = {}
    for piece in pieces:
        with contextlib.suppress(Exception):  # a tool's reading is advice: it never fails a step
            value = reads(piece)
            if value is not None:
                values[piece] = value
    return tuple(
        piece
        for piece, value in values.items()
        if not any(
            (_holds(longer, piece) and values[longer] != value)
            or (_holds(piece, longer) and values[longer] == value)
            for longer in values
        )
    )


def arithmetic_grammar(question: str, reads: Callable[[str], str | None] | None = None) -> str:
    """What an arithmetic argument may be. When the question states its arithmetic in words
    the tool reads (`arithmetic_pieces`), one of those pieces: a small model asked for symbols
    copies the first number and guesses the rest ("841 * 2" for the square root of 841).
    Otherwise an expression over the question's numbers and `CONSTANTS` with at least one
    operation (a lone number calculates nothing), or a piece of the question that holds a
    number."""
    pieces = arithmetic_pieces(question, reads)
    copied = " | ".join(literal(p) for p in pieces)
    if copied and reads is not None:
        return f"root ::= {copied}\n"
    numbers = dict.fromkeys([*question_numbers(question), *CONSTANTS])
    number = " | ".join(literal(n) for n in sorted(numbers, key=len, reverse=True))
    return "\n".join(
        [
            "root ::= " + ("expression | copied" if copied else "expression"),
            'expression ::= term (" " op " " term){1,6} | "sqrt(" expr ")"',
            *([f"copied ::= {copied}"] if copied else []),
            'expr ::= term (" " op " " term){0,6}',
            'term ::= number | "(" expr ")" | "sqrt(" expr ")"',
            'op ::= "+" | "-" | "*" | "/" | "**" | "^"',
            f"number ::= {number}",
            "",
        ]
    )


def _holds(longer: str, piece: str) -> bool:
    """Whether `longer` holds `piece`, word for word ("York" is in "New York", "2 - 1" in
    "(2 - 1) * 3"; "Nice" is not in "Venice"; in Chinese, any run of characters)."""
    if piece == longer:
        return False
    inner, outer = (" ".join(re.sub(r"([()])", r" \1 ", t).split()) for t in (piece, longer))
    return f" {inner} " in f" {outer} " or (_CJK.match(piece) is not None and piece in longer)


def outermost(pieces: Sequence[str]) -> list[str]:
    """The pieces that no longer one of them holds (`_holds`)."""
    return [p for p in pieces if not any(_holds(longer, p) for longer in pieces)]


@lru_cache(maxsize=256)
def _arithmetic_piece(piece: str) -> bool:
    """A piece that may state arithmetic: two numbers, or a number and other words."""
    numbers = question_numbers(piece)
    wordy = " " in piece or (_CJK.search(piece) is not None and len(piece) >= 3)
    return len(numbers) >= 2 or (len(numbers) == 1 and wordy)


@lru_cache(maxsize=256)
def question_pieces(
    question: str, max_words: int = MAX_PIECE_WORDS, brackets: bool = False
) -> list[str]:
    """Pieces of the question a copied argument may be: runs of up to `max_words` words
    (edge punctuation off), and pieces of up to twice as many characters of Chinese text.
    With `brackets`, round brackets stay in a piece that closes every one it opens."""
    words = [
        w.strip(_EDGE) for w in (_BRACKETED if brackets else _WORD).findall(one_line(question))
    ]
    words = [w for w in words if w]
    pieces: list[str] = []
    for start in range(len(words)):
        for end in range(start + 1, min(start + max_words, len(words)) + 1):
            piece = " ".join(words[start:end])
            if brackets:
                piece = _closed(piece) or _closed(piece.strip("()")) or ""
            if piece:
                pieces.append(piece)
    for run in _CJK.findall(question):
        for size in range(1, min(max_words * 2, len(run)) + 1):
            pieces += [run[at : at + size] for at in range(len(run) - size + 1)]
    return list(dict.fromkeys(pieces))


def _closed(piece: str) -> str | None:
    """The piece if its brackets pair up, else None."""
    depth = 0
    for char in piece:
        depth += (char == "(") - (char == ")")
        if depth < 0:
            return None
    return piece if depth == 0 else None


def piece_grammar(
    question: str, accepts: Callable[[str], bool] | None = None, default: str | None = None
) -> str | None:
    """One piece of the question: of those the tool `accepts` when it says, the whole ones
    (`outermost`: "New York", not its "York"), and when it accepts none, the argument's
    `default` if it has one (the clock's UTC for a question that names no place), else any
    piece. None when the question has no words."""
    pieces = question_pieces(question)
    if accepts is not None:
        pieces = accepted_pieces(question, accepts) or ([default] if default else pieces)
    if not pieces:
        return None
    return "root ::= " + " | ".join(literal(p) for p in pieces) + "\n"


def accepted_pieces(question: str, accepts: Callable[[str], bool]) -> list[str]:
    """The pieces of the question the tool accepts, the whole ones (`outermost`). A sentence's
    first word is capitalised whatever it is, so it is judged as if written in lower case
    ("Tell me what time it is in Chile": Tell is a town, "tell" names nothing)."""
    words = [w.strip(_EDGE) for w in _WORD.findall(one_line(question))]
    first = next((w for w in words if w), "")

    def judged(piece: str) -> bool:
        if piece == first and piece.isalpha() and piece.istitle():
            piece = piece.lower()
        try:
            return bool(accepts(piece))
        except Exception:  # a tool's check is advice: it never fails the step
            return False

    return outermost([p for p in question_pieces(question) if judged(p)])


def choice_grammar(names: Sequence[str], *, after_result: bool = False) -> str:
    """The step's first decision: a tool by name, or none. Before any result the record says
    `Tool: <name>` or `Tool: none`; after a result, `Tool: <name>` or `Answer:`."""
    tools = " | ".join(literal(n) for n in names)
    if after_result:
        return f'root ::= "Tool: " ({tools}) | "Answer:"\n'
    return f'root ::= {tools} | "none"\n'


def quote_grammar(quotes: Sequence[str]) -> str:
    """The answer as one of these lines, verbatim."""
    return "root ::= " + " | ".join(literal(q) for q in dict.fromkeys(quotes)) + "\n"
