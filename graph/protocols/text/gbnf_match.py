"""Does a text belong to a GBNF grammar's language? Checked in Python, without llama.cpp.

Why: constrained decoding is what makes a small model's step parse, and it is not free. The
llama.cpp sampler checks the grammar against every token of the vocabulary at every step (Gemma
3 has 262,144 of them): on two cores that is about 65 ms a token, three times the cost of the
token itself. Most steps a few-shot prompted model writes are valid anyway. So a step can be
asked for without the grammar first and kept when the grammar accepts it, and asked for again
under the grammar only when it does not (`LocalCompletionModel.lazy_grammar`); llama.cpp's own
"lazy grammar" rests on the same observation.

How: the grammars this project writes (`grammar.py`) are never recursive (nested JSON is
bounded by depth), so each one is a regular language, and the rules expand, inline, into one
Python regular expression. Recursive rules, or syntax outside the subset below, give `None`:
the caller then cannot check and should constrain the request itself.

Subset: one or more `name ::= body` rules (a body may continue on following lines); string
literals with `\\n \\r \\t \\\\ \\" \\xHH \\uHHHH` escapes; character classes, negated or not,
with ranges and the same escapes; rule references; groups; `|`; and the postfix operators
`* + ? {m} {m,} {m,n}`; `#` comments.
"""

from __future__ import annotations

import re
from functools import lru_cache

ROOT = "root"

_RULE_START = re.compile(r"^([A-Za-z0-9_-]+)\s*::=", re.MULTILINE)
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"} | {c: c for c in '\\"[]-^/'}


class Unsupported(ValueError):
    """The grammar is recursive or uses syntax this reader does not know."""


def grammar_pattern(grammar: str) -> re.Pattern[str] | None:
    """The compiled regular expression equivalent to `grammar`'s `root`, or None when the
    grammar is recursive or outside the supported subset (see the module docstring)."""
    return _pattern_cached(grammar)


def grammar_accepts(grammar: str, text: str) -> bool | None:
    """True/False: whether `text`, whole, is in the grammar's language; None: cannot tell."""
    pattern = grammar_pattern(grammar)
    return None if pattern is None else pattern.fullmatch(text) is not None


@lru_cache(maxsize=64)
def _pattern_cached(grammar: str) -> re.Pattern[str] | None:
    try:
        return re.compile(_Translator(_rules(grammar)).rule(ROOT), re.DOTALL)
    except (Unsupported, re.error, RecursionError):
        return None


def _rules(grammar: str) -> dict[str, str]:
    text = "\n".join(_without_comment(line) for line in grammar.split("\n"))
    starts = list(_RULE_START.finditer(text))
    rules = {}
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        rules[match.group(1)] = text[match.end() : end].strip()
    if ROOT not in rules:
        raise Unsupported("no root rule")
    return rules


def _without_comment(line: str) -> str:
    """The line up to a `#` that is outside literals and classes."""
    quoted = bracket = escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quoted:
            quoted = char != '"'
        elif bracket:
            bracket = char != "]"
        elif char == '"':
            quoted = True
        elif char == "[":
            bracket = True
        elif char == "#":
            return line[:index]
    return line


class _Translator:
    """Rule bodies to regex source, expanding references inline (refusing cycles)."""

    def __init__(self, rules: dict[str, str]) -> None:
        self.rules = rules
        self.done: dict[str, str] = {}
        self.active: set[str] = set()

    def rule(self, name: str) -> str:
        if name in self.done:
            return self.done[name]
        if name not in self.rules:
            raise Unsupported(f"undefined rule {name}")
        if name in self.active:
            raise Unsupported(f"recursive rule {name}")
        self.active.add(name)
        source, end = self.alternatives(self.rules[name], 0)
        if end != len(self.rules[name]):
            raise Unsupported(f"cannot read rule {name}")
        self.active.discard(name)
        self.done[name] = f"(?:{source})"
        return self.done[name]

    def alternatives(self, body: str, at: int) -> tuple[str, int]:
        branches = []
        while True:
            branch, at = self.sequence(body, at)
            branches.append(branch)
            at = _skip_space(body, at)
            if at < len(body) and body[at] == "|":
                at += 1
                continue
            return "|".join(branches), at

    def sequence(self, body: str, at: int) -> tuple[str, int]:
        items = []
        while True:
            at = _skip_space(body, at)
            if at >= len(body) or body[at] in "|)":
                return "".join(items), at
            atom, at = self.atom(body, at)
            items.append(atom + _quantifier(body, at))
            at = _after_quantifier(body, at)

    def atom(self, body: str, at: int) -> tuple[str, int]:
        char = body[at]
        if char == '"':
            text, at = _literal(body, at + 1)
            return f"(?:{re.escape(text)})", at
        if char == "[":
            return _char_class(body, at + 1)
        if char == "(":
            inner, at = self.alternatives(body, at + 1)
            if at >= len(body) or body[at] != ")":
                raise Unsupported("unclosed group")
            return f"(?:{inner})", at + 1
        name = _NAME.match(body, at)
        if name is None:
            raise Unsupported(f"unexpected {char!r}")
        return self.rule(name.group()), name.end()


def _skip_space(body: str, at: int) -> int:
    while at < len(body) and body[at].isspace():
        at += 1
    return at


def _quantifier(body: str, at: int) -> str:
    if at < len(body) and body[at] in "*+?":
        return body[at]
    repeat = _REPEAT.match(body, at)
    return repeat.group() if repeat else ""


def _after_quantifier(body: str, at: int) -> int:
    if at < len(body) and body[at] in "*+?":
        return at + 1
    repeat = _REPEAT.match(body, at)
    return repeat.end() if repeat else at


def _escape(body: str, at: int) -> tuple[str, int]:
    """The character escaped at `body[at]` (just after a backslash), and where it ends."""
    code = body[at : at + 1]
    if code in ("x", "u", "U"):
        width = {"x": 2, "u": 4, "U": 8}[code]
        digits = body[at + 1 : at + 1 + width]
        if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise Unsupported(f"bad escape \\{code}{digits}")
        return chr(int(digits, 16)), at + 1 + width
    if code in _ESCAPES:
        return _ESCAPES[code], at + 1
    raise Unsupported(f"unknown escape \\{code}")


def _literal(body: str, at: int) -> tuple[str, int]:
    out = []
    while at < len(body):
        char = body[at]
        if char == '"':
            return "".join(out), at + 1
        if char == "\\":
            decoded, at = _escape(body, at + 1)
            out.append(decoded)
        else:
            out.append(char)
            at += 1
    raise Unsupported("unclosed string literal")


def _char_class(body: str, at: int) -> tuple[str, int]:
    negated = at < len(body) and body[at] == "^"
    at += negated
    parts = []
    while at < len(body) and body[at] != "]":
        low, at = _class_char(body, at)
        if body[at : at + 1] == "-" and body[at + 1 : at + 2] not in ("]", ""):
            high, at = _class_char(body, at + 1)
            parts.append(f"{_class_escape(low)}-{_class_escape(high)}")
        else:
            parts.append(_class_escape(low))
    if at >= len(body):
        raise Unsupported("unclosed character class")
    return f"[{'^' if negated else ''}{''.join(parts)}]", at + 1


def _class_char(body: str, at: int) -> tuple[str, int]:
    if body[at] == "\\":
        return _escape(body, at + 1)
    return body[at], at + 1


def _class_escape(char: str) -> str:
    return f"\\U{ord(char):08x}"
