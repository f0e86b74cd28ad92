"""Copies of the question, made whole or made exact.

Why: the examples teach the small model to copy the user's own words into a tool (it copies
well and translates badly), and the tools read what it copies. Two slips are common, and both
lose the answer:

- **A copy that stops short.** Some tools want the question itself (`knowledge_search` ranks
  the notes' sentences by the question's words and drops filler words on its own). A question
  of two sentences was often copied only in part: "The note search isn't picking up my files.
  Which setting tells it where my notes folder is?" went in as "The note search isn't picking
  up my files?". A piece of the question is never better for such a tool than the whole, so
  the step gets the whole question. A tool says which argument takes the question with
  `metadata={"question_argument": "query"}` or `QUESTION_ARGUMENT = "query"` in its module.
- **A copy that slips.** Other tools want a piece of the question (the calculator the
  arithmetic, the clock the place), and the copy came out a character or two off: "eighteen
  times seven" as "eight times seven", "(15+9)*3" as "15+9*3". When the argument is within a
  few edits of a piece of the question made of whole words (`SLIP` of its length), it is that
  piece. A tool names such an argument with `metadata={"copied_argument": "expression"}` or
  `COPIED_ARGUMENT` in its module.

Anything else the model wrote (other words, a translation, another language) is its choice and
is kept; so is an exact copy.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from graph.models.local.examples import one_line, tool_name
from graph.protocols.text.reader import parse_react

MAX_QUESTION_CHARS = 200  # the grammar's bound on a string argument
SLIP = 1 / 3  # edits per character of a slipped copy, rounded down: "1" is never a slip
_END_PUNCTUATION = " .?!。？！"
_INPUT_LINE = re.compile(r"^Action Input: .*$", re.MULTILINE)
# a word of the question, without the punctuation around it; a run of CJK is one word
_QUESTION_WORD = re.compile(
    r"[^\s.,;:!?。，；：！？\"'“”‘’]+(?:[.,:][^\s.,;:!?。，；：！？\"'“”‘’]+)*"
)


def question_argument(tool: Any) -> str | None:
    """The argument of `tool` that takes the user's whole question, if it declares one."""
    return _declared(tool, "question_argument", "QUESTION_ARGUMENT")


def copied_argument(tool: Any) -> str | None:
    """The argument of `tool` that takes a piece of the question, if it declares one."""
    return _declared(tool, "copied_argument", "COPIED_ARGUMENT")


def _declared(tool: Any, key: str, module_name: str) -> str | None:
    metadata = getattr(tool, "metadata", None) or {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get(key), str):
        return metadata[key]
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    found = getattr(module, module_name, None) if module is not None else None
    return found if isinstance(found, str) else None


def whole_question_copy(reply: str, question: str, tools: Sequence[Any]) -> str:
    """`reply` with its copy of the question made whole or exact (see the module docstring);
    any other reply unchanged."""
    question = one_line(question)
    if not question or len(question) > MAX_QUESTION_CHARS or "Action Input:" not in reply:
        return reply
    if len(_INPUT_LINE.findall(reply)) != 1:
        return reply
    step = parse_react(reply, tools)
    if step.kind != "action" or not isinstance(step.tool_input, dict):
        return reply
    tool = next((t for t in tools if tool_name(t) == step.tool), None)
    if tool is None:
        return reply
    whole, piece = question_argument(tool), copied_argument(tool)
    if whole and isinstance(step.tool_input.get(whole), str):
        argument, meant = whole, question if _piece_of(step.tool_input[whole], question) else None
    elif piece and isinstance(step.tool_input.get(piece), str):
        argument, meant = piece, slipped_copy(step.tool_input[piece], question)
    else:
        return reply
    if meant is None:
        return reply
    line = "Action Input: " + json.dumps({**step.tool_input, argument: meant}, ensure_ascii=False)
    return _INPUT_LINE.sub(lambda _: line, reply)


def slipped_copy(value: str, question: str) -> str | None:
    """The piece of `question` (whole words) that `value` is a slipped copy of: within `SLIP`
    of its length in edits, but not exact. None when there is none."""
    value = one_line(value)
    allowed = int(SLIP * len(value))
    folded = value.casefold()
    words = [(m.start(), m.end()) for m in _QUESTION_WORD.finditer(question)]
    best: tuple[int, int, str] | None = None
    for first in range(len(words)):
        for last in range(first, len(words)):
            piece = question[words[first][0] : words[last][1]]
            if len(piece) > len(value) + allowed:
                break
            if len(piece) < len(value) - allowed:
                continue
            distance = _edits(folded, piece.casefold(), allowed)
            if distance <= allowed and (best is None or (distance, -len(piece)) < best[:2]):
                best = (distance, -len(piece), piece)
    if best is None or best[0] == 0 or allowed == 0:
        return None
    return best[2]


def _edits(a: str, b: str, cap: int) -> int:
    """Levenshtein distance of `a` and `b`, or `cap + 1` once it is surely above `cap`."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            )
        if min(current) > cap:
            return cap + 1
        previous = current
    return previous[-1]


def _piece_of(value: str, question: str) -> bool:
    """Whether `value` is a shorter piece of `question`, give or take its last punctuation."""
    piece = one_line(value).rstrip(_END_PUNCTUATION).casefold()
    whole = question.casefold()
    return bool(piece) and piece in whole and piece != whole.rstrip(_END_PUNCTUATION)
