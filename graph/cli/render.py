"""Terminal rendering of the agent's step events (the `custom` stream)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

EXCERPT = 600


def excerpt(text: str, limit: int = EXCERPT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_input(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


class StepPrinter:
    """Prints thought, action, observation and answer lines as the events arrive."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet

    def event(self, event: dict[str, Any]) -> None:
        if self.quiet or not isinstance(event, dict):
            return
        kind = event.get("event")
        text = escape(str(event.get("text") or ""))
        if kind == "thought":
            self.console.print(f"[bold magenta]Thought:[/] {text}")
        elif kind == "action":
            shown = escape(show_input(event.get("input")))
            self.console.print(f"[bold cyan]Action:[/] {escape(str(event.get('tool')))} {shown}")
        elif kind == "observation":
            style = "red" if event.get("is_error") else "green"
            self.console.print(
                f"[bold {style}]Observation:[/] {escape(excerpt(str(event.get('text') or '')))}"
            )
        elif kind == "fallback":
            self.console.print(f"[yellow]Note:[/] {text}")
        elif kind == "answer":
            self.console.print(f"[bold]Final Answer:[/] {text}")
        elif kind == "final" and event.get("status") in ("max_steps", "stuck"):
            self.console.print(f"[bold yellow]Stopped:[/] {escape(str(event.get('answer')))}")
