"""Reads one text-protocol reply into one step: an action to run, a final answer, or an error.

Models without function calling write Thought / Action / Action Input / Final Answer, and real
replies drift from it: other frameworks' dialects (JSON blobs, `Tool:`, XML tags, the ReAct
paper's `Search[query]`), markdown, Chinese labels, `<think>` blocks, invented observations.
`labels.scan` finds the labelled sections (one table of spellings, linear); this module decides
what the reply means. Every error says what was wrong: it is sent back to the model.

Rules, one per ambiguous situation (each is tested):

* Echo and invention. An `Observation:` before the first other label repeats the last result
  and is skipped; an `Observation:` after one was invented by the model and ends the reply.
* Action and Final Answer in one reply: the earlier one wins. An answer written after an action
  was written before the tool ran, so it is a guess; an action after an answer is noise. One
  exception: an Action that is only a name (no input anywhere, no call shape) directly followed
  by a Final Answer is not a call, the answer wins (the model labelled its last step oddly).
* An Action that names no tool (`None`, `N/A`, `no action`, `无`) is not a call: a later Final
  Answer wins, else the prose after it is the answer, else it is an error.
* An Action without input: with the tools known, fine for a tool without required arguments,
  otherwise an error naming the arguments; without them, the input is `{}`.
* Several actions in one reply: the first runs and `note` says how many were ignored.
* No decision at line starts: labels written mid-line in the protocol's spelling (`... done.
  Final Answer: 42`) are read; then a JSON blob shaped like a call (anywhere), then XML tags
  (`<tool>`, `<tool_input>`, `<final_answer>`).
* A reply without any label (no label word followed by a colon anywhere, no blob, no XML) is
  the final answer, unless it ends with a colon (it announces a step it did not write). A reply
  that uses label words but in no readable place is an error, so the model is corrected
  instead of having a half-formatted step taken as its answer.
* With `tools`, names are resolved and inputs shaped to the tool's schema (`toolset`); a
  final-answer name (`Finish[...]`, `{"action": "Final Answer"}`) that is not a tool answers.
* Replies over 1,000,000 characters are refused.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool

from graph.protocols.text.blobs import MISSING, BlobCall, find_blob, read_object
from graph.protocols.text.labels import (
    ACTION,
    FINAL,
    INPUT,
    OBSERVATION,
    THOUGHT,
    Scanner,
    Section,
    normalize,
    split_midline,
)
from graph.protocols.text.toolset import CallArgs, Toolset, call_value, unwrap

Kind = Literal["action", "final", "error"]
MAX_REPLY = 1_000_000


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


ToolsArg = Sequence[BaseTool | str | Mapping[str, Any]] | None

_BLOB_SHAPE = '{"action": "<tool name>", "action_input": {...}}'
_KEY = re.compile(r"[\W_]+")
_FINAL_NAMES = frozenset(("finalanswer", "finish", "final", "answer", "finalresponse", "最终答案"))
_NO_TOOL = frozenset(
    ("none", "na", "null", "nil", "nothing", "noaction", "notool", "noneneeded", "notapplicable",
     "notoolneeded", "noactionneeded", "noactionrequired", "notoolrequired", "无", "没有", "不需要")
)  # fmt: skip
_CALL_OPEN = re.compile(r"[(\[]")
_CLOSING = {"(": ")", "[": "]"}
_NAME_CHARS = re.compile(r"[^\s:：{}()\[\]\"]+(?:[ \t][^\s:：{}()\[\]\"]+)*")
_INPUT_INLINE = re.compile(r"[ \t](?:\*\*)?(?:action|tool)[ \t_-]*input(?:\*\*)?[ \t]*[:：]", re.I)
_FENCE_TAIL = re.compile(r"(?:```[\w-]*|<tool_call>|\[TOOL_CALLS\])\s*$")
_XML_TAG = re.compile(r"<(tool|tool_name|tool_input|final_answer|function=([^>\s]+))>", re.I)


def parse_react(text: str, tools: ToolsArg = None) -> ReactStep:
    """Read one model reply in the text ReAct protocol; never raises.

    `tools` (LangChain tools or names) are the enabled tools: with them, the tool name is
    resolved and the input shaped to its schema; without them, both come back as written."""
    try:
        text = text if isinstance(text, str) else str(text)
        if len(text) > MAX_REPLY:
            return _error(
                f"the reply is {len(text):,} characters long; replies over {MAX_REPLY:,} "
                "characters are not read"
            )
        toolset = Toolset(tools) if tools is not None else None
        return _Reply(text, toolset).read()
    except Exception as exc:  # a safety net: the agent must survive any reply
        return _error(f"the reply could not be read ({type(exc).__name__}: {exc})")


def clean_reply(text: str) -> str:
    """The part of a reply the model was entitled to write: no reasoning block, no `PAUSE`,
    nothing from an invented `Observation:` on (an echoed one at the start is kept)."""
    text = normalize(text)
    scanner = Scanner(text)
    label = scanner.first()
    if label is not None and label.kind == OBSERVATION:
        label = scanner.next_label("step", label.end)
    invented = scanner.next_label("observation", label.end) if label is not None else None
    return text[: invented.start if invented is not None else len(text)].strip()


def _error(message: str, thought: str = "") -> ReactStep:
    return ReactStep(kind="error", thought=thought, error=message)


def _final(answer: str, thought: str) -> ReactStep:
    answer = answer.strip()
    if not answer:
        return _error("the Final Answer is empty", thought)
    return ReactStep(kind="final", thought=thought, answer=answer)


def _key(name: str) -> str:
    return _KEY.sub("", name.lower())


def clean_name(written: str) -> str:
    """A tool name as written, without decoration: quotes, backticks, brackets, bold, a
    trailing `()` or description in parentheses, trailing punctuation. Inner spaces stay.
    Longer than a name can be (or several lines): no name."""
    if len(written) > 400:
        return ""
    name = written.strip().strip("*`'\"").strip()
    if len(name) > 2 and name[0] + name[-1] in ("[]", "<>", "()", "{}"):
        name = name[1:-1].strip()
    if name.endswith(")") and (cut := name.rfind("(")) > 0 and ")" not in name[cut:-1]:
        name = name[:cut].rstrip()
    name = name.rstrip(".,;:!?。，；：").strip().strip("*`'\"[]<>").strip()
    return name if len(name) <= 120 and "\n" not in name else ""


@dataclass
class _Action:
    """What an Action section says: a name as written and the raw input."""

    name: str
    raw: Any = MISSING  # MISSING, text, or a decoded value
    bare: bool = False  # only a name: no input anywhere, no call shape
    extra: int = 0  # further calls inside a blob
    thought: str = ""
    next_index: int = 0  # the first section after the ones this action used


@dataclass
class _Layout:
    """The labelled sections of a reply that matter for its decision."""

    text: str
    scanner: Scanner
    preamble: str  # text before the first label
    thought: Section | None  # the first Thought
    items: list[Section]  # Action / Action Input / Final Answer sections, up to the cut
    labelled: bool  # any label at all (an echoed Observation counts)
    capped: bool  # more sections than the reader looks at

    def body(self, section: Section) -> str:
        return self.text[section.body : section.end]


_MAX_ITEMS = 64  # sections read past the thought; a reply with more is degenerate


def _layout(text: str) -> _Layout:
    """Scan a reply: echoes skipped, further thoughts skipped, cut at an invented Observation.

    Skipping is done by the scanner in one search, so a reply of ten thousand `Thought:`
    lines costs as much as one with two."""
    scanner = Scanner(text)
    label = scanner.first()
    preamble = text[: label.start] if label is not None else text
    labelled = label is not None
    if label is not None and label.kind == OBSERVATION:  # echoed: skipped
        label = scanner.next_label("step", label.end)
    thought: Section | None = None
    items: list[Section] = []
    while label is not None:
        section, following = scanner.section(label)
        if section.kind == OBSERVATION:
            break  # invented by the model: the reply ends here
        if section.kind == THOUGHT:
            thought = thought or section
            label = scanner.next_label("decision", section.body)
            continue
        items.append(section)
        if len(items) >= _MAX_ITEMS:
            return _Layout(text, scanner, preamble.strip(), thought, items, labelled, True)
        label = following
    return _Layout(text, scanner, preamble.strip(), thought, items, labelled, False)


class _Reply:
    def __init__(self, raw: str, toolset: Toolset | None) -> None:
        self.raw = raw
        self.toolset = toolset
        self.thought = ""

    def read(self) -> ReactStep:
        text = normalize(self.raw)
        if not text.strip():
            if "</think" in self.raw.lower():
                return _error("the reply holds only a <think> block; write the step after it")
            return _error("the reply is empty")
        layout = _layout(text)
        step = self._decide(layout)
        if step is None and (split := split_midline(text)) != text:
            split_layout = _layout(split)
            step = self._decide(split_layout)
            if split_layout.items or not layout.labelled:
                layout = split_layout
        return step if step is not None else self._fallback(layout)

    # -- labelled sections ---------------------------------------------------------------

    def _decide(self, layout: _Layout) -> ReactStep | None:
        """The step the line-start labels decide, or None when they decide nothing."""
        items = layout.items
        if not items:
            return None
        decision = next((s for s in items if s.kind in (ACTION, FINAL)), None)
        first = layout.thought
        if first is not None and (decision is None or first.start < decision.start):
            self.thought = layout.body(first).strip()
        else:
            self.thought = layout.preamble
        no_tool: _Action | None = None
        index = 0
        while index < len(items):
            section = items[index]
            if section.kind == FINAL:
                return _final(layout.body(section), self.thought)
            if section.kind != ACTION:
                index += 1
                continue
            action = self._action(layout, index)
            if isinstance(action, ReactStep):
                return action
            if _key(action.name) in _NO_TOOL:
                no_tool = no_tool or action
                index = action.next_index
                continue
            following = next(
                (s for s in items[action.next_index :] if s.kind in (ACTION, FINAL)), None
            )
            if action.bare and following is not None and following.kind == FINAL:
                index = items.index(following)
                continue
            return self._act(action, layout)
        if no_tool is not None:
            prose = no_tool.raw if isinstance(no_tool.raw, str) else ""
            if prose.strip():
                return _final(unwrap(prose), self.thought)
            return _error(
                "the Action names no tool; name one of the tools or give a Final Answer",
                self.thought,
            )
        return None

    def _action(self, layout: _Layout, index: int) -> _Action | ReactStep:
        items, section = layout.items, layout.items[index]
        body = layout.body(section)
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
                return self._blob_action(found[0], next_index)
            if stripped.lstrip("`json \n").startswith(("{", "[")):
                return _error(f"the Action JSON has no tool name; expected {_BLOB_SHAPE}",
                              self.thought)  # fmt: skip
        line, _, rest = stripped.partition("\n")
        inline = _INPUT_INLINE.search(line)
        if inline is not None and input_index is None:
            rest = line[inline.end() :] + ("\n" + rest if rest else "")
            line = line[: inline.start()]
        line = line.strip().strip("*").strip()
        if input_index is not None:
            name = clean_name(line)
            raw = layout.body(items[input_index])
            return _Action(name, raw, next_index=next_index) if name else self._no_name()
        action = _split_call(line, rest)
        if action is None:
            return self._no_name()
        action.next_index = next_index
        return action

    def _no_name(self) -> ReactStep:
        return _error("the Action names no tool; write `Action: <tool name>`", self.thought)

    def _blob_action(self, call: BlobCall, next_index: int) -> _Action | ReactStep:
        if not isinstance(call.name, str) or not clean_name(call.name):
            return _error(f"the Action JSON has no tool name; expected {_BLOB_SHAPE}", self.thought)
        return _Action(clean_name(call.name), call.args, extra=call.extra, thought=call.thought,
                       next_index=next_index)  # fmt: skip

    def _act(self, action: _Action, layout: _Layout | None) -> ReactStep:
        step = self._step(action, action.thought or self.thought)
        extra = action.extra
        capped = False
        if layout is not None:
            extra += sum(1 for s in layout.items[action.next_index :] if s.kind == ACTION)
            capped = layout.capped
        if step.kind == "action" and extra > 0:
            plural = "action was" if extra == 1 else "actions were"
            count = f"at least {extra}" if capped else str(extra)
            note = f"{count} more {plural} ignored: send one Action per reply."
            return ReactStep(step.kind, step.thought, step.tool, step.tool_input, note=note)
        return step

    # -- from a name and a raw input to a step -------------------------------------------

    def _step(self, action: _Action, thought: str) -> ReactStep:
        name, raw, toolset = action.name, action.raw, self.toolset
        tool = toolset.resolve(name) if toolset is not None else None
        if tool is None and _key(name) in _FINAL_NAMES:
            return _final(_answer_text(raw), thought)
        if toolset is None:
            return ReactStep(kind="action", thought=thought, tool=name, tool_input=_plain(raw))
        if tool is None:
            return _error(toolset.unknown(name), thought)
        args, problem = toolset.shape(tool, raw)
        if problem is not None:
            return _error(problem, thought)
        return ReactStep(kind="action", thought=thought, tool=tool, tool_input=args)

    # -- no decision at line starts --------------------------------------------------------

    def _fallback(self, layout: _Layout) -> ReactStep:
        text, first = layout.text, layout.thought
        thought = layout.body(first).strip() if first is not None else layout.preamble
        self.thought = thought
        found = find_blob(text, labeled=False)
        if found is not None:
            call, start, _ = found
            if first is not None and first.body <= start:
                head = text[first.body : min(start, first.end)]
            else:
                head = text[:start]
            head = head.strip()
            tail = _FENCE_TAIL.search(head, max(0, len(head) - 40))
            self.thought = head[: tail.start() if tail else len(head)].strip()
            action = self._blob_action(call, 0)
            return action if isinstance(action, ReactStep) else self._act(action, None)
        step = self._xml(text, first)
        if step is not None:
            return step
        if any(s.kind == INPUT for s in layout.items):
            return _error("Action Input without an Action: write `Action: <tool name>` on the "
                          "line before it", thought)  # fmt: skip
        if layout.labelled:
            return _error("no Action or Final Answer after the Thought", thought)
        call = self._call_line(text)
        if call is not None:
            return call
        if layout.scanner.has_label_word():
            return _error(
                "no Action or Final Answer found: write `Action:` and `Action Input:`, "
                "or `Final Answer:`, at the start of a line"
            )
        if text.rstrip().endswith((":", "：")):
            return _error("no Action or Final Answer found: the reply ends with a colon but "
                          "writes nothing after it")  # fmt: skip
        return _final(text, "")

    def _xml(self, text: str, first: Section | None) -> ReactStep | None:
        opening = _XML_TAG.search(text)
        if opening is None:
            return None
        thought = text[: opening.start()].strip()
        if first is not None and first.body <= opening.start():
            thought = text[first.body : min(opening.start(), first.end)].strip()
        tags: dict[str, tuple[int, str]] = {}
        for count, match in enumerate(_XML_TAG.finditer(text, opening.start())):
            tag = "function" if match.group(2) else match.group(1).lower()
            if count > 16:
                break
            if tag in tags:
                continue
            close = re.compile(rf"</{'function' if match.group(2) else tag}>", re.I)
            end = close.search(text, match.end())
            content = html.unescape(text[match.end() : end.start() if end else len(text)])
            tags[tag] = (match.start(), content)
            if tag == "function":
                tags["tool"] = (match.start(), match.group(2).strip("\"'"))
                tags.setdefault("tool_input", (match.start(), content))
            if len(tags) >= 3:
                break
        tool = tags.get("tool") or tags.get("tool_name")
        final = tags.get("final_answer")
        if final is not None and (tool is None or final[0] < tool[0]):
            return _final(final[1], thought)
        if tool is None:
            return _error("the <tool_input> tag has no <tool> tag naming the tool", thought)
        raw = tags["tool_input"][1] if "tool_input" in tags else MISSING
        return self._step(_Action(clean_name(tool[1]), raw), thought)

    def _call_line(self, text: str) -> ReactStep | None:
        """A reply that is only `tool(...)` or `Tool[...]`, read when it names an enabled tool
        (without the tools, a lone call shape is too often code in an answer)."""
        line = text.strip()
        if self.toolset is None or "\n" in line:
            return None
        action = _split_call(line, "")
        if action is None or action.bare or action.raw is MISSING:
            return None
        tool = self.toolset.resolve(action.name)
        if tool is None or tool.lower() != action.name.lower():
            return None
        return self._step(action, "")


def _split_call(line: str, rest: str) -> _Action | None:
    """An Action line with no Action Input section: `name(args)`, `Name[args]`, `name {json}`,
    `name: input`, or a name with the input on the following lines. A space before `(` that
    holds no JSON marks a description (`search (web search)`), not arguments."""
    opening = _CALL_OPEN.search(line, 0, 122)
    if opening is not None and line.endswith(_CLOSING[opening.group()]):
        head, args = line[: opening.start()], line[opening.end() : -1].strip()
        spaced = head[-1:] in (" ", "\t")
        if not (spaced and opening.group() == "(" and not args.startswith("{")):
            name = clean_name(head)
            if name and _NAME_CHARS.fullmatch(name):
                raw: Any = CallArgs(args) if opening.group() == "(" else args
                return _Action(name, raw if args else MISSING)
    for separator in ("{", ":", "："):
        cut = line.find(separator, 0, 122)
        if cut <= 0 or (separator != "{" and "{" in line[:cut]):
            continue
        head, value = line[:cut], line[cut if separator == "{" else cut + 1 :].strip()
        if separator == "{" and head[-1:] not in (" ", "\t"):
            continue
        name = clean_name(head)
        if name and value and _NAME_CHARS.fullmatch(name):
            return _Action(name, (value + ("\n" + rest if rest.strip() else "")).strip())
    name = clean_name(line)
    if not name:
        return None
    if rest.strip():
        return _Action(name, rest.strip())
    return _Action(name, MISSING, bare=True)


def _plain(raw: Any) -> dict[str, Any] | str:
    """An input when the tools are unknown: an object when it holds one, else the text."""
    if raw is MISSING or raw is None:
        return {}
    if isinstance(raw, CallArgs):
        raw = call_value(raw, None)
        if raw is MISSING:
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


def _answer_text(raw: Any) -> str:
    if raw is MISSING or raw is None:
        return ""
    if isinstance(raw, dict):
        for key in ("answer", "final_answer", "output", "text", "response", "result"):
            if isinstance(raw.get(key), str):
                return raw[key]
        if len(raw) == 1 and isinstance(only := next(iter(raw.values())), str):
            return only
    if isinstance(raw, str):
        return unwrap(raw)
    return json.dumps(raw, ensure_ascii=False)
