"""A copy of the question that stopped short is made whole.

Why: some tools want the user's question itself (`knowledge_search` ranks the notes' sentences
by the question's words, and drops filler words on its own). The examples teach the small model
to copy the question into such a tool, and it mostly does; but a question of two sentences is
often copied only in part. "The note search isn't picking up my files. Which setting tells it
where my notes folder is?" went in as "The note search isn't picking up my files?", and the
half that said what was asked never reached the search. A fragment of the question is never
better for such a tool than the whole question, so the step gets the whole question.

A tool says which argument takes the question with `metadata={"question_argument": "query"}`,
or `QUESTION_ARGUMENT = "query"` in its module (read like its `EXAMPLES`). Only a copy that
stopped short is completed: an input that is a piece of the question, give or take its last
punctuation. Anything else the model wrote (other words, another language) is its choice and
is kept.
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
_END_PUNCTUATION = " .?!。？！"
_INPUT_LINE = re.compile(r"^Action Input: .*$", re.MULTILINE)


def question_argument(tool: Any) -> str | None:
    """The argument of `tool` that takes the user's question, if it declares one."""
    metadata = getattr(tool, "metadata", None) or {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get("question_argument"), str):
        return metadata["question_argument"]
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    found = getattr(module, "QUESTION_ARGUMENT", None) if module is not None else None
    return found if isinstance(found, str) else None


def whole_question_copy(reply: str, question: str, tools: Sequence[Any]) -> str:
    """`reply` with a question argument that holds a piece of `question` given all of it;
    any other reply unchanged."""
    question = one_line(question)
    if not question or len(question) > MAX_QUESTION_CHARS or "Action Input:" not in reply:
        return reply
    step = parse_react(reply, tools)
    if step.kind != "action" or not isinstance(step.tool_input, dict):
        return reply
    tool = next((t for t in tools if tool_name(t) == step.tool), None)
    argument = question_argument(tool) if tool is not None else None
    value = step.tool_input.get(argument) if argument else None
    if not isinstance(value, str) or not _piece_of(value, question):
        return reply
    line = "Action Input: " + json.dumps(
        {**step.tool_input, argument: question}, ensure_ascii=False
    )
    if len(_INPUT_LINE.findall(reply)) != 1:
        return reply
    return _INPUT_LINE.sub(lambda _: line, reply)


def _piece_of(value: str, question: str) -> bool:
    """Whether `value` is a shorter piece of `question`, give or take its last punctuation."""
    piece = one_line(value).rstrip(_END_PUNCTUATION).casefold()
    whole = question.casefold()
    return bool(piece) and piece in whole and piece != whole.rstrip(_END_PUNCTUATION)
