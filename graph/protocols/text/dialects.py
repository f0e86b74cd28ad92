"""Tool calls written in markup instead of labels.

* XML tags: LangChain's XML agent (`<tool>search</tool><tool_input>x</tool_input>`,
  `<final_answer>...</final_answer>`), `<tool_name>` / `<arguments>` with `<arg key="k">`
  children (dspy-go), `<function=name>{...}</function>` (Llama 3.1) and
  `<invoke name="x"><parameter name="k">v</parameter></invoke>`. Entities are unescaped.
* Inference-server tokens leaked as text: Kimi's `<|tool_call_begin|>functions.name:0
  <|tool_call_argument_begin|>{...}<|tool_call_end|>` becomes `Action:` / `Action Input:`
  lines, and any other `<|...|>` token (`<|im_end|>`, `<|eot_id|>`) is dropped.

Every search here is a bounded number of regular-expression searches or `str.find` calls, so
the cost stays linear in the reply.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from graph.protocols.text.blobs import MISSING
from graph.protocols.text.harmony import labelled_before, translate_harmony

_OPEN_SOURCE = (
    r"<(?=[aftpi])(?P<tag>final_answer|tool_name|tool_input|tool|action_input|arguments"
    r"|parameters|args|function|invoke)(?P<attrs>=[^<>\s]+|\s[^<>]*)?>"
)
_OPEN = re.compile(_OPEN_SOURCE)  # searched in the lower-cased text: much faster than IGNORECASE
_OPEN_ANY_CASE = re.compile(_OPEN_SOURCE, re.IGNORECASE)  # when lower-casing changes lengths
_ROLE = {
    "final_answer": "final",
    "tool": "name",
    "tool_name": "name",
    "tool_input": "args",
    "action_input": "args",
    "arguments": "args",
    "parameters": "args",
    "args": "args",
    "function": "call",
    "invoke": "call",
}
_NAME_ATTR = re.compile(r"""^=\s*["']?([^"'\s>]+)|\bname\s*=\s*["']([^"']+)["']""")
_NAMED_CHILD = re.compile(
    r"""<(arg|argument|parameter|param)\s+(?:key|name)\s*=\s*["']([^"']+)["']\s*>(.*?)</\1\s*>""",
    re.DOTALL | re.IGNORECASE,
)
_PLAIN_CHILD = re.compile(r"\s*<([A-Za-z_][\w-]*)>(.*?)</\1>\s*", re.DOTALL)
_CHILD_LIMIT = 20_000
_KIMI_CALL = "<|tool_call_begin|>"
_KIMI_ARGS = "<|tool_call_argument_begin|>"
_KIMI_END = "<|tool_call_end|>"
_KIMI_NAME = re.compile(r"\s*(?:functions\.)?(?P<name>[^\s:<]+)(?::\d+)?\s*$")
# chat-template tokens servers leak into replies (Qwen, Llama 3, gpt-oss, Kimi, Phi), removed
# where they leak: around the reply and on lines of their own. Elsewhere `<|...|>` is text
# (it may be inside an argument).
_TOKEN = (
    r"<\|(?:im_start|im_end|im_sep|eot_id|eom_id|start_header_id|end_header_id|python_tag"
    r"|begin_of_text|end_of_text|endoftext|end|start|message|channel|return|call|constrain"
    r"|assistant|user|system|tool_calls_section_begin|tool_calls_section_end)\|>"
)
_LEADING_TOKENS = re.compile(rf"(?:\s*{_TOKEN}(?:[ \t]*(?:assistant|user|system)\b)?)+")
_TRAILING_TOKEN = re.compile(_TOKEN)
_TOKEN_LINES = re.compile(rf"^[ \t]*{_TOKEN}(?:[ \t]*{_TOKEN})*[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class MarkupCall:
    """A call or an answer written in tags. `args` is MISSING when no argument tag exists."""

    start: int  # where the markup begins: text before it is the thought
    name: str | None
    args: Any = MISSING
    answer: str | None = None


def read_markup(text: str) -> MarkupCall | None:
    """The first call or final answer written in XML-like tags, or None."""
    low = text.lower()
    same = len(low) == len(text)
    hay, opening = (low, _OPEN) if same else (text, _OPEN_ANY_CASE)
    first = opening.search(hay)
    if first is None:
        return None
    found: dict[str, tuple[int, str, str]] = {}  # role -> (start, content, name attribute)
    for count, match in enumerate(opening.finditer(hay, first.start())):
        tag, role = match.group("tag").lower(), _ROLE[match.group("tag").lower()]
        if count > 24 or (role == "call" and "name" in found):
            break
        if role in found:
            continue
        closing = re.compile(rf"</{tag}\s*>", 0 if same else re.IGNORECASE).search(hay, match.end())
        content = text[match.end() : closing.start() if closing else len(text)]
        attrs = text[match.start("attrs") : match.end("attrs")] if match.group("attrs") else ""
        attribute = _NAME_ATTR.search(attrs)
        name = next((g for g in attribute.groups() if g), "") if attribute else ""
        if role == "call" and not name:
            role, name = "name", ""  # `<function>search</function>`: the tag holds the name
        found.setdefault(role, (match.start(), content, name))
    final, named, call = found.get("final"), found.get("name"), found.get("call")
    calls = [c for c in (named, call) if c is not None]
    start = min(c[0] for c in calls) if calls else None
    if final is not None and (start is None or final[0] < start):
        return MarkupCall(final[0], None, answer=html.unescape(final[1]).strip())
    if named is not None:
        args = found["args"][1] if "args" in found else (call[1] if call else None)
        return MarkupCall(named[0], html.unescape(named[1]).strip(), _arguments(args))
    if call is not None:
        args = found["args"][1] if "args" in found else call[1]
        return MarkupCall(call[0], call[2], _arguments(args))
    return MarkupCall(found["args"][0], None) if "args" in found else None


def _arguments(content: str | None) -> Any:
    """Arguments in tags: named children (`<arg key="k">v</arg>`), plain children
    (`<city>Paris</city>`), or text (JSON, or a value for a one-argument tool)."""
    if content is None or not content.strip():
        return MISSING
    if len(content) <= _CHILD_LIMIT:
        named = _NAMED_CHILD.findall(content)
        if named:
            return {key: html.unescape(value.strip()) for _, key, value in named}
        plain = _plain_children(content)
        if plain:
            return plain
    return html.unescape(content).strip()


def _plain_children(content: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(content):
        match = _PLAIN_CHILD.match(content, pos)
        if match is None:
            return None if content[pos:].strip() else out or None
        out[match.group(1)] = html.unescape(match.group(2).strip())
        pos = match.end()
    return out or None


def translate_tokens(text: str) -> str:
    """Harmony channels (gpt-oss) and Kimi-style tool-call tokens as labels; other special
    tokens removed."""
    text = translate_harmony(text)
    if "<|" not in text:
        return text
    if _KIMI_CALL in text and not labelled_before(text, text.find(_KIMI_CALL)):
        parts, pos = [], 0
        while (begin := text.find(_KIMI_CALL, pos)) != -1:
            args_at = text.find(_KIMI_ARGS, begin)
            end = text.find(_KIMI_END, args_at) if args_at != -1 else -1
            name = _KIMI_NAME.match(text, begin + len(_KIMI_CALL), max(args_at, begin))
            if args_at == -1 or name is None:
                break
            end = len(text) if end == -1 else end
            arguments = text[args_at + len(_KIMI_ARGS) : end].strip()
            parts.append(text[pos:begin])
            parts.append(f"\nAction: {name.group('name')}\nAction Input: {arguments}\n")
            pos = end + len(_KIMI_END)
        text = "".join(parts) + text[pos:]
    return _strip_leaked(text)


def _strip_leaked(text: str) -> str:
    """Without the special tokens around the reply and on lines of their own."""
    leading = _LEADING_TOKENS.match(text)
    text = text[leading.end() :] if leading else text
    end = _space_before(text, len(text))
    while text.endswith("|>", 0, end):  # a run of trailing tokens, one cheap step each
        start = text.rfind("<|", max(0, end - 40), end)
        if start == -1 or not _TRAILING_TOKEN.fullmatch(text, start, end):
            break
        end = _space_before(text, start)
    text = text[:end]
    return _TOKEN_LINES.sub("", text) if "\n" in text else text


def _space_before(text: str, end: int) -> int:
    """Where the whitespace that ends `text[:end]` begins (in chunks: no per-character loop)."""
    while end > 0 and text[end - 1].isspace():
        chunk = text[max(0, end - 256) : end]
        kept = chunk.rstrip()
        end -= len(chunk) - len(kept)
        if kept:
            break
    return end
