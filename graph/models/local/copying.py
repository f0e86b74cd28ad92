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

- **A question that is the argument.** Sometimes the whole question is what the tool reads
  (the calculator's "(45 + 55) * 12 / 8 = ?" or "一百二十八除以八是多少"), and the model
  copied a part of it ("(45 + 55)") or translated it badly ("108 / 8"). A tool that can tell
  says how it reads a question with `metadata={"argument_from_question": callable}` or
  `ARGUMENT_FROM_QUESTION` in its module (question -> argument, or None when the question is
  not one); when it gives an argument, the step gets it.

Anything else the model wrote (other words, a translation, another language) is its choice and
is kept, unless the tool reads the question itself as above; so is an exact copy.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
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


def argument_from_question(tool: Any) -> Callable[[str], str | None] | None:
    """How `tool` reads a whole question into its copied argument, if it declares that."""
    found = _declaration(tool, "argument_from_question", "ARGUMENT_FROM_QUESTION")
    return found if callable(found) else None


def _declared(tool: Any, key: str, module_name: str) -> str | None:
    found = _declaration(tool, key, module_name)
    return found if isinstance(found, str) else None


def _declaration(tool: Any, key: str, module_name: str) -> Any:
    """`tool.metadata[key]`, else `module_name` in the module that defines the tool's function."""
    metadata = getattr(tool, "metadata", None) or {}
    if isinstance(metadata, Mapping) and metadata.get(key) is not None:
        return metadata[key]
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    return getattr(module, module_name, None) if module is not None else None


def _question_as_argument(tool: Any, value: str, question: str) -> str | None:
    """What the tool reads the whole question as, when that is not `value` already; None when
    the tool does not say or the question is not an argument (a failing reader counts as no:
    repairing a copy never fails a step)."""
    reader = argument_from_question(tool)
    try:
        meant = reader(question) if reader else None
    except Exception:
        return None
    if not isinstance(meant, str) or not meant.strip():
        return None
    same = "".join(meant.split()).casefold() == "".join(value.split()).casefold()
    return None if same else meant


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
        value = step.tool_input[piece]
        meant = _question_as_argument(tool, value, question) or slipped_copy(value, question)
        argument = piece
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
