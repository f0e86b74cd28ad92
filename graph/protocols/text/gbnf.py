"""Writing GBNF text (llama.cpp's grammar syntax): string literals, bounded repetition, and the
rules that hold a JSON value to a JSON schema.

About the grammar syntax and JSON Schema, not the ReAct protocol: `grammar.py` builds the
reply grammar from these rules, and the embedded model (`graph/models/local`) builds its
arguments and answer grammars from them too.

Schema support: string (JSON escapes; no raw control characters), number, integer, boolean,
null, `enum` / `const`, objects (required properties first, in schema order, then the
optional ones in schema order, each of which may be left out), nested objects, arrays of the
item type (`minItems` / `maxItems`, bounded), `anyOf` / `oneOf` / type lists (pydantic's
`Optional[X]` is `anyOf [X, null]`), a one-element `allOf`, local `$ref`s. Anything else
(an empty schema, a free-form `dict`, an unknown type) falls back to a bounded generic JSON
value. Every repetition is bounded (string length, array length, digits, nesting), so
generation always ends. Numeric bounds, string patterns and formats are not enforced
(pydantic still validates the call).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    return '"' + text.translate(_ESCAPES) + '"'


# `"` and `\` escaped; control characters as `\xNN`, but newline, return and tab as `\n` `\r` `\t`
_ESCAPES = {c: f"\\x{c:02X}" for c in [*range(0x20), 0x7F]} | {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def json_literal(value: Any) -> str:
    """A JSON value (as the model must write it) as a GBNF string literal."""
    return literal(json.dumps(value, ensure_ascii=False))


def one_line(text: str) -> str:
    """`text` on one line, its whitespace runs single spaces, no leading emphasis marks."""
    return " ".join(str(text).split()).lstrip("*_").strip()


def repeat(expr: str, low: int, high: int) -> str:
    """`expr` repeated low..high times (GBNF `{m,n}`); `expr` must be an atom or a group."""
    if high <= 0:
        return '""'
    if low == high:
        return expr if low == 1 else f"{expr}{{{low}}}"
    if (low, high) == (0, 1):
        return f"{expr}?"
    return f"{expr}{{{low},{high}}}"


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


# Characters a JSON string may hold unescaped: not '"', not '\', no control characters.
_STRING_CHAR = r'[^"\\\x00-\x1F\x7F]'
_ESCAPE = r'"\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'


class Rules:
    """Collects named rules; identical bodies share one rule."""

    def __init__(self, limits: Limits, root_schema: Mapping[str, Any] | None = None) -> None:
        self.limits = limits
        self.rules: dict[str, str] = {}  # name -> body, in creation order
        self._names_by_body: dict[str, str] = {}
        self.root_schema: Mapping[str, Any] = root_schema or {}  # where `$ref`s resolve

    def text(self, root: str) -> str:
        """The grammar: `root ::= <root>`, then every rule in the order it was made."""
        lines = [f"root ::= {root}", *(f"{n} ::= {b}" for n, b in self.rules.items())]
        return "\n".join(lines) + "\n"

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
            return self.string(
                _int(schema.get("minLength"), 0), _int(schema.get("maxLength"), None)
            )
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
        high = min(high, _int(schema.get("maxItems"), high))
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
        node: Any = self.root_schema
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node if isinstance(node, Mapping) else None


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in (key, "default", "title", "description")}


def _int(value: Any, default: _T) -> int | _T:
    """`value` when it is a whole number >= 0, else `default`."""
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
    )
