"""Reasoning a model writes into its reply (`<think>...</think>`, as Qwen and DeepSeek-R1 do
behind a server that does not split it out): the text reader drops it before reading a step,
and a native answer leaves it out. A module of its own, so the native protocol's path does not
load the text protocol's scanner for it."""

from __future__ import annotations

import re

_THINK_OPEN = re.compile(r"\s*<(think|thinking)>", re.IGNORECASE)
# the last closing tag that ends its line: reasoning whose opening tag the server did not send
_THINK_LAST_CLOSE = re.compile(r"\A.*</(?:think|thinking)>[ \t]*(?:\n|\Z)", re.DOTALL | re.I)


def without_reasoning(text: str) -> str:
    """`text` without the reasoning that opens it (native answers use it too): `<think>` blocks
    that open the reply, and all up to a `</think>` that ends its line (servers that strip the
    opening tag send only the closing one). A tag inside a line (`{"q": "</think>"}`) is text.
    A `<think>` that opens the reply and never closes loses only its tag (`unclosed_reasoning`)."""
    if "<" in text:
        for _ in range(32):  # a reply opening with more blocks than that is degenerate
            opening = _THINK_OPEN.match(text)
            if opening is None:
                break
            closing = re.compile(rf"</{opening.group(1)}>", re.I).search(text, opening.end())
            text = text[closing.end() if closing else opening.end() :]
            if closing is None:
                break
        if "</" in text and (last := _THINK_LAST_CLOSE.match(text)) is not None:
            text = text[last.end() :]
    return text


def unclosed_reasoning(raw: str) -> bool:
    """The reply opens a `<think>` block that never closes (the model ran out of tokens)."""
    opening = _THINK_OPEN.match(raw)
    return opening is not None and f"</{opening.group(1).lower()}>" not in raw.lower()
