"""A forgiving parser for the text ReAct protocol: reply text in, one typed step out.

Models without function calling write their step as text (Thought / Action / Action Input /
Final Answer). Real replies drift from the format: JSON blobs in fences, `Action: tool: input`
lines, full-width colons, markdown bold, `<think>` blocks, a made-up `Observation:` tail, broken
JSON. The parser accepts all of that and, when it cannot, returns `kind="error"` with a short
reason that the agent sends back to the model as the observation.

Decisions a reply can make ambiguous:

* An Action and a Final Answer in one reply: the earliest one wins. An answer written after an
  action was written before the tool ran, so it is ignored; an action after an answer is noise.
* Several actions in one reply: the first runs; `note` tells the model the rest were ignored,
  since the protocol is one action per reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import json_repair

Kind = Literal["action", "final", "error"]


@dataclass(frozen=True)
class ReactStep:
    """One parsed reply: an action to run, a final answer, or a parse error."""

    kind: Kind
    thought: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] | str | None = None
    answer: str | None = None
    error: str | None = None
    note: str | None = None


_TOOL_KEYS = ("action", "tool", "name", "tool_name")
_INPUT_KEYS = ("action_input", "tool_input", "input", "arguments", "args", "parameters")

# Keyword at the start of a line: any case, optional markdown decoration, half/full-width colon.
_LINE_KEYWORD = re.compile(
    r"^[ \t]*(?:[-*>#]+[ \t]*)*(?:\*\*|__)?[ \t]*"
    r"(?P<kw>thought|action[ \t]+input|action|final[ \t]+answer|answer)"
    r"[ \t]*(?:\*\*|__)?[ \t]*[:：][ \t]*(?:\*\*|__)?",
    re.IGNORECASE | re.MULTILINE,
)
# Keyword in the middle of a line: only the exact capitalisation, after whitespace.
_INLINE_KEYWORD = re.compile(
    r"(?<=\s)(?:\*\*)?(?P<kw>Thought|Action Input|Action|Final Answer)(?:\*\*)?[ \t]*[:：][ \t]*"
    r"(?:\*\*)?"
)
_OBSERVATION = re.compile(r"^[ \t]*(?:\*\*)?observation(?:\*\*)?[ \t]*[:：]", re.I | re.M)
_TRAILING_BARE_OBSERVATION = re.compile(r"\n[ \t]*(?:\*\*)?observation(?:\*\*)?[ \t]*\Z", re.I)
_PAUSE_LINE = re.compile(r"^[ \t]*PAUSE[ \t]*$", re.MULTILINE)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_TOOL_KEY = re.compile(r"""["']?(?:%s)["']?\s*:""" % "|".join(_TOOL_KEYS))  # noqa: UP031
_BLOB_SHAPE = '{"action": ..., "action_input": ...}'
_NAME_COLON_INPUT = re.compile(r"^(?P<name>[\w.\-]+)[ \t]*[:：][ \t]*(?P<input>.+)$", re.DOTALL)
_NAME_CALL = re.compile(r"^(?P<name>[A-Za-z_][\w.\-]*)\((?P<input>.*)\)$", re.DOTALL)


@dataclass(frozen=True)
class _Section:
    keyword: str  # normalised: thought | action | action input | final answer | answer
    start: int  # where the keyword begins
    body: str


def parse_react(text: str) -> ReactStep:
    """Parse one model reply in the text ReAct protocol; never raises."""
    try:
        return _parse(text if isinstance(text, str) else str(text))
    except Exception as exc:  # a safety net: the agent must survive any reply
        return ReactStep(kind="error", error=f"the reply could not be read ({exc})")


def clean_reply(text: str) -> str:
    """The part of a reply the model was entitled to write: no think blocks, no made-up tail."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _THINK_BLOCK.sub("", text)
    if "</think>" in text.lower():
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    text = re.sub(r"</?think>", "", text, flags=re.IGNORECASE)
    match = _OBSERVATION.search(text)
    if match:
        text = text[: match.start()]
    text = _TRAILING_BARE_OBSERVATION.sub("", text.rstrip())
    return _PAUSE_LINE.sub("", text).strip()


def _parse(raw: str) -> ReactStep:
    text = clean_reply(raw)
    if not text:
        return ReactStep(kind="error", error="the reply is empty")
    sections, preamble = _split(text)
    thought = _thought(sections, preamble)
    decisions = [s for s in sections if s.keyword in ("action", "final answer", "answer")]
    if not decisions:
        if any(s.keyword == "action input" for s in sections):
            return ReactStep(kind="error", thought=thought, error="Action Input without an Action")
        blob_step = _bare_blob(text, thought)
        if blob_step is not None:
            return blob_step
        if sections:
            return ReactStep(
                kind="error", thought=thought, error="no Action or Final Answer after the Thought"
            )
        return ReactStep(kind="error", thought=thought, error="no Action or Final Answer found")
    first = decisions[0]
    if first.keyword in ("final answer", "answer"):
        answer = first.body.strip()
        if not answer:
            return ReactStep(kind="error", thought=thought, error="the Final Answer is empty")
        return ReactStep(kind="final", thought=thought, answer=answer)
    actions = [s for s in decisions if s.keyword == "action"]
    extra = len(actions) - 1
    step = _action(first, sections, thought)
    if step.kind == "action" and extra > 0:
        plural = "action was" if extra == 1 else "actions were"
        note = f"{extra} more {plural} ignored: send one Action per reply."
        return ReactStep(step.kind, step.thought, step.tool, step.tool_input, note=note)
    return step


def _split(text: str) -> tuple[list[_Section], str]:
    """Cut the text into keyword sections; return them and the prose before the first one."""
    marks: list[tuple[int, int, str]] = []
    for match in _LINE_KEYWORD.finditer(text):
        marks.append((match.start(), match.end(), _norm(match.group("kw"))))
    taken = [(start, end) for start, end, _ in marks]
    for match in _INLINE_KEYWORD.finditer(text):
        if not any(
            start <= match.start() < end or match.start() <= start < match.end()
            for start, end in taken
        ):
            marks.append((match.start(), match.end(), _norm(match.group("kw"))))
    marks = _outside_json(sorted(marks), text)
    sections = []
    for index, (start, end, keyword) in enumerate(marks):
        stop = marks[index + 1][0] if index + 1 < len(marks) else len(text)
        sections.append(_Section(keyword, start, text[end:stop]))
    preamble = text[: marks[0][0]] if marks else text
    return sections, preamble.strip()


def _outside_json(marks: list[tuple[int, int, str]], text: str) -> list[tuple[int, int, str]]:
    """Drop keywords that sit inside a fenced block (e.g. `"action": ...` never matches, but
    prose inside a fence can look like a keyword)."""
    fences = [(m.start(), m.end()) for m in re.finditer(r"```.*?(?:```|\Z)", text, re.DOTALL)]
    return [m for m in marks if not any(a < m[0] < b for a, b in fences)]


def _norm(keyword: str) -> str:
    return " ".join(keyword.lower().split())


def _thought(sections: list[_Section], preamble: str) -> str:
    for section in sections:
        if section.keyword == "thought":
            return section.body.strip()
    return preamble


def _action(section: _Section, sections: list[_Section], thought: str) -> ReactStep:
    body = section.body.strip()
    following = sections[sections.index(section) + 1 :]
    action_input = next(
        (s for s in following if s.keyword == "action input"),
        None,
    )
    blob_text = _blob_text(body)
    if blob_text is not None:
        return _from_blob(blob_text, thought)
    first_line, _, rest = body.partition("\n")
    candidate = first_line.strip()
    if action_input is not None and not _is_decision_between(section, action_input, sections):
        name = _clean_name(candidate)
        if not name:
            return ReactStep(kind="error", thought=thought, error="the Action names no tool")
        return _act(thought, name, _input_value(action_input.body))
    match = _NAME_COLON_INPUT.match(candidate) or _NAME_CALL.match(candidate)
    if match and _clean_name(match.group("name")):
        value = (match.group("input") + ("\n" + rest if rest.strip() else "")).strip()
        return _act(thought, _clean_name(match.group("name")), _input_value(value))
    name = _clean_name(candidate)
    if not name:
        return ReactStep(kind="error", thought=thought, error="the Action names no tool")
    if rest.strip():
        return _act(thought, name, _input_value(rest))
    return _act(thought, name, {})


def _is_decision_between(first: _Section, second: _Section, sections: list[_Section]) -> bool:
    """True when another Action or answer stands between an Action and an Action Input."""
    between = sections[sections.index(first) + 1 : sections.index(second)]
    return any(s.keyword in ("action", "final answer", "answer") for s in between)


def _act(thought: str, tool: str, tool_input: dict[str, Any] | str) -> ReactStep:
    return ReactStep(kind="action", thought=thought, tool=tool, tool_input=tool_input)


def _blob_text(body: str) -> str | None:
    """The JSON text of a blob that opens the Action body (fenced or bare), if there is one."""
    stripped = body.lstrip()
    if stripped.startswith("```"):
        match = _FENCE.match(stripped)
        inner = match.group(1).strip() if match else ""
        return inner if _looks_like_blob(inner) else None
    if _looks_like_blob(stripped):
        return stripped
    return None


def _looks_like_blob(text: str) -> bool:
    return text.startswith("{") or re.match(r"\[\s*\{", text) is not None


def _bare_blob(text: str, thought: str) -> ReactStep | None:
    """A JSON blob with an action key and no `Action:` keyword (the JSON-agent style)."""
    for match in _FENCE.finditer(text):
        inner = match.group(1).strip()
        if inner.startswith("{") and _has_tool_key(inner):
            return _from_blob(inner, _prose_before(text, match.start(), thought))
    start = text.find("{")
    if start != -1 and _has_tool_key(text[start:]):
        return _from_blob(text[start:], _prose_before(text, start, thought))
    return None


def _prose_before(text: str, index: int, thought: str) -> str:
    return thought if thought and thought != text else text[:index].strip()


def _has_tool_key(text: str) -> bool:
    return _TOOL_KEY.search(text) is not None


def _from_blob(blob: str, thought: str) -> ReactStep:
    value = _loads(blob, strict_prefix=True)
    if isinstance(value, list):
        blobs = [v for v in value if isinstance(v, dict)]
        if not blobs:
            return ReactStep(kind="error", thought=thought, error=f"expected {_BLOB_SHAPE}")
        step = _from_blob_value(blobs[0], thought)
        if step.kind == "action" and len(blobs) > 1:
            extra = len(blobs) - 1
            plural = "action was" if extra == 1 else "actions were"
            note = f"{extra} more {plural} ignored: send one Action per reply."
            return ReactStep(step.kind, step.thought, step.tool, step.tool_input, note=note)
        return step
    if not isinstance(value, dict):
        return ReactStep(
            kind="error",
            thought=thought,
            error=f"the Action JSON could not be read; expected {_BLOB_SHAPE}",
        )
    return _from_blob_value(value, thought)


def _from_blob_value(value: dict[str, Any], thought: str) -> ReactStep:
    tool = next((value[k] for k in _TOOL_KEYS if isinstance(value.get(k), str)), None)
    raw_input = next((value[k] for k in _INPUT_KEYS if k in value), {})
    if tool is not None and _norm(tool) == "final answer":
        answer = raw_input if isinstance(raw_input, str) else _dumps(raw_input)
        if not answer.strip():
            return ReactStep(kind="error", thought=thought, error="the Final Answer is empty")
        return ReactStep(kind="final", thought=thought, answer=answer.strip())
    if tool is None or not _clean_name(tool):
        return ReactStep(
            kind="error",
            thought=thought,
            error=f"the Action JSON has no tool name; expected {_BLOB_SHAPE}",
        )
    return _act(thought, _clean_name(tool), _coerce_input(raw_input))


def _coerce_input(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    if isinstance(raw, str):
        inner = raw.strip()
        if inner.startswith("{"):
            value = _loads(inner)
            if isinstance(value, dict):
                return value
        return inner
    return _dumps(raw)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _input_value(text: str) -> dict[str, Any] | str:
    """An Action Input: a dict when it holds a JSON object, else the plain stripped string."""
    value = text.strip()
    fenced = _FENCE.match(value) if value.startswith("```") else None
    if fenced:
        value = fenced.group(1).strip()
    if value.startswith("{"):
        parsed = _loads(value)
        if isinstance(parsed, dict):
            return parsed
        return value
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1].strip()
    return value


def _loads(text: str, *, strict_prefix: bool = False) -> Any:
    """JSON, or the lenient repair of it; None when nothing object-like comes out."""
    candidate = _balanced_prefix(text) or text
    for attempt in (candidate, text):
        try:
            return json.loads(attempt)
        except (ValueError, TypeError):
            continue
    repaired = json_repair.loads(candidate)
    if isinstance(repaired, (dict, list)) and repaired:
        return repaired
    return None if strict_prefix else repaired


def _balanced_prefix(text: str) -> str | None:
    """The first complete {...} or [...] in text (string-aware), so trailing prose is ignored."""
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is None:
        return None
    depth, quote, escaped = 0, "", False
    for index in range(start, len(text)):
        ch = text[index]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return None


def _clean_name(name: str) -> str:
    name = name.strip().strip("`'\"[]()<>*").strip()
    name = name.rstrip(".,;:!?。，；：").strip("`'\"[]*").strip()
    return name if re.fullmatch(r"[\w.\-]+", name) else ""
