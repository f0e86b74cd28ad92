"""Arguments written as text, read into values a tool's schema accepts.

Models write arguments as a JSON object, a Python dict, `key=value` pairs, a call
`name(a, b=1)`, a quoted or fenced string, or plain text. These functions read each of those
and convert values to the JSON type the schema asks for (`"3"` for an integer is 3) when the
conversion is clean; what they cannot read stays text, so nothing is lost.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from graph.protocols.text.blobs import INPUT_KEYS, MISSING, TOOL_KEYS, read_object, read_value

EMPTY_INPUTS = frozenset(("", "none", "null", "n/a", "na", "nil", "()", "无", "空"))
_CALL = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)[ \t]*\((?P<args>.*)\)$", re.DOTALL)
_PAIR_SPLIT = re.compile(r"[,;\n]\s*(?=[A-Za-z_]\w*\s*[=:])")
_PAIR = re.compile(r"^\s*([A-Za-z_]\w*)\s*[=:]\s*(.*?)\s*$", re.DOTALL)
_OPENING = re.compile(r"```[\w+.-]*[ \t]*")  # a fence's opening and its language tag
_FENCED = re.compile(r"\A(`{3,})[^\n`]*\n(?P<body>.*?)\n?[ \t]*\1[ \t]*\Z", re.DOTALL)
_AST_LIMIT = 20_000


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name and the parts of its JSON schema the reader uses."""

    name: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]


def single(spec: ToolSpec) -> str | None:
    if len(spec.properties) == 1:
        return next(iter(spec.properties))
    return spec.required[0] if len(spec.required) == 1 else None


def unfence(text: str) -> str:
    """Text without a fence line left over from a fence around the whole reply: a closing
    ``` at the end, or an opening ```lang at the start, that pairs with nothing."""
    value = text.strip()
    if value.count("```") % 2 == 1:
        if value.endswith("```"):
            value = value[:-3].rstrip()
        elif value.startswith("```"):
            opening = _OPENING.match(value)
            value = value[opening.end() if opening else 3 :].strip()
    return value


def fenced_body(text: str) -> str:
    """What one code fence around all of `text` holds (```json ... ```), else the text: a value
    written as a code block is read from its content. (`unfence` keeps a closed pair: a Final
    Answer that is a code block shows the user the block.)"""
    value = text.strip()
    fenced = _FENCED.match(value) if value.startswith("```") else None
    return fenced.group("body").strip() if fenced else value


def unquote(text: str) -> str:
    """Text without quotes around all of it (a JSON string is decoded)."""
    value = text.strip()
    inner = _inside_quotes(value, "\"'")
    return value if inner is None else inner


def _inside_quotes(value: str, marks: str) -> str | None:
    """What one pair of these quote marks around all of `value` holds (a JSON string decoded),
    or None when no such pair encloses it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in marks:
        if value[0] == '"':
            try:
                decoded = json.loads(value)
                if isinstance(decoded, str):
                    return decoded
            except ValueError:
                pass
        if value[0] not in value[1:-1]:
            return value[1:-1].strip()
    return None


def unwrap(text: str) -> str:
    """Text without a fence around all of it, surrounding quotes or backticks."""
    value = unfence(text)
    fenced = _FENCED.match(value) if value.startswith("```") else None
    if fenced:
        value = fenced.group("body").strip()
    inner = _inside_quotes(value, "\"'`")
    if inner is not None:
        return inner
    if value[:1] in ('"', "`") and value.count(value[0]) == 1:  # a quote never closed
        return value[1:].strip()
    if value[-1:] in ('"', "`") and value.count(value[-1]) == 1:
        return value[:-1].strip()
    return value


def from_text(text: str, spec: ToolSpec) -> Any:
    """Arguments written as text: an object, a call, `key=value` pairs, or the text itself."""
    if text.lower() in EMPTY_INPUTS:
        return MISSING
    obj = read_object(text)
    if obj is not None:
        return obj
    if text[:1] == "[" and (found := read_value(text, repair=False)) and found.end == len(text):
        return found.value
    call = _CALL.match(text)
    # `f(...)` is the arguments when it calls the tool itself, or when the tool takes several
    # arguments (no text fits it as is); for a one-argument tool it may be the value (code)
    if call is not None and (_calls(call.group("name"), spec.name) or single(spec) is None):
        value = call_value(CallArgs(call.group("args")), spec)
        if not isinstance(value, str):
            return value
    pairs = _pairs(text, spec)
    return pairs if pairs is not None else text


def _calls(written: str, name: str) -> bool:
    return written.rsplit(".", 1)[-1].lower() == name.lower()


@dataclass(frozen=True)
class CallArgs:
    """The text between the parentheses of a call written as `name(...)`."""

    text: str


def call_value(args: CallArgs, spec: ToolSpec | None) -> Any:
    """The arguments of `name(...)`: an object, keywords and positions (mapped to the schema's
    argument order when it is known), or a single literal; the text when none of these."""
    text = args.text.strip()
    if not text:
        return MISSING
    obj = read_object(text)
    if obj is not None:
        return obj
    try:
        if len(text) > _AST_LIMIT:
            raise ValueError(text[:20])
        call = ast.parse(f"f({text})", mode="eval").body
        if not isinstance(call, ast.Call):
            raise ValueError(text[:20])
        positional = [ast.literal_eval(a) for a in call.args]
        named = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return text
    if len(positional) == 1 and not named:
        value = positional[0]
        if spec is None or single(spec) is not None or not isinstance(value, dict):
            return value
    order = list(spec.properties) if spec is not None else []
    if len(positional) > len(order):
        return text if positional else named
    return {**dict(zip(order, positional, strict=False)), **named}


def _pairs(text: str, spec: ToolSpec) -> dict[str, Any] | None:
    if not spec.properties or len(text) > 4_000 or ("=" not in text and ":" not in text):
        return None
    out: dict[str, Any] = {}
    for part in _PAIR_SPLIT.split(text):
        match = _PAIR.match(part)
        if match is None or match.group(1) not in spec.properties:
            return None
        out[match.group(1)] = unwrap(match.group(2).rstrip(","))
    return out or None


def unnest(args: dict[str, Any], spec: ToolSpec) -> dict[str, Any]:
    """Arguments wrapped once more: a whole blob, or a generic key around the only argument."""
    name_key = next((k for k in TOOL_KEYS if args.get(k) == spec.name), None)
    if name_key is not None:
        inner = next((args[k] for k in INPUT_KEYS if k in args), None)
        if isinstance(inner, dict):
            return inner
        if isinstance(inner, str) and (obj := read_object(inner)) is not None:
            return obj
    target = single(spec)
    if target is not None and len(args) == 1 and target not in args:
        ((key, value),) = args.items()
        if key in INPUT_KEYS or key in ("query", "text", "value", "__arg1", "q"):
            return {target: value}
    return args


def typed(args: dict[str, Any], props: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {k: convert(v, props[k]) if k in props else v for k, v in args.items()}


def convert(value: Any, schema: dict[str, Any] | None) -> Any:
    """A value in the JSON type its schema asks for, when it converts cleanly."""
    kind = (schema or {}).get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        if isinstance(value, str):
            return unwrap(value) if value[:1] in "\"'`" else value
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            return value[0]  # `["cats"]` for a string
        return value if isinstance(value, (dict, list)) or value is None else str(value)
    if not isinstance(value, str):
        return value
    text = unwrap(value)
    if kind in ("integer", "number"):
        try:
            number = float(text.replace(",", "")) if kind == "number" else int(text)
            return number
        except ValueError:
            return value
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if kind in ("array", "object") and text[:1] in "[{":
        found = read_value(text)
        if found is not None and found.end == len(text):
            return found.value
    return value
