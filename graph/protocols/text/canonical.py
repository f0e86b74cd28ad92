"""The one reply shape the system prompt asks for, recognised without the general reading.

Most replies of a model that follows the prompt are exactly

    Thought: <one line>
    Action: <a tool's exact name>
    Action Input: <one JSON object on one line>

and the general reader (`reader`) spends most of a step's parsing time on them: it scans for
every label spelling of every dialect, looks for fences, blobs and markup, and resolves the name
through its fuzzy rules, only to find the plain answer. This module matches that shape with one
regular expression and hands back the same step, or None, and the general reader reads the
reply. It only says yes where the general reading cannot differ:

* nothing the reader rewrites first: no `<` (reasoning blocks, leaked tokens), no `\\r`;
* a thought that opens with a letter or digit and holds no colon, backtick, bracket, brace,
  bar or markdown decoration, so no label, fence, blob or call can hide in it;
* a name that is exactly an enabled tool's (no resolving) and no word for "no tool";
* an input that is one JSON object, the last thing in the reply, and that fits the tool's
  schema as the reader shapes it (`Toolset.shape`, the same code).

`tests/unit/test_reader_properties.py` checks on generated replies that both readings agree
wherever this one answers.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from graph.protocols.text.toolset import Toolset

_SHAPE = re.compile(
    r"Thought: (?P<thought>(?:[^\W_][^\n:：`\[\]{}<>|*#~]*)?)\n"
    r"Action: (?P<name>[A-Za-z][\w-]*)\n"
    r"Action Input: (?P<input>\{[^\n]*\})[ \t\n]*",
)
_DECODER = json.JSONDecoder()


class CanonicalAction(NamedTuple):
    thought: str
    tool: str
    args: dict[str, Any]
    read: str  # the step as read: the reply without trailing space


def canonical_action(text: str, toolset: Toolset | None) -> CanonicalAction | None:
    """The action `text` writes in exactly the prompt's shape, or None (read it in full)."""
    if toolset is None or "<" in text or "\r" in text:
        return None
    found = _SHAPE.fullmatch(text)
    if found is None or found["name"] not in toolset.specs:
        return None
    written = found["input"]
    try:
        value, end = _DECODER.raw_decode(written)
    except (ValueError, RecursionError):
        return None
    if end != len(written) or not isinstance(value, dict):
        return None
    args, problem = toolset.shape(found["name"], value)
    if problem is not None:  # the reader words the error
        return None
    return CanonicalAction(found["thought"].strip(), found["name"], args, text.rstrip())
