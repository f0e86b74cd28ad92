"""A GBNF grammar for the text ReAct protocol, built from the tools' JSON argument schemas.

A small local model does not follow the ReAct format on its own; with this grammar llama.cpp
can only sample replies of the form

    Thought: <one bounded line>
    Action: <one tool name>
    Action Input: <a JSON object valid for *that* tool's schema>

or

    Thought: <one bounded line>
    Final Answer: <bounded text>

so every step parses (`graph.protocols.text.reader.parse_react`) into a real tool with
well-typed arguments, or into an answer. Each tool is its own alternative, which ties the name
to its input schema (the schema rules, and what they support, are in `gbnf.py`). After the
Action Input's closing brace the only thing the grammar allows is the end of the reply (no
made-up `Observation:`).

The thought is one line without `:`, `：` or `<`: `parse_react` reads `Action:` / `Final
Answer:` anywhere after whitespace as a keyword and drops text before `</think>`, so these
characters in a thought could change what the step means. The Final Answer is one line by
default (`Limits.answer_lines`; a small model otherwise rambles on until the bound) and is never
only `**` / `__` (the parser drops those after the colon, leaving an empty answer).

The functions here are pure and need no llama.cpp. A request carries the grammar in llama.cpp's
`grammar` body field (`llama_cpp.server` and `llama-server` both read it):
`model.bind(**request_options(grammar_for(tools)))`. Whether to send it at all is
`use_grammar(setting, protocol=..., local=...)` (`constrained_decoding`: `auto` = only to the
embedded local server, `on`, `off`); it only ever applies to the text protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool

from graph.protocols.text.decoding import request_options, use_grammar  # noqa: F401  re-exported
from graph.protocols.text.gbnf import Limits, Rules, literal, one_line, repeat

DEFAULT_LIMITS = Limits()


def grammar_for(
    tools: Iterable[Any], limits: Limits = DEFAULT_LIMITS, quotes: Sequence[str] = ()
) -> str:
    """The GBNF grammar (root rule `root`) for one text-protocol reply offering these tools.

    `tools` are LangChain tools, or anything `convert_to_openai_tool` accepts (functions,
    pydantic models, OpenAI tool dicts). No tools: the grammar allows only a Final Answer.
    `quotes`: when given, the Final Answer can only be one of these lines, verbatim (quoted
    answers, see `observations.py`).
    """
    return grammar_from_schemas(tool_specs(tools), limits, quotes)


def tool_specs(tools: Iterable[Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON-schema parameters) per tool, as the text-protocol prompt shows them."""
    functions = [convert_to_openai_tool(tool)["function"] for tool in tools]
    return [(function["name"], function.get("parameters") or {}) for function in functions]


def grammar_from_schemas(
    schemas: Sequence[tuple[str, Mapping[str, Any]]] | Mapping[str, Mapping[str, Any]],
    limits: Limits = DEFAULT_LIMITS,
    quotes: Sequence[str] = (),
) -> str:
    """The grammar for tools given as (name, parameters schema) pairs or a name → schema map."""
    items = list(schemas.items()) if isinstance(schemas, Mapping) else list(schemas)
    rules = Rules(limits)
    thought_char = rules.rule("thought-char", r"[^\x00-\x1F\x7F:：<]")
    thought_first = rules.rule("thought-first", r"[^\x00-\x20\x7F:：<]")
    thought = rules.rule(
        "thought", f"{thought_first} {repeat(thought_char, 0, max(limits.thought - 1, 0))}"
    )
    answer = _answer(rules, quotes)
    alternatives: dict[str, str] = {}  # by tool name: the first tool of a name counts
    for name, schema in items:
        if name not in alternatives:
            rules.root_schema = schema = dict(schema)
            params = rules.object_rule(f"{name}-input", schema, 0)
            head = literal(f"Action: {name}\nAction Input: ")
            alternatives[name] = rules.rule(f"action-{name}", f"{head} {params}")
    final = rules.rule("final", f'"Final Answer: " {answer}')
    step = " | ".join([*alternatives.values(), final])
    return rules.text(f'"Thought: " {thought} "\\n" ({step})')


def arguments_grammar(tool: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    """A grammar (root rule first) for one tool's JSON arguments alone, by its schema."""
    ((name, schema),) = tool_specs([tool])
    rules = Rules(limits, root_schema=schema)
    return rules.text(rules.object_rule(f"{name}-input", schema, 0))


def object_grammar(schema: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS) -> str:
    """A grammar (root rule first) for one JSON object matching `schema` (a structured
    answer's), built the way a tool's arguments are."""
    rules = Rules(limits, root_schema=schema)
    return rules.text(rules.object_rule("answer", dict(schema), 0))


def _answer(rules: Rules, quotes: Sequence[str]) -> str:
    """The Final Answer's text: one of the quotes verbatim when there are any, else a bounded
    free line (or `answer_lines` lines)."""
    lim = rules.limits
    quoted = [q for q in dict.fromkeys(one_line(q)[: lim.answer] for q in quotes) if q]
    if quoted:
        return rules.rule("quote", " | ".join(literal(q) for q in quoted))
    answer_char = rules.rule("answer-char", r"[^\x00-\x1F\x7F]")
    # Not only markdown emphasis: the parser drops a `**` / `__` right after the colon, and an
    # answer of nothing else would read as empty.
    answer_first = rules.rule("answer-first", r"[^\x00-\x20\x7F*_]")
    line = rules.rule(
        "answer-line",
        f"[*_]{{0,2}} {answer_first} {repeat(answer_char, 0, max(lim.answer - 1, 0))}",
    )
    more = repeat(f'("\\n" {line})', 0, max(lim.answer_lines - 1, 0))
    return rules.rule("answer", line if more == '""' else f"{line} {more}")
