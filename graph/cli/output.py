"""What the command prints, made safe and shaped for where it goes.

Everything the CLI shows can come from a model, a tool, a stored checkpoint or the user, so no
dynamic text is ever parsed as Rich markup (Rich gets `Text` objects, never markup strings), and
characters that can hide or fake text on a terminal (control characters, DEL, C1 controls, ANSI
escapes, bidirectional overrides, zero-width marks) are shown as `\\u` escapes.

Tables are plain, aligned text when stdout is not a terminal (no wrapping, no truncation, one row
per line, so `grep` and `cut` see whole rows) and Rich tables only on a terminal. `--json`
prints JSON Lines. Rich itself is imported only when a terminal needs it: this module is on the
start-up path of every command.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

# Characters that move the cursor, recolour, reorder or hide text: C0 controls (ESC starts ANSI
# sequences), DEL, C1 controls, soft hyphen, Arabic letter mark, Mongolian vowel separator,
# zero-width space/joiners, LRM/RLM, line/paragraph separators, bidi embeddings, overrides and
# isolates, word joiner and invisible operators, BOM, interlinear annotations.
_OTHER = "\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb"
_UNSAFE = re.compile(f"[\x00-\x1f{_OTHER}]")
_UNSAFE_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER}]")  # keeps tab and newline


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible(text: object, *, multiline: bool = False) -> str:
    """`text` with every hiding character written as a `\\uXXXX` escape; with `multiline`,
    newlines and tabs stay as they are (answers and thoughts keep their layout)."""
    pattern = _UNSAFE_BUT_LINES if multiline else _UNSAFE
    return pattern.sub(_escape, str(text))


def visible_json(value: Any) -> str:
    """`value` as one line of JSON that parses back to exactly `value`, with hiding characters
    escaped (JSON `\\u` escapes, so the text is still the same JSON document)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # circular structures: show something rather than fail
        text = json.dumps(repr(value), ensure_ascii=False)
    return _UNSAFE.sub(_escape, text)


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
    """One compact JSON object per line (JSON Lines), non-ASCII kept readable."""
    target = stream or sys.stdout
    for record in records:
        target.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
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
