"""JSON and Python-literal values inside model text, and tool calls written as JSON blobs.

Models write arguments as JSON, as Python dicts (`{'q': 'x', 'n': None}`), with trailing commas,
comments or a missing brace, and often followed by prose. `read_value` tries, in order of cost:
the strict JSON decoder (with literal newlines allowed in strings), `ast.literal_eval` on the
balanced prefix, then `json_repair` on texts small enough for it (it is pure Python and its cost
grows quadratically or worse with size: see `REPAIR_LIMIT`). Everything here is linear in the
text and never raises.

`blob_call` reads a call from a decoded object whatever the framework's key names are:
`action`/`action_input` (LangChain), `name`/`arguments` (OpenAI, Hermes, smolagents),
`tool_name`/`tool_arguments`, OpenAI's `{"function": {...}}` wrapper, or a list of calls.
Keys it does not know are kept as arguments, so no input is dropped silently.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

import json_repair

MISSING: Any = object()  # a call that names no input at all

TOOL_KEYS = ("action", "tool", "tool_name", "function", "action_name", "name", "tool_call")
INPUT_KEYS = (
    "action_input",
    "tool_input",
    "arguments",
    "args",
    "parameters",
    "params",
    "input",
    "inputs",
    "tool_arguments",
    "tool_args",
    "tool_params",
    "action_args",
    "kwargs",
)
THOUGHT_KEYS = ("thought", "thoughts", "reasoning", "reason", "rationale")
_META_KEYS = frozenset((*THOUGHT_KEYS, "type", "id", "call_id", "tool_call_id", "index"))
_WRAPPERS = ("function", "function_call", "tool_call", "action", "call")
_ANSWER_KEYS = ("final_answer", "answer", "final answer", "finalanswer")

# json_repair is pure Python and quadratic or worse on some inputs (8,000 characters of `{"a"a"a...`
# took seconds; 2,000 characters with at most 128 quotes stay near 0.1 s), so it only gets
# small segments with few strings. Anything larger is read strictly or not at all.
REPAIR_LIMIT = 2_000  # characters json_repair is given at most
REPAIR_QUOTES = 128  # quote characters in what json_repair is given, at most
_DEPTH_LIMIT = 64
_DECODER = json.JSONDecoder(strict=False)
_OPENING = re.compile(r"[{\[]")
_BRACKET_OR_QUOTE = re.compile(r"[{}\[\]\"']")
_BRACKET_OR_APOSTROPHE = re.compile(r"[{}\[\]']")
_STRING_REST = {  # the rest of a string after its opening quote (a stray apostrophe: None)
    '"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"'),
    "'": re.compile(r"[^'\\\n]*(?:\\.[^'\\\n]*)*'"),
}
_TOOL_KEY = re.compile("(?:%s)[\"']?\\s*:" % "|".join(TOOL_KEYS))  # noqa: UP031
_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


@dataclass(frozen=True)
class Value:
    """A decoded value and where its text ends."""

    value: Any
    end: int


def balanced_end(text: str, start: int) -> int | None:
    """Where the bracketed value opening at `start` closes (string-aware), or None.

    Jumps from bracket to quote with a character-class search and over each string with one
    match, so a long string or a long run of text costs no Python step per character.

    A quote that never closes is not looked for again: when the rest of a string fails to
    match from one quote, it fails from every later quote up to the same stop (the end of the
    text for `"`, the end of the line for `'`), since the match from a later quote is a suffix
    of the failed one. Those quotes are skipped without a match, so the scan stays linear (it
    was quadratic on `\\"` repeated with no closing quote)."""
    depth, pos, tokens = 0, start, _BRACKET_OR_QUOTE
    dead_until = {'"': -1, "'": -1}  # quotes before this position cannot open a string
    while True:
        token = tokens.search(text, pos)
        if token is None:
            return None
        char, pos = token.group(), token.end()
        if char in "\"'":
            if pos <= dead_until[char]:
                continue
            closing = _STRING_REST[char].match(text, pos)
            if closing is not None:
                pos = closing.end()
            elif char == '"':
                dead_until['"'] = len(text)
                tokens = _BRACKET_OR_APOSTROPHE  # no '"' can open a string any more
            else:
                line_end = text.find("\n", pos)
                dead_until["'"] = len(text) if line_end < 0 else line_end
        elif char in "{[":
            depth += 1
            if depth > _DEPTH_LIMIT:
                return None
        else:
            depth -= 1
            if depth == 0:
                return pos


def read_value(text: str, start: int = 0, *, repair: bool = True) -> Value | None:
    """The JSON-like value opening at `start` (a `{` or `[`), read as leniently as is cheap;
    `repair=False` accepts only what JSON or a Python literal reads as is."""
    try:
        value, end = _DECODER.raw_decode(text, start)
        return Value(value, end)
    except (ValueError, RecursionError):
        pass
    end = balanced_end(text, start)
    segment = text[start:end] if end is not None else text[start:]
    stop = end if end is not None else len(text)
    if len(segment) <= 4 * REPAIR_LIMIT:
        try:
            return Value(ast.literal_eval(segment), stop)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    if not repair:
        return None
    if (
        len(segment) <= REPAIR_LIMIT
        and segment.count('"') + segment.count("'") <= REPAIR_QUOTES
        and segment.count("{") + segment.count("[") <= _DEPTH_LIMIT
    ):
        try:
            repaired = json_repair.loads(_COMMENT.sub("", segment))
        except Exception:  # json_repair has no documented exception contract
            return None
        if isinstance(repaired, (dict, list)) and repaired:
            return Value(repaired, stop)
    return None


def read_object(text: str) -> dict[str, Any] | None:
    """`text` as one JSON-like object ({...} with keys), or None. Prose after it is ignored."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    if ":" not in stripped:  # `{temperature in SF}` is text in braces, not an object
        return {} if re.fullmatch(r"\{\s*\}", stripped) else None
    found = read_value(stripped)
    return found.value if found is not None and isinstance(found.value, dict) else None


MORE_LIMIT = 8  # further call blobs counted after the first


@dataclass(frozen=True)
class BlobCall:
    """A call read from a JSON blob: `args` is MISSING when the blob names no input."""

    name: Any
    args: Any
    thought: str
    extra: int  # further calls in the same blob (a list of calls)


def blob_call(value: Any, *, labeled: bool = True) -> BlobCall | None:
    """The call a decoded blob describes, or None when it is not shaped like one.

    Outside an `Action:` section (`labeled=False`) a `name` key alone does not make a call:
    `{"name": "Ada", "age": 36}` is an answer, not a call of a tool named Ada."""
    extra = 0
    if isinstance(value, list):
        calls = [v for v in value if isinstance(v, dict)]
        if not calls:
            return None
        value, extra = calls[0], len(calls) - 1
    if not isinstance(value, dict):
        return None
    thought = next((v for k in THOUGHT_KEYS if isinstance(v := value.get(k), str)), "")
    if isinstance(value.get("tool_calls"), list):
        inner = blob_call(value["tool_calls"], labeled=True)
        return _with(inner, thought, extra)
    for key in _WRAPPERS:
        inner_value = value.get(key)
        if isinstance(inner_value, dict) and any(k in inner_value for k in TOOL_KEYS):
            return _with(blob_call(inner_value, labeled=True), thought, extra)
    has_input = any(k in value for k in INPUT_KEYS)
    name_key = next(
        (k for k in TOOL_KEYS if isinstance(value.get(k), str) and value[k].strip()), None
    )
    if name_key is None:
        # a step written as JSON: `{"thought": ..., "answer": ...}`, `{"final_answer": ...}`
        answer = next((k for k in _ANSWER_KEYS if isinstance(value.get(k), str)), None)
        stepwise = thought or (answer is not None and answer != "answer")
        if answer is not None and stepwise and set(value) <= {*THOUGHT_KEYS, *_ANSWER_KEYS}:
            return BlobCall("final_answer", {"answer": value[answer]}, thought, extra)
        named = any(k in value for k in TOOL_KEYS)
        return BlobCall(None, MISSING, thought, extra) if named or has_input else None
    if name_key == "name" and not labeled and not has_input and len(value) > 1:
        return None
    return BlobCall(value[name_key], _arguments(value, name_key), thought, extra)


def _with(call: BlobCall | None, thought: str, extra: int) -> BlobCall | None:
    if call is None:
        return None
    return BlobCall(call.name, call.args, call.thought or thought, call.extra + extra)


def _arguments(value: dict[str, Any], name_key: str) -> Any:
    for key in INPUT_KEYS:
        if key in value:
            return MISSING if value[key] is None else value[key]
    rest = {k: v for k, v in value.items() if k != name_key and k not in _META_KEYS}
    rest = {k: v for k, v in rest.items() if k not in TOOL_KEYS}
    if not rest:
        return MISSING
    if len(rest) == 1 and isinstance(only := next(iter(rest.values())), dict):
        return only
    return rest


def find_blob(text: str, *, labeled: bool) -> tuple[BlobCall, int, int] | None:
    """The first blob in `text` that reads as a call: (call, where it starts, where it ends).
    Further call blobs after it (up to MORE_LIMIT) count in its `extra`: they are ignored, and
    the reader says so."""
    found = _first_blob(text, labeled=labeled)
    if found is None:
        return None
    call, start, end = found
    more, pos = 0, end
    for _ in range(MORE_LIMIT):  # bounded: each look is linear
        following = _first_blob(text[pos:], labeled=False)
        if following is None:
            break
        more += isinstance(following[0].name, str) and bool(following[0].name.strip())
        pos += following[2]
    if more:
        call = BlobCall(call.name, call.args, call.thought, call.extra + more)
    return call, start, end


def _first_blob(text: str, *, labeled: bool) -> tuple[BlobCall, int, int] | None:
    """Tries the first bracket, and the bracket before the first tool key if that differs: a
    constant number of linear attempts, so prose full of braces stays linear."""
    first = _OPENING.search(text)
    if first is None:
        return None
    starts = [first.start()]
    key = _TOOL_KEY.search(text)
    if key is not None:
        brace = text.rfind("{", 0, key.start())
        if brace > first.start():
            starts.append(brace)
    for start in starts:
        opening = start
        before = text[:start].rstrip()
        if text[start] == "{" and before.endswith("["):
            opening = len(before) - 1
        found = read_value(text, opening)
        if found is None:
            continue
        call = blob_call(found.value, labeled=labeled)
        if call is not None:
            return call, opening, found.end
    return None
