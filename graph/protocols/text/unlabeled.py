"""Replies without any label: when one is an answer, a lone call, or a step left unwritten.

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

from graph.protocols.text.actions import FINAL_NAMES, Action, key, split_call
from graph.protocols.text.arguments import unwrap
from graph.protocols.text.labels import Scanner
from graph.protocols.text.toolset import Toolset

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


def call_line(text: str, toolset: Toolset | None) -> Action | None:
    """A reply that is only `tool(...)` or `Tool[...]`, read when it names an enabled tool
    exactly (without the tools, a lone call shape is too often code in an answer), or
    `finish(...)` / `Finish[...]`, the answer. Gemma fences it (```tool_code) and may wrap it
    in `print(...)`."""
    line = text.strip()
    if line.count("\n") > 2:  # one line, or three with a fence around it
        return None
    line = unwrap(line)
    if line.startswith("print(") and line.endswith("))"):
        line = line[6:-1].strip()
    action = split_call(line, "") if "\n" not in line else None
    if action is None or action.bare or not line.endswith((")", "]")):
        return None
    if key(action.name) in FINAL_NAMES and action.name[:1].isalpha():
        return action
    return action if toolset is not None and toolset.named(action.name) else None
