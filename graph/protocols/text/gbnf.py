"""Writing GBNF text: string literals, bounded repetition, one-line quotes.

The small pieces `grammar.py` assembles rules from, kept apart because they are about llama.cpp's
grammar syntax, not about the ReAct protocol.
"""

from __future__ import annotations

import json
from typing import Any


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def json_literal(value: Any) -> str:
    """A JSON value (as the model must write it) as a GBNF string literal."""
    return literal(json.dumps(value, ensure_ascii=False))


def one_line(text: str) -> str:
    """`text` on one line, its whitespace runs single spaces, no leading emphasis marks."""
    return " ".join(str(text).split()).lstrip("*_").strip()


def repeat(expr: str, low: int, high: int) -> str:
    """`expr` repeated low..high times (GBNF `{m,n}`); `expr` must be an atom or a group."""
    if high <= 0:
        return '""'
    if low == high:
        return expr if low == 1 else f"{expr}{{{low}}}"
    if (low, high) == (0, 1):
        return f"{expr}?"
    return f"{expr}{{{low},{high}}}"
