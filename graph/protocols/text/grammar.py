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
well-typed arguments,
or into an answer. Each tool is its own alternative, which ties the name to its input schema.
Every repetition is bounded (string length, array length, digits, nesting), so generation
always ends, and after the Action Input's closing brace the only thing the grammar allows is
the end of the reply (no made-up `Observation:`).

Schema support: string (JSON escapes; no raw control characters), number, integer, boolean,
null, `enum` / `const`, objects (required properties first, in schema order, then the
optional ones in schema order, each of which may be left out), nested objects, arrays of the
item type (`minItems` / `maxItems`, bounded), `anyOf` / `oneOf` / type lists (pydantic's
`Optional[X]` is `anyOf [X, null]`), a one-element `allOf`, local `$ref`s. Anything else
(an empty schema, a free-form `dict`, an unknown type) falls back to a bounded generic JSON
value.

The thought is one line without `:`, `：` or `<`: `parse_react` reads `Action:` / `Final
Answer:` anywhere after whitespace as a keyword and drops text before `</think>`, so these
characters in a thought could change what the step means. The Final Answer is one line by
default (`Limits.answer_lines`; a small model otherwise rambles on until the bound) and is never
only `**` / `__` (the parser drops those after the colon, leaving an empty answer). Numeric
bounds, string patterns and formats are not enforced (pydantic still validates the call).

The functions here are pure and need no llama.cpp. How the request carries the grammar, for
llama.cpp's server (`llama_cpp.server` and `llama-server` both read a `grammar` field in the
body of `/v1/chat/completions`):

    model = ChatOpenAI(base_url=..., api_key="not-needed", model="local")
    model.bind(extra_body={"grammar": grammar_for(tools)})     # or ChatOpenAI(extra_body=...)

`use_grammar(setting, protocol=..., local=...)` decides whether to send it
(`constrained_decoding`: `auto` = only to the embedded local server, `on`, `off`); it only ever
applies to the text protocol.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

ConstrainedDecoding = Literal["auto", "on", "off"]
from graph.protocols.text.decoding import (  # noqa: E402,F401  re-exported
    CONSTRAINED_DECODING_VALUES,
    request_options,
    use_grammar,
)
from graph.protocols.text.gbnf import json_literal, literal, one_line, repeat  # noqa: E402


@dataclass(frozen=True)
class Limits:
    """Upper bounds that keep every generated reply finite (characters or items)."""

    thought: int = 200  # characters in the Thought line
    answer: int = 500  # characters in the Final Answer
    answer_lines: int = 1  # lines in the Final Answer (a small model rambles on after it)
    string: int = 200  # characters in a JSON string without its own maxLength
    array: int = 8  # items in a JSON array without its own (smaller) maxItems
    digits: int = 15  # digits in the integer part, and in the fraction, of a number
    depth: int = 6  # nested objects/arrays followed before the generic value takes over
    generic_depth: int = 2  # nesting of the generic (schema-less) JSON value
    generic_items: int = 6  # members of a generic object / items of a generic array


DEFAULT_LIMITS = Limits()

# Characters a JSON string may hold unescaped: not '"', not '\', no control characters.
_STRING_CHAR = r'[^"\\\x00-\x1F\x7F]'
_ESCAPE = r'"\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'


def grammar_for(
    tools: Iterable[Any], limits: Limits = DEFAULT_LIMITS, quotes: Sequence[str] = ()
) -> str:
    """The GBNF grammar (root rule `root`) for one text-protocol reply offering these tools.

    `tools` are LangChain tools, or anything `convert_to_openai_tool` accepts (functions,
    pydantic models, OpenAI tool dicts). No tools: the grammar allows only a Final Answer.
    `quotes`: when given, the Final Answer can only be one of these lines, verbatim (quoted
    answers, see `observations.py`).
    """
    specs = tuple((name, json.dumps(params)) for name, params in tool_specs(tools))
    return _grammar_cached(specs, limits, tuple(quotes))


def tool_specs(tools: Iterable[Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON-schema parameters) per tool, as the text-protocol prompt shows them."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for tool in tools:
        function = convert_to_openai_tool(tool)["function"]
        out.append((function["name"], function.get("parameters") or {}))
    return out


def grammar_from_schemas(
    schemas: Sequence[tuple[str, Mapping[str, Any]]] | Mapping[str, Mapping[str, Any]],
    limits: Limits = DEFAULT_LIMITS,
    quotes: Sequence[str] = (),
) -> str:
    """The grammar for tools given as (name, parameters schema) pairs or a name → schema map."""
    items = list(schemas.items()) if isinstance(schemas, Mapping) else list(schemas)
    return _Builder(limits).build([(name, dict(schema)) for name, schema in items], quotes)


def arguments_grammar(tool: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    """A grammar (root rule first) for one tool's JSON arguments alone, by its schema."""
    ((name, schema),) = tool_specs([tool])
    builder = _Builder(limits, root_schema=schema)
    params = builder.object_rule(f"{name}-input", schema, 0)
    lines = [f"root ::= {params}", *(f"{n} ::= {body}" for n, body in builder.rules.items())]
    return "\n".join(lines) + "\n"


def object_grammar(schema: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS) -> str:
    """A grammar (root rule first) for one JSON object matching `schema` (a structured
    answer's), built the way a tool's arguments are."""
    builder = _Builder(limits, root_schema=schema)
    body = builder.object_rule("answer", dict(schema), 0)
    lines = [f"root ::= {body}", *(f"{n} ::= {b}" for n, b in builder.rules.items())]
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=64)
def _grammar_cached(
    specs: tuple[tuple[str, str], ...], limits: Limits, quotes: tuple[str, ...]
) -> str:
    pairs = [(name, json.loads(params)) for name, params in specs]
    return grammar_from_schemas(pairs, limits, quotes)


class _Builder:
    """Collects named rules; identical bodies share one rule."""

    def __init__(self, limits: Limits, root_schema: Mapping[str, Any] | None = None) -> None:
        self.limits = limits
        self.rules: dict[str, str] = {}  # name -> body, in creation order
        self._names_by_body: dict[str, str] = {}
        self._root_schema: Mapping[str, Any] = root_schema or {}  # where `$ref`s resolve

    # -- rules -------------------------------------------------------------------------
    def rule(self, hint: str, body: str) -> str:
        """A rule named after `hint` with this body (an existing rule when the body repeats)."""
        found = self._names_by_body.get(body)
        if found is not None:
            return found
        base = re.sub(r"[^a-zA-Z0-9]+", "-", hint).strip("-").lower() or "r"
        name, n = base, 1
        while name in self.rules or name == "root":
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        self._names_by_body[body] = name
        return name

    def build(self, tools: list[tuple[str, dict[str, Any]]], quotes: Sequence[str] = ()) -> str:
        lim = self.limits
        thought_char = self.rule("thought-char", r"[^\x00-\x1F\x7F:：<]")
        thought_first = self.rule("thought-first", r"[^\x00-\x20\x7F:：<]")
        thought = self.rule(
            "thought", f"{thought_first} {repeat(thought_char, 0, max(lim.thought - 1, 0))}"
        )
        answer = self.answer(quotes)
        alternatives = []
        seen: set[str] = set()
        for name, schema in tools:
            if name in seen:
                continue
            seen.add(name)
            self._root_schema = schema
            params = self.object_rule(f"{name}-input", schema, 0)
            head = literal(f"Action: {name}\nAction Input: ")
            alternatives.append(self.rule(f"action-{name}", f"{head} {params}"))
        final = self.rule("final", f'"Final Answer: " {answer}')
        step = " | ".join([*alternatives, final])
        root = f'"Thought: " {thought} "\\n" ({step})'
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        return "\n".join(lines) + "\n"

    def answer(self, quotes: Sequence[str]) -> str:
        """The Final Answer's text: one of the quotes verbatim when there are any, else a
        bounded free line (or `answer_lines` lines)."""
        lim = self.limits
        quoted = [q for q in dict.fromkeys(one_line(q)[: lim.answer] for q in quotes) if q]
        if quoted:
            return self.rule("quote", " | ".join(literal(q) for q in quoted))
        answer_char = self.rule("answer-char", r"[^\x00-\x1F\x7F]")
        # Not only markdown emphasis: the parser drops a `**` / `__` right after the colon, and
        # an answer of nothing else would read as empty.
        answer_first = self.rule("answer-first", r"[^\x00-\x20\x7F*_]")
        line = self.rule(
            "answer-line",
            f"[*_]{{0,2}} {answer_first} {repeat(answer_char, 0, max(lim.answer - 1, 0))}",
        )
        more = repeat(f'("\\n" {line})', 0, max(lim.answer_lines - 1, 0))
        return self.rule("answer", line if more == '""' else f"{line} {more}")

    # -- shared pieces -----------------------------------------------------------------
    def ws(self) -> str:
        return self.rule("ws", '" "?')

    def string(self, low: int = 0, high: int | None = None) -> str:
        cap = self.limits.string if high is None else min(high, max(self.limits.string, low))
        low = min(low, cap)
        char = self.rule("char", f"{_STRING_CHAR} | {_ESCAPE}")
        hint = "string" if (low, cap) == (0, self.limits.string) else f"string-{low}-{cap}"
        return self.rule(hint, f'"\\"" {repeat(char, low, cap)} "\\""')

    def integer(self) -> str:
        d = self.limits.digits
        return self.rule("integer", f'"-"? ("0" | [1-9] {repeat("[0-9]", 0, d - 1)})')

    def number(self) -> str:
        d = self.limits.digits
        integer = self.integer()
        return self.rule(
            "number",
            f'{integer} ("." {repeat("[0-9]", 1, d)})? ([eE] [-+]? {repeat("[0-9]", 1, 3)})?',
        )

    def boolean(self) -> str:
        return self.rule("boolean", '"true" | "false"')

    def null(self) -> str:
        return self.rule("null", '"null"')

    def generic(self, depth: int | None = None) -> str:
        """A bounded JSON value of any type, nested at most `generic_depth` levels."""
        depth = self.limits.generic_depth if depth is None else depth
        scalar = self.rule(
            "json-scalar", f"{self.string()} | {self.number()} | {self.boolean()} | {self.null()}"
        )
        if depth <= 0:
            return scalar
        inner = self.generic(depth - 1)
        ws, n = self.ws(), self.limits.generic_items
        member = f'{self.string()} ":" {ws} {inner}'
        obj = self.rule(
            f"json-object-{depth}",
            f'"{{" ({member} ("," {ws} {member}){{0,{n - 1}}})? "}}"',
        )
        arr = self.rule(
            f"json-array-{depth}", f'"[" ({inner} ("," {ws} {inner}){{0,{n - 1}}})? "]"'
        )
        return self.rule(f"json-value-{depth}", f"{scalar} | {obj} | {arr}")

    # -- schemas -----------------------------------------------------------------------
    def value(self, hint: str, schema: Any, depth: int) -> str:
        """An expression (a rule name or a literal) matching JSON valid for `schema`."""
        if not isinstance(schema, Mapping):
            return self.generic() if schema is not False else '"null"'
        if depth > self.limits.depth:
            return self.generic()
        if "$ref" in schema:
            target = self._resolve(schema["$ref"])
            if target is None:
                return self.generic()
            return self.value(hint, target, depth + 1)
        if "const" in schema:
            return json_literal(schema["const"])
        if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
            options = " | ".join(dict.fromkeys(json_literal(v) for v in schema["enum"]))
            return self.rule(f"{hint}-enum", options)
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                branches = [
                    self.value(f"{hint}-{i}", {**_without(schema, key), **branch}, depth + 1)
                    if isinstance(branch, Mapping)
                    else self.generic()
                    for i, branch in enumerate(schema[key])
                ]
                return self.rule(f"{hint}-any", " | ".join(dict.fromkeys(branches)))
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            merged = {**_without(schema, "allOf"), **schema["allOf"][0]}
            return self.value(hint, merged, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            branches = [self.value(hint, {**schema, "type": t}, depth) for t in kind]
            return self.rule(f"{hint}-any", " | ".join(dict.fromkeys(branches)))
        if kind is None:
            if "properties" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
        if kind == "string":
            return self.string(_int(schema.get("minLength"), 0), _opt_int(schema.get("maxLength")))
        if kind == "integer":
            return self.integer()
        if kind == "number":
            return self.number()
        if kind == "boolean":
            return self.boolean()
        if kind == "null":
            return self.null()
        if kind == "object":
            return self.object_rule(hint, schema, depth)
        if kind == "array":
            return self.array_rule(hint, schema, depth)
        return self.generic()

    def object_rule(self, hint: str, schema: Mapping[str, Any], depth: int) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            extra = schema.get("additionalProperties")
            if extra is False or ("properties" in schema and not extra):
                return literal("{}")  # declared without properties: a tool with no arguments
            return self.rule(f"{hint}-obj", self.generic_object())
        required_names = [n for n in schema.get("required") or [] if n in properties]
        required = [n for n in properties if n in required_names]
        optional = [n for n in properties if n not in required_names]
        ws = self.ws()

        def member(name: str) -> str:
            value = self.value(f"{hint}-{name}", properties[name], depth + 1)
            return self.rule(f"{hint}-{name}-kv", f'{json_literal(name)} ":" {ws} {value}')

        req = [member(n) for n in required]
        opt = [member(n) for n in optional]
        if req:
            parts = [f' "," {ws} '.join(req), *(f'("," {ws} {m})?' for m in opt)]
            inner = " ".join(parts)
        else:
            # The first optional member present has no comma before it; later ones do.
            firsts = []
            for i, m in enumerate(opt):
                firsts.append(" ".join([m, *(f'("," {ws} {later})?' for later in opt[i + 1 :])]))
            inner = f"({' | '.join(firsts)})?"
        return self.rule(hint, f'"{{" {inner} "}}"')

    def generic_object(self) -> str:
        inner = self.generic(max(self.limits.generic_depth - 1, 0))
        ws, n = self.ws(), self.limits.generic_items
        member = f'{self.string()} ":" {ws} {inner}'
        return f'"{{" ({member} ("," {ws} {member}){{0,{n - 1}}})? "}}"'

    def array_rule(self, hint: str, schema: Mapping[str, Any], depth: int) -> str:
        ws = self.ws()
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            parts = [self.value(f"{hint}-{i}", s, depth + 1) for i, s in enumerate(prefix)]
            return self.rule(hint, '"[" ' + f' "," {ws} '.join(parts) + ' "]"')
        item = self.value(f"{hint}-item", schema.get("items", {}), depth + 1)
        high = self.limits.array
        if _opt_int(schema.get("maxItems")) is not None:
            high = min(high, _int(schema["maxItems"], high))
        low = min(_int(schema.get("minItems"), 0), max(high, 0))
        high = max(high, low)
        if high == 0:
            return literal("[]")
        more = repeat(f'("," {ws} {item})', max(low - 1, 0), high - 1)
        items = f"{item} {more}" if more != '""' else item
        body = f'"[" {items} "]"' if low >= 1 else f'"[" ({items})? "]"'
        return self.rule(hint, body)

    def _resolve(self, ref: Any) -> Mapping[str, Any] | None:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return None
        node: Any = self._root_schema
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node if isinstance(node, Mapping) else None


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in (key, "default", "title", "description")}


def _int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
    )


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
