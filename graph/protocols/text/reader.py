"""Reads one text-protocol reply into one step: an action to run, a final answer, or an error.

Models without function calling write Thought / Action / Action Input / Final Answer, and real
replies drift from it: other frameworks' dialects, markdown, Chinese labels, `<think>` blocks,
invented observations. `labels` finds the labelled sections (one table of spellings, linear
scan), `actions` reads an Action line, `blobs` and `dialects` read JSON and markup calls,
`step` turns a call into a step with the tools (`toolset` resolves names and shapes inputs);
`canonical` recognises the prompt's own shape first. This module decides what the reply
means; each error says what was wrong, because it is sent back to the model.

Rules, one per ambiguous situation (each is tested):

* Echo and invention: an `Observation:` before the first other label repeats the last result
  and is skipped; an `Observation:` after one was invented by the model and ends the reply.
* Action and Final Answer in one reply: the earlier wins. An answer written after an action was
  written before the tool ran, so it is a guess; an action after an answer is noise. Exception:
  an Action that is only a name (no input anywhere, no call shape) directly followed by a Final
  Answer is not a call; the answer wins.
* An Action naming no tool (`None`, `N/A`, `no action`, `无`) is not a call: a later Final
  Answer wins, else the prose after it is the answer, else it is an error.
* An Action without input: with the tools known, fine for a tool without required arguments,
  otherwise an error naming the arguments; without them, the input is `{}`.
* Several actions: the first runs and `note` says how many were ignored.
* A weak answer label (`AI:`, `Answer:`) over a JSON call blob is that blob: Llama 2 chat
  writes `AI:` and then the blob it was asked for.
* No decision at line starts: protocol labels written mid-line (`... done. Final Answer: 42`)
  are read; then a JSON blob shaped like a call (anywhere); then markup (XML tags).
* No label at all: the reply is the final answer, unless it ends with a colon, opens by
  announcing a step (`I need to ...`, `Let me ...`), names an enabled tool the way code does
  (`` `search` ``, `get_weather`), or uses label words where they cannot be read (`the
  Action: is`): then it is an error, so the model writes the step instead of ending the run.
* A reply that is only a call (`search(q="x")`, also fenced as Gemma's ```tool_code) is that
  call when it names an enabled tool exactly; `finish(...)` / `Finish[...]` answers.
* With `tools`, names are resolved and inputs shaped to each tool's schema; a final-answer
  name (`Finish[...]`, `{"action": "Final Answer"}`) that is no tool's name answers. An Action
  line holding a sentence (over 80 characters or 6 words) is an error, never a fuzzy match.
* gpt-oss harmony channels and Kimi tool-call tokens are rewritten as labels first.
* Replies over 1,000,000 characters are refused.

The step as read (`ReactStep.read`, `clean_reply`): the reply as the reader took it (reasoning
blocks, `PAUSE` lines and model tokens removed) up to where the step it decided ends: the end
of the Action Input (of its JSON value, when it is one), of the Action line that was a call, of
the call blob, or of the Final Answer. An invented observation (`Observation:`, a bare
`Observation` line, any case or spacing) and whatever follows it is never part of it, nor are a
second action or an answer written before the tool ran. That is what a later request should
show the model for this step: the model then never sees text of its own that was not read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.tools import BaseTool

from graph.protocols.reasoning import unclosed_reasoning
from graph.protocols.text.actions import (
    NO_TOOL,
    Action,
    blob_action,
    clean_name,
    key,
    prose_after,
    section_action,
)
from graph.protocols.text.blobs import find_blob, read_value
from graph.protocols.text.canonical import canonical_action
from graph.protocols.text.dialects import read_markup, translate_tokens
from graph.protocols.text.labels import (
    ACTION,
    FINAL,
    INPUT,
    normalize,
    split_midline,
)
from graph.protocols.text.layout import Layout, cut_reply, read_layout
from graph.protocols.text.step import ReactStep, call_step, error, final
from graph.protocols.text.toolset import Toolset
from graph.protocols.text.unlabeled import call_line, unwritten_step

__all__ = ["MAX_REPLY", "ReactStep", "clean_reply", "parse_react"]

ToolsArg = Sequence[BaseTool | str | Mapping[str, Any]] | None
MAX_REPLY = 1_000_000
_CALL_TAIL = re.compile(r"(?:```[\w-]*|<tool_call>|\[TOOL_CALLS\])\s*$")


def parse_react(text: str, tools: ToolsArg = None) -> ReactStep:
    """Read one model reply in the text ReAct protocol; never raises.

    `tools` (LangChain tools or names) are the enabled tools: with them, the tool name is
    resolved and the input shaped to its schema; without them, both come back as written."""
    try:
        text = text if isinstance(text, str) else str(text)
        if len(text) > MAX_REPLY:
            return error(f"the reply is {len(text):,} characters long; replies over "
                          f"{MAX_REPLY:,} characters are not read")  # fmt: skip
        toolset = Toolset(tools) if tools is not None else None
        canonical = canonical_action(text, toolset)
        if canonical is not None:
            thought, tool, args, read = canonical
            return ReactStep("action", thought, tool, args, read=read)
        return _Reply(text, toolset).read()
    except Exception as exc:  # a safety net: the agent must survive any reply
        return error(f"the reply could not be read ({type(exc).__name__}: {exc})")


def read_in_full(text: str, tools: ToolsArg = None) -> ReactStep:
    """`parse_react` without the shortcut for the prompt's own shape (`canonical`): every
    rule applied. Tests compare the two."""
    return _Reply(text, Toolset(tools) if tools is not None else None).read()


def clean_reply(text: str, tools: ToolsArg = None) -> str:
    """The step as read (see the module docstring): what to send back to the model for this
    reply in later requests, in place of the raw text. `parse_react(text).read` is the same
    without a second reading."""
    return parse_react(text, tools).read


class _Reply:
    def __init__(self, raw: str, toolset: Toolset | None) -> None:
        self.raw = raw
        self.toolset = toolset
        self.thought = ""
        self.source = ""  # the text the deciding reading looked at
        self.stop: int | None = None  # where in `source` the decided step ends

    def read(self) -> ReactStep:
        text = normalize(translate_tokens(self.raw))
        step = self._read(text)
        if self.stop is not None:
            ended = bool(self.source[self.stop :].strip())
            return replace(step, read=self.source[: self.stop].strip(), ended=ended)
        return replace(step, read=cut_reply(text))

    def _read(self, text: str) -> ReactStep:
        if not text.strip():
            if "</think" in self.raw.lower():
                return error("the reply holds only a <think> block; write the step after it")
            return error("the reply is empty")
        layout = read_layout(text)
        step = self._decide(layout)
        if step is None and (split := split_midline(text)) != text:
            split_layout = read_layout(split)
            step = self._decide(split_layout)
            if split_layout.items or not layout.labelled:
                layout = split_layout
        return step if step is not None else self._fallback(layout)

    def _decide(self, layout: Layout) -> ReactStep | None:
        """The step the line-start labels decide, or None when they decide nothing."""
        items = layout.items
        self.source, self.stop = layout.text, None
        if not items:
            return None
        decision = next((s for s in items if s.kind in (ACTION, FINAL)), None)
        first = layout.thought
        if first is not None and (decision is None or first.start < decision.start):
            self.thought = layout.body(first).strip()
        else:
            self.thought = layout.preamble
        no_tool: Action | None = None
        index = 0
        while index < len(items):
            section = items[index]
            if section.kind == FINAL:
                body = layout.body(section)
                blob = None if section.strong else find_blob(body, labeled=False)
                if blob is None:  # a weak label (`AI:`, `Answer:`) over a call blob is the blob
                    self.stop = section.end
                    return final(body, self.thought)
                self.stop = section.body + blob[2]
                action = self._checked(blob_action(blob[0], index + 1))
                return action if isinstance(action, ReactStep) else self._act(action, None)
            if section.kind != ACTION:
                index += 1
                continue
            action = self._checked(section_action(layout, index))
            if isinstance(action, ReactStep):
                return action
            if key(action.name) in NO_TOOL and not self._names_a_tool(action.name):
                no_tool = no_tool or action
                index = action.next_index
                continue
            following = next((s for s in items[action.next_index :] if s.kind != INPUT), None)
            if action.bare and following is not None and following.kind == FINAL:
                index = items.index(following)
                continue
            self.stop = _action_stop(layout, action)
            return self._act(action, layout)
        if no_tool is not None:
            prose = prose_after(no_tool.raw)
            if prose:
                self.stop = items[no_tool.next_index - 1].end
                return final(prose, self.thought)
            return error("the Action names no tool; name one of the tools or give a "
                          "Final Answer", self.thought)  # fmt: skip
        return None

    def _names_a_tool(self, name: str) -> bool:
        return self.toolset is not None and self.toolset.named(name) is not None

    def _checked(self, action: Action | str) -> Action | ReactStep:
        """The action read, or the error that says why none could be."""
        return error(action, self.thought) if isinstance(action, str) else action

    def _act(self, action: Action, layout: Layout | None) -> ReactStep:
        step = call_step(action, action.thought or self.thought, self.toolset)
        extra, capped = action.extra, False
        if layout is not None:
            extra += sum(1 for s in layout.items[action.next_index :] if s.kind == ACTION)
            capped = layout.capped
        if step.kind == "action" and extra > 0:
            plural = "action was" if extra == 1 else "actions were"
            count = f"at least {extra}" if capped else str(extra)
            note = f"{count} more {plural} ignored: send one Action per reply."
            return replace(step, note=note)
        return step

    # -- no decision at line starts --------------------------------------------------------

    def _fallback(self, layout: Layout) -> ReactStep:
        text, first = layout.text, layout.thought
        self.source, self.stop = text, len(text)  # markup or prose: all of it is read
        thought = layout.body(first).strip() if first is not None else layout.preamble
        found = find_blob(text, labeled=False)
        markup = read_markup(text) if "<" in text else None
        if found is not None and (markup is None or found[1] <= markup.start):
            self.thought = self._thought_before(layout, found[1])
            self.stop = found[2]
            action = self._checked(blob_action(found[0], 0))
            return action if isinstance(action, ReactStep) else self._act(action, None)
        if markup is not None:
            self.thought = self._thought_before(layout, markup.start)
            if markup.answer is not None:
                return final(markup.answer, self.thought)
            if not markup.name:
                return error("the arguments tag has no tag naming the tool, such as "
                              "<tool>name</tool>", self.thought)  # fmt: skip
            call = Action(clean_name(markup.name), markup.args)
            return call_step(call, self.thought, self.toolset)
        if layout.labelled:
            self.stop = None  # unreadable: the reply up to an invented observation
        if any(s.kind == INPUT for s in layout.items):
            return error("Action Input without an Action: write `Action: <tool name>` on the "
                          "line before it", thought)  # fmt: skip
        if layout.labelled:
            return error("no Action or Final Answer after the Thought", thought)
        return self._unlabeled(layout)

    def _thought_before(self, layout: Layout, start: int) -> str:
        """The thought of a blob or markup call: the Thought section, or the prose, before it."""
        first, text = layout.thought, layout.text
        if first is not None and first.body <= start:
            head = text[first.body : min(start, first.end)]
        else:
            head = text[:start]
        head = head.strip()
        tail = _CALL_TAIL.search(head, max(0, len(head) - 40))
        return head[: tail.start() if tail else len(head)].strip()

    def _unlabeled(self, layout: Layout) -> ReactStep:
        """A reply without any label: an answer, unless it is plainly an unwritten step."""
        call = call_line(layout.text, self.toolset)
        if call is not None:
            return call_step(call, "", self.toolset)
        if unclosed_reasoning(self.raw):
            return error("the reply is reasoning that never reaches </think>; close the "
                          "reasoning, then write the step")  # fmt: skip
        names = self.toolset.names if self.toolset is not None else ()
        problem = unwritten_step(layout.text, layout.scanner, names)
        return error(problem) if problem is not None else final(layout.text, "")


def _action_stop(layout: Layout, action: Action) -> int:
    """Where the text an action was read from ends: the end of the JSON value its input opens
    with (text after it is not read), of the Action line for a call shape, else of the last
    section it used."""
    last = layout.items[action.next_index - 1]
    body = layout.body(last)
    lead = len(body) - len(body.lstrip())
    if action.line_only:
        line_end = body.find("\n", lead)
        return last.body + line_end if line_end >= 0 else last.end
    if body[lead : lead + 1] in ("{", "[") and (value := read_value(body, lead)) is not None:
        return last.body + value.end
    return last.end
