"""Replies without any label: when one is an answer, and when it is a step left unwritten.

The rule: a reply with no label at all is the final answer (models often answer a tool's
result in plain prose), unless something in it says a step was meant instead:

* it uses label words where they cannot be read (`the Action: is search`);
* it ends with a colon (`Let me look that up:`);
* it opens by announcing what it will do (`I need to ...`, `Let me ...`, `我需要...`);
* it names an enabled tool the way code does: quoted, in backticks, or an identifier no prose
  contains (`get_weather`).

Then the reply is an error, so the model is asked for the step instead of ending the run with
a plan as its answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.protocols.text.labels import Scanner

_LEAD = re.compile(r"\W*+")
_INTENT = re.compile(
    r"(?:(?:i|we)\s+)?(?:need to|needs to|should|will|must|have to|want to|am going to)\b"
    r"|let me|let's|i'll|we'll|first,? (?:i|we)\b|我需要|我将|我要|让我|首先",
    re.IGNORECASE,
)


def unwritten_step(text: str, scanner: Scanner, tool_names: Sequence[str]) -> str | None:
    """Why an unlabeled reply is not an answer, or None when it is one."""
    if scanner.has_label_word():
        return ("no Action or Final Answer found: write `Action:` and `Action Input:`, "
                "or `Final Answer:`, at the start of a line")  # fmt: skip
    if text.rstrip().endswith((":", "：")):
        return ("no Action or Final Answer found: the reply ends with a colon but writes "
                "nothing after it")  # fmt: skip
    start = _LEAD.match(text, 0, 200).end()  # the intent is read where the words begin
    if _INTENT.match(text, start, start + 200):
        return ("no Action or Final Answer found: the reply says what it will do; write the "
                "Action and Action Input that do it")  # fmt: skip
    named = named_tool(text, tool_names)
    if named is not None:
        return (f"no Action found: the reply names the tool {named!r} without calling it; "
                f"write `Action: {named}` and `Action Input:`")  # fmt: skip
    return None


def named_tool(text: str, tool_names: Sequence[str]) -> str | None:
    """An enabled tool named the way code names it: quoted or in backticks, or as an
    identifier no prose would contain (`get_weather`, `search2`)."""
    for name in tool_names:
        quoted = rf"[`'\"]{re.escape(name)}[`'\"]"
        exact = rf"(?<!\w){re.escape(name)}(?!\w)"
        if re.search(quoted, text) or (re.search(r"[_\d.]", name) and re.search(exact, text)):
            return name
    return None
