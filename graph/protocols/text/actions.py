"""What an `Action:` line says: a tool name as written and its raw input.

Shapes read from one line when no `Action Input:` follows: `name(args)`, the ReAct paper's
`Search[query]`, `name {json}`, `name: input`, or a name with the input on the lines below.
A space before `(` that holds no JSON marks a description (`search (web search)`), not
arguments. Names keep their inner spaces (`SQL query`) and lose only decoration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graph.protocols.text.arguments import EMPTY_INPUTS, CallArgs, call_value, unquote, unwrap
from graph.protocols.text.blobs import MISSING, BlobCall, find_blob, read_object
from graph.protocols.text.dialects import read_markup
from graph.protocols.text.labels import ACTION, FINAL, INPUT
from graph.protocols.text.layout import Layout

_KEY = re.compile(r"[\W_]+")
# names that mean "answer", not a tool (unless a tool has the name)
FINAL_NAMES = frozenset(("finalanswer", "finish", "final", "answer", "finalresponse", "最终答案"))
# names that mean "no tool at all" (unless a tool has the name)
NO_TOOL = frozenset(
    ("none", "na", "null", "nil", "nothing", "noaction", "notool", "noneneeded", "notapplicable",
     "notoolneeded", "noactionneeded", "noactionrequired", "notoolrequired", "无", "没有", "不需要")
)  # fmt: skip
_CALL_OPEN = re.compile(r"[(\[]")
_CLOSING = {"(": ")", "[": "]"}
_NAME_CHARS = re.compile(r"[^\s:：{}()\[\]\"]+(?:[ \t][^\s:：{}()\[\]\"]+)*")
_NAME_LIMIT = 122  # where a name's end is looked for on a line
_INPUT_INLINE = re.compile(r"[ \t](?:\*\*)?(?:action|tool)[ \t_-]*input(?:\*\*)?[ \t]*[:：]", re.I)
_BLOB_SHAPE = '{"action": "<tool name>", "action_input": {...}}'
NO_NAME = "the Action names no tool; write `Action: <tool name>`"
NAME_MAX = 80  # characters; longer is a sentence, not a name
NAME_WORDS = 6  # words; the longest real tool names have four or five


def key(name: str) -> str:
    """A name reduced to lower-case letters and digits, for comparisons."""
    return _KEY.sub("", name.lower())


@dataclass
class Action:
    """A tool name as written and the raw input: MISSING, text, CallArgs or a decoded value."""

    name: str
    raw: Any = MISSING
    bare: bool = False  # only a name: no input anywhere, no call shape
    extra: int = 0  # further calls inside a blob
    thought: str = ""
    next_index: int = 0  # the first section after the ones this action used
    line_only: bool = False  # read from its Action line alone (a call shape): lines below unread


def clean_name(written: str) -> str:
    """A tool name without decoration: quotes, backticks, brackets, bold, a trailing `()` or
    description in parentheses, trailing punctuation. Far longer than a name can be: no name
    (a sentence is kept: the reader says it is no tool's name)."""
    if len(written) > 400:
        return ""
    name = written.strip().strip("*`'\"").strip()
    if len(name) > 2 and name[0] + name[-1] in ("[]", "<>", "()", "{}"):
        name = name[1:-1].strip()
    if name.endswith(")") and (cut := name.rfind("(")) > 0 and ")" not in name[cut:-1]:
        name = name[:cut].rstrip()
    name = name.rstrip(".,;:!?。，；：").strip().strip("*`'\"[]<>").strip()
    return name if "\n" not in name else ""


def is_sentence(name: str) -> bool:
    """Too long, in characters or words, for a tool's name."""
    return len(name) > NAME_MAX or len(name.split()) > NAME_WORDS


def not_a_name(name: str, tools: Sequence[str]) -> str:
    """The error for an Action line that holds a sentence where the tool's name belongs."""
    listed = f"; the tools are: {', '.join(tools)}" if tools else ""
    return f"the Action must be only a tool's name, not a sentence ({name[:60]!r}...){listed}"


def section_action(layout: Layout, index: int) -> Action | str:
    """What the Action section at `index` says, with the Action Input that follows it (before
    any other Action or Final Answer); a string is the error to report."""
    items = layout.items
    body = layout.body(items[index])
    stripped = body.strip()
    input_index = None
    for j in range(index + 1, len(items)):
        if items[j].kind in (ACTION, FINAL):
            break
        if items[j].kind == INPUT:
            input_index = j
            break
    next_index = (input_index if input_index is not None else index) + 1
    if stripped.startswith(("```", "{", "[")) and "{" in stripped[:40]:
        found = find_blob(body, labeled=True)
        if found is not None:
            return blob_action(found[0], next_index)
        if stripped.lstrip("`json \n").startswith(("{", "[")):
            return f"the Action JSON has no tool name; expected {_BLOB_SHAPE}"
    if stripped.startswith("```") and "\n" not in (inner := unwrap(stripped)):
        stripped = inner  # the name alone in a fence
    markup = read_markup(stripped) if stripped.startswith("<") else None
    if markup is not None and markup.name:
        return Action(clean_name(markup.name), markup.args, next_index=next_index)
    line, _, rest = stripped.partition("\n")
    inline = _INPUT_INLINE.search(line)
    if inline is not None and input_index is None:
        rest = line[inline.end() :] + ("\n" + rest if rest else "")
        line = line[: inline.start()]
    line = line.strip().strip("*").strip()
    if input_index is not None:
        name = clean_name(line)
        raw = layout.body(items[input_index])
        return Action(name, raw, next_index=next_index) if name else NO_NAME
    action = split_call(line, rest)
    if action is None:
        return NO_NAME
    action.next_index = next_index
    return action


def blob_action(call: BlobCall, next_index: int) -> Action | str:
    """The action a JSON blob describes; a string is the error to report."""
    if not isinstance(call.name, str) or not clean_name(call.name):
        return f"the Action JSON has no tool name; expected {_BLOB_SHAPE}"
    return Action(clean_name(call.name), call.args, extra=call.extra, thought=call.thought,
                  next_index=next_index)  # fmt: skip


def split_call(line: str, rest: str) -> Action | None:
    """The name and input of an Action line that has no Action Input section."""
    opening = _CALL_OPEN.search(line, 0, _NAME_LIMIT)
    if opening is not None and line.endswith(_CLOSING[opening.group()]):
        head, args = line[: opening.start()], line[opening.end() : -1].strip()
        spaced = head[-1:] in (" ", "\t")
        if not (spaced and opening.group() == "(" and not args.startswith("{")):
            name = clean_name(head)
            if name and _NAME_CHARS.fullmatch(name):
                raw: Any = CallArgs(args) if opening.group() == "(" else args
                return Action(name, raw if args else MISSING, line_only=True)
    for separator in ("{", ":", "："):
        cut = line.find(separator, 0, _NAME_LIMIT)
        if cut <= 0 or (separator != "{" and "{" in line[:cut]):
            continue
        head, value = line[:cut], line[cut if separator == "{" else cut + 1 :].strip()
        if separator == "{" and head[-1:] not in (" ", "\t"):
            continue
        name = clean_name(head)
        if name and value and _NAME_CHARS.fullmatch(name):
            return Action(name, (value + ("\n" + rest if rest.strip() else "")).strip())
    name = clean_name(line)
    if not name:
        return None
    if rest.strip():
        return Action(name, rest.strip())
    return Action(name, MISSING, bare=True)


def plain_input(raw: Any) -> dict[str, Any] | str:
    """An input when the tools are unknown: an object when it holds one, else the text."""
    if isinstance(raw, CallArgs):
        raw = call_value(raw, None)
    if raw is MISSING or raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        value = unwrap(raw)
        if value.startswith("{"):
            obj = read_object(value)
            return obj if obj is not None else value
        return value if value.lower() not in ("", "none", "null") else {}
    return json.dumps(raw, ensure_ascii=False)


def answer_text(raw: Any) -> str:
    """The answer carried by a final-answer action (`Finish[...]`, a blob, an input)."""
    if raw is MISSING or raw is None:
        return ""
    if isinstance(raw, CallArgs):
        raw = call_value(raw, None)
    if isinstance(raw, dict):
        for field in ("answer", "final_answer", "output", "text", "response", "result"):
            if isinstance(raw.get(field), str):
                return raw[field]
        if len(raw) == 1 and isinstance(only := next(iter(raw.values())), str):
            return only
    if isinstance(raw, str):
        return unquote(raw)
    return json.dumps(raw, ensure_ascii=False)


def prose_after(raw: Any) -> str:
    """What an Action that names no tool says after it, without `None`-like input lines."""
    if not isinstance(raw, str):
        return ""
    lines = [
        line
        for line in raw.splitlines()
        if not (line.strip() and line.strip().lower() in EMPTY_INPUTS)
    ]
    return unwrap("\n".join(lines))
