"""A chosen tool's input, written under the grammar its hints give (`constrain.py`), or by code
where the hints leave no choice (the whole question; the one arithmetic reading it states):
the second request of a step (`completion.py`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from typing import Any

from graph.models.local.builtin_hints import hints_for
from graph.models.local.constrain import (
    accepted_pieces,
    arithmetic_grammar,
    arithmetic_pieces,
    piece_grammar,
    question_numbers,
)
from graph.models.local.wire import text_of
from graph.protocols.text.grammar import arguments_grammar, tool_specs

Request = dict[str, Any]
RequestFor = Callable[[str, str | None, int], Request]


def tool_input(
    prompt: str, tool: Any, question: str, max_tokens: int, request: RequestFor
) -> Generator[Request, dict[str, Any], tuple[dict[str, Any], str]]:
    """The chosen tool's input and who wrote it ("model" or "code"); `request` builds a
    completion request (prompt, grammar, most tokens) for the caller to send."""
    hints = hints_for(tool)
    if hints.question_argument:
        return {hints.question_argument: " ".join(question.split())}, "code"
    single = hints.arithmetic_argument or hints.piece_argument
    grammar = None
    if hints.arithmetic_argument:
        stated = arithmetic_pieces(question, hints.reads) if hints.reads else []
        if len(stated) == 1:  # the question's own words, the one reading the tool takes
            return {hints.arithmetic_argument: stated[0]}, "code"
        grammar = arithmetic_grammar(question, hints.reads)
    elif hints.piece_argument:
        default = schema_default(tool, hints.piece_argument)
        grammar = piece_grammar(question, hints.accepts, default)
    if single and grammar:
        data = yield request(prompt + "Input:", spaced(grammar), max_tokens)
        return {single: text_of(data).strip()}, "model"
    data = yield request(prompt + "Input:", spaced(arguments_grammar(tool)), max_tokens)
    try:
        value = json.loads(text_of(data))
    except ValueError:
        value = {}
    return (value if isinstance(value, dict) else {}), "model"


def possible(tool: Any, question: str) -> bool:
    """Whether the tool's argument can be written for this question: an expression needs a
    number of the question's (its grammar allows no other operands but a few constants); a
    piece the tool must know (a place) needs one it knows, or a default."""
    hints = hints_for(tool)
    if hints.arithmetic_argument:
        return bool(question_numbers(question))
    if hints.piece_argument and hints.accepts is not None:
        if schema_default(tool, hints.piece_argument):
            return True
        return bool(accepted_pieces(question, hints.accepts))
    return True


def schema_default(tool: Any, argument: str) -> str | None:
    """The default the tool's schema declares for this argument, if a string."""
    ((_, schema),) = tool_specs([tool])
    default = (schema.get("properties") or {}).get(argument, {}).get("default")
    return default if isinstance(default, str) and default else None


def spaced(grammar: str) -> str:
    """The grammar with one space before its root (the prompt ends at the colon, and the
    model's token after a colon carries its space) and the newline that ends the line after
    it (the request stops there; without it the model could not end where it wants to)."""
    return grammar.replace("root ::= ", 'root ::= " " (', 1).replace("\n", ') "\\n"?\n', 1)
