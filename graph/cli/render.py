"""Terminal rendering of the agent's step events (the `custom` stream).

Event text comes from the model and the tools, so it is never parsed as markup: on a terminal
each line is a Rich `Text` (style from us, characters from them), elsewhere plain text. Tool
input is one JSON document with hiding characters escaped; free text (thoughts, answers) keeps
its newlines but not its escape sequences.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from graph.cli.output import is_terminal, visible, visible_json
from graph.persistence.history import excerpt
from graph.persistence.timeline import ran_again

EXCERPT = 600


class Lines:
    """Writes labelled lines: styled on a terminal, plain otherwise, never markup."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.console = None
        if is_terminal(self.stream):
            from rich.console import Console

            self.console = Console(
                file=self.stream, highlight=False, soft_wrap=True, emoji=False, markup=False
            )

    def write(self, label: str, style: str, text: str) -> None:
        if self.console is None:
            self.stream.write(f"{label} {text}\n")
            self.stream.flush()
            return
        from rich.text import Text

        line = Text()
        line.append(label, style=style)
        line.append(" " + text)
        self.console.print(line)


class StepPrinter:
    """Prints thought, action, observation and answer lines as the events arrive."""

    def __init__(self, lines: Lines | None = None, *, quiet: bool = False) -> None:
        self.lines = lines or Lines()
        self.quiet = quiet

    def event(self, event: Any) -> None:
        if self.quiet or not isinstance(event, dict):
            return
        kind = event.get("event")
        text = visible(str(event.get("text") or ""), multiline=True)
        if kind == "thought":
            self.lines.write("Thought:", "bold magenta", text)
        elif kind == "action":
            shown = visible_json(event.get("input"))
            self.lines.write("Action:", "bold cyan", f"{visible(event.get('tool'))} {shown}")
        elif kind == "observation":
            style = "bold red" if event.get("is_error") else "bold green"
            self.lines.write("Observation:", style, excerpt(text, EXCERPT) + ran_again(event))
        elif kind == "fallback":
            self.lines.write("Note:", "yellow", text)
        elif kind == "answer":
            self.lines.write("Final Answer:", "bold", text)
        elif kind == "final" and event.get("status") in (
            "max_steps",
            "stuck",
            "timeout",
            "stopped",
        ):
            answer = visible(str(event.get("answer") or ""), multiline=True)
            self.lines.write("Stopped:", "bold yellow", answer)
            if event.get("notice"):  # a best answer: why the run stopped is said after it
                self.lines.write("Note:", "yellow", visible(str(event["notice"]), multiline=True))
