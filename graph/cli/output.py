"""What the command prints, made safe and shaped for where it goes.

Everything the CLI shows can come from a model, a tool, a stored checkpoint or the user, so no
dynamic text is ever parsed as Rich markup (Rich gets `Text` objects, never markup strings), and
every character that can hide, fake or reorder text on a terminal is shown as a `\\u{XXXX}`
escape (`visible`), or a JSON `\\uXXXX` escape inside JSON strings (`json_text`: escaped only
inside strings, so every JSON document and line parses back to the value it was written from).
One predicate, `hides`, decides for all outputs: the approval prompt, step lines, answers,
tables, `show`, errors and JSON Lines.

Tables are plain, aligned text when stdout is not a terminal (no wrapping, no truncation, one row
per line, so `grep` and `cut` see whole rows) and Rich tables only on a terminal. `--json`
prints JSON Lines. Rich itself is imported only when a terminal needs it: this module is on the
start-up path of every command.
"""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import IO, Any

# Unicode categories that are never meant to be seen: controls (C0, DEL, C1), format characters
# (bidi overrides and isolates, zero-width space and joiners, soft hyphen, tags, BOM, ...),
# surrogates, private use, unassigned code points, line and paragraph separators, and enclosing
# marks (which draw over the character before them).
HIDING_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Me"})
# Visible-but-blank or invisible characters of other categories: the combining grapheme joiner,
# Hangul fillers (choseong, jungseong, compatibility, halfwidth), Khmer inherent vowels, and the
# braille blank, which renders as a space.
BLANK_FILLERS = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0})
HIDING_RANGES = (
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x20D0, 0x20FF),  # combining marks for symbols (overlays, enclosing circles, keycaps)
    (0xFE00, 0xFE0F),  # variation selectors
    (0xE0000, 0xE0FFF),  # tags (U+E0000..E007F), variation selectors supplement, reserved
)


@lru_cache(maxsize=4096)
def hides(char: str) -> bool:
    """Whether one character can hide, fake or reorder text when printed as it is."""
    code = ord(char)
    if 0x20 <= code < 0x7F:
        return False
    return (
        unicodedata.category(char) in HIDING_CATEGORIES
        or unicodedata.combining(char) == 1  # canonical combining class 1: overlays
        or code in BLANK_FILLERS
        or any(low <= code <= high for low, high in HIDING_RANGES)
    )


def visible(text: object, *, multiline: bool = False) -> str:
    """`text` with every hiding character written as a `\\u{XXXX}` escape; with `multiline`,
    newlines and tabs stay as they are (answers and thoughts keep their layout)."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    kept = "\n\t" if multiline else ""
    return "".join(f"\\u{{{ord(c):04X}}}" if hides(c) and c not in kept else c for c in text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # astral: a UTF-16 surrogate pair, as JSON writes it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_string(text: str) -> str:
    """One JSON string literal for `text`: non-ASCII kept readable, every hiding character a
    JSON `\\uXXXX` escape. Escaping here, inside one literal, is always sound: everything between
    its quotes is the string's own content or an ASCII escape `json.dumps` wrote."""
    literal = json.dumps(text, ensure_ascii=False)
    if literal.isascii() and "\x7f" not in literal:  # json.dumps escapes the other controls
        return literal
    return "".join(_json_escape(c) if hides(c) else c for c in literal)


def _key(key: object) -> str:
    """A mapping key as `json.dumps` writes it (a string; numbers, booleans and None as JSON
    spells them, anything else as its `str`)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return str(key)


def _encode(value: Any, indent: int | None, depth: int, open_ids: set[int]) -> str:
    """`value` as `json.dumps(value, ensure_ascii=False, default=str, indent=indent)` writes it,
    except that each string is written by `json_string`: its hiding characters are escaped
    and the document's own layout (newlines, spaces) is left alone."""
    if isinstance(value, str):
        return json_string(value)
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if not isinstance(value, (dict, list, tuple)):
        return json_string(str(value))  # json.dumps(default=str)
    if id(value) in open_ids:
        raise ValueError("Circular reference detected")  # as json.dumps says
    if not value:
        return "{}" if isinstance(value, dict) else "[]"
    open_ids.add(id(value))
    if isinstance(value, dict):
        parts = [
            f"{json_string(_key(k))}: {_encode(v, indent, depth + 1, open_ids)}"
            for k, v in value.items()
        ]
        start, end = "{", "}"
    else:
        parts = [_encode(item, indent, depth + 1, open_ids) for item in value]
        start, end = "[", "]"
    open_ids.discard(id(value))
    if indent is None:
        return start + ", ".join(parts) + end
    inner = "\n" + " " * (indent * (depth + 1))
    return start + inner + ("," + inner).join(parts) + "\n" + " " * (indent * depth) + end


def json_text(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON (non-ASCII kept readable) that parses back to `value`, with every hiding
    character escaped inside its strings, and only there: the layout of an indented document
    (its newlines) is the document's, not text to escape.

    The C encoder writes the common case; only a document that holds a hiding character in
    some string is written again, string by string (`_encode`)."""
    try:
        text: str | None = json.dumps(value, ensure_ascii=False, default=str, indent=indent)
    except TypeError:  # a key json.dumps refuses (a tuple, an object): written as its str
        text = None
    except ValueError:  # circular structures: show something rather than fail
        return json_string(repr(value))
    if text is not None and (
        (text.isascii() and "\x7f" not in text)  # json.dumps escapes every other ASCII control
        or not any(hides(c) for c in set(text) - {"\n"})  # a raw "\n" is only ever layout
    ):
        return text
    try:
        return _encode(value, indent, 0, set())
    except ValueError:
        return json_string(repr(value))


def visible_json(value: Any) -> str:
    """`value` as one line of JSON that parses back to exactly `value`, with hiding characters
    escaped (JSON `\\u` escapes, so the text is still the same JSON document)."""
    return json_text(value)


def is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _colour(stream: IO[str]) -> bool:
    return (
        is_terminal(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    )


def say(message: str, *, stream: IO[str] | None = None) -> None:
    """One line on stderr (or `stream`), hiding characters escaped."""
    target = stream or sys.stderr
    target.write(visible(message) + "\n")
    target.flush()


def error(message: str) -> None:
    """`error: <message>` on stderr; red on a colour terminal."""
    label = "\x1b[1;31merror:\x1b[0m" if _colour(sys.stderr) else "error:"
    sys.stderr.write(f"{label} {visible(message)}\n")
    sys.stderr.flush()


def json_lines(records: Iterable[dict[str, Any]], stream: IO[str] | None = None) -> None:
    """One compact JSON object per line (JSON Lines), non-ASCII kept readable, hiding characters
    and line separators (U+2028, U+2029, U+0085) escaped."""
    target = stream or sys.stdout
    for record in records:
        target.write(json_text(record) + "\n")
    target.flush()


def table(
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    title: str = "",
    right: Sequence[str] = (),
    stream: IO[str] | None = None,
) -> None:
    """Rows under a header: a Rich table on a terminal, aligned plain text otherwise.

    Plain rows are never wrapped or cut: each cell is one line (hiding characters, newlines
    included, escaped) and the last column runs to the end of the line.
    """
    target = stream or sys.stdout
    cells = [[visible(cell) for cell in row] for row in rows]
    if is_terminal(target):
        _rich_table(columns, cells, title, right, target)
        return
    widths = [len(name) for name in columns]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    last = len(columns) - 1
    for row in [list(columns), *cells]:
        parts = []
        for index, (name, cell) in enumerate(zip(columns, row, strict=True)):
            if index == last:
                parts.append(cell)
            elif name in right:
                parts.append(cell.rjust(widths[index]))
            else:
                parts.append(cell.ljust(widths[index]))
        target.write("  ".join(parts).rstrip() + "\n")
    target.flush()


def _rich_table(
    columns: Sequence[str],
    cells: list[list[str]],
    title: str,
    right: Sequence[str],
    target: IO[str],
) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=target, highlight=False, emoji=False, markup=False)
    grid = Table(title=Text(visible(title)) if title else None, expand=False)
    for index, name in enumerate(columns):
        grid.add_column(
            Text(name),
            justify="right" if name in right else "left",
            overflow="fold",
            ratio=1 if index == len(columns) - 1 else None,
            no_wrap=index < len(columns) - 1,
        )
    for row in cells:
        grid.add_row(*(Text(cell) for cell in row))
    console.print(grid)
