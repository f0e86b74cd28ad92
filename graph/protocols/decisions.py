"""What one model reply decides, whichever protocol it came through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Act:
    """Run these tool calls (LangChain ToolCall dicts: name, args, id)."""

    calls: list[dict[str, Any]]
    thought: str = ""
    note: str | None = None  # said back to the model with the first observation
    read: str = ""  # text protocol: the reply as the reader took it (what later requests send)


@dataclass(frozen=True)
class Answer:
    text: str
    thought: str = ""
    read: str = ""


@dataclass(frozen=True)
class Invalid:
    """The reply cannot be used; `error` says exactly why (the model is told)."""

    error: str
    thought: str = ""
    read: str = ""


Decision = Act | Answer | Invalid
