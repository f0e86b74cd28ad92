"""ContextFit: a request never outgrows the model's window, and never hides the current run's
own calls from the model.

When the conversation would fill more than `context_share` of the window (`context_window`,
else the model's profile, else 8192 tokens; the embedded model's own context), the request
(never the thread, the trace or a checkpoint) is made smaller in this order:

1. old tool *results* are cleared, oldest first, their calls kept: LangChain's own
   `ClearToolUsesEdit` (what `ContextEditingMiddleware` applies), with this policy's budget and
   token count; the newest results stay;
2. earlier turns (the runs before this one) are left out, oldest first and whole (a step with
   its results), so the request still starts with a question of the user's;
3. only when the current run's calls alone outgrow the window (hundreds of steps, or huge
   arguments) are its oldest steps written as one compact note listing each call (name and
   arguments), so the model still sees what it did; the note's oldest lines go last of all.

Summaries need a model call, so they are an opt-in: add LangChain's `SummarizationMiddleware`,
which rewrites the stored thread before this policy sees it. Tokens are estimated on the safe
side (UTF-8 bytes / 3, plus each message's overhead), so a provider's own tokenizer counts no
more than the estimate for English and little more for CJK; the share leaves the rest of the
window for the reply. `context_share=0` turns this off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ClearToolUsesEdit, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph import messages as m
from graph.lru import LRU
from graph.models.local.sizing import DEFAULT_CONTEXT
from graph.policies.base import LoopPolicy

DEFAULT_WINDOW = 8192  # when neither the setting nor the model's profile gives one
PER_MESSAGE = 6  # role and framing tokens of one message
KEEP_RESULTS = 3  # the newest results kept while older ones can be cleared instead
CLEARED = "[result cleared to fit the context window]"
CONDENSED = "Earlier steps of this run (their results cleared to fit the context window):"


def estimated_tokens(items: Sequence[Any]) -> int:
    """A safe-side token count of messages, tool schemas or text: what the policy counts."""
    total = 0
    for item in items:
        if isinstance(item, BaseMessage):
            text = _text(item)
            if isinstance(item, AIMessage) and item.tool_calls:
                text += json.dumps(item.tool_calls, ensure_ascii=False, default=str)
            total += PER_MESSAGE
        else:
            text = item if isinstance(item, str) else json.dumps(item, default=str)
        total += len(text.encode("utf-8")) // 3 + 1
    return total


def most_tokens(messages: Sequence[BaseMessage]) -> int:
    """An upper bound of `estimated_tokens` that encodes nothing (a character is at most four
    UTF-8 bytes): most requests fit by it, and are not measured byte by byte at every step."""
    return sum(map(_bound, messages))


def _bound(message: BaseMessage) -> int:
    size = len(_text(message))
    if isinstance(message, AIMessage) and message.tool_calls:
        # the repr, built in C, instead of encoding JSON at every request: JSON escapes a
        # character of parsed arguments in at most twice the characters repr does
        size += 2 * len(repr(message.tool_calls))
    return PER_MESSAGE + size * 4 // 3 + 1


def _text(message: BaseMessage) -> str:
    """The message's text: its content when that is a string (`.text` builds a new accessor
    object at every read, and every request reads every message)."""
    content = message.content
    return content if isinstance(content, str) else message.text


def schema_tokens(tool: Any) -> int:
    """A tool's arguments schema in tokens, kept by its schema class (`tool.args` builds the
    JSON schema anew at every read, and every request carries the same tools)."""
    if isinstance(tool, dict):
        return estimated_tokens([tool])  # a provider tool given as a dict
    schema = getattr(tool, "args_schema", None)
    if not isinstance(schema, type):
        return estimated_tokens([tool.args])
    return _SCHEMAS.get((tool.name, schema), lambda: estimated_tokens([tool.args]))


_SCHEMAS = LRU(256)


def units(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """The conversation in pieces that are kept or left out whole: a model step with the tool
    results and notes that follow it, or one message."""
    out: list[list[BaseMessage]] = []
    for message in messages:
        follows = isinstance(message, ToolMessage) or m.is_agent_note(message)
        if follows and out and isinstance(out[-1][0], AIMessage):
            out[-1].append(message)
        else:
            out.append([message])
    return out


def run_start(messages: Sequence[BaseMessage], question_id: str | None = None) -> int | None:
    """Where the current run starts: its question (`run.question_id`), else the latest words of
    the user's (a policy's own request appended after the run, as WrapUp's, is not a question
    when the run's question is known)."""
    if question_id is not None:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].id == question_id:
                return i
    return max((i for i, x in enumerate(messages) if m.is_user_message(x)), default=None)


def cleared(messages: Sequence[BaseMessage], budget: int) -> list[BaseMessage]:
    """The messages with old tool results cleared, oldest first, until they fit `budget`; the
    newest `KEEP_RESULTS` stay while clearing the others is enough, then all but the last."""
    out = list(messages)  # the edit replaces cleared messages by copies, never in place
    for keep in (KEEP_RESULTS, 1):
        over = estimated_tokens(out) - budget
        if over <= 0:
            break
        edit = ClearToolUsesEdit(
            trigger=budget, clear_at_least=over, keep=keep, placeholder=CLEARED
        )
        edit.apply(out, count_tokens=estimated_tokens)
    return out


def fitted(
    messages: Sequence[BaseMessage], budget: int, question_id: str | None = None
) -> list[BaseMessage]:
    """The request's messages within `budget`: old results cleared, then earlier turns left out
    (newest kept while they fit, starting at a question of the user's), then, as a last
    resort, the run's oldest steps condensed into one note. The current run's calls stay."""
    out = cleared(messages, budget)
    if estimated_tokens(out) <= budget:
        return out
    at = run_start(out, question_id)
    run = out[at:] if at is not None else out
    used = estimated_tokens(run)
    if used > budget:
        return condensed(run, budget, with_question=at is not None)
    earlier = _newest(units(out[:at]), budget, used) if at else []
    while earlier and not m.is_user_message(earlier[0][0]):
        earlier.pop(0)  # a request starts with the user's words, as chat APIs expect
    return [x for piece in earlier for x in piece] + run


def _newest(pieces: list[list[BaseMessage]], budget: int, used: int) -> list[list[BaseMessage]]:
    kept: list[list[BaseMessage]] = []
    for piece in reversed(pieces):
        cost = estimated_tokens(piece)
        if used + cost > budget:
            break
        kept.append(piece)
        used += cost
    return kept[::-1]


def condensed(run: list[BaseMessage], budget: int, *, with_question: bool) -> list[BaseMessage]:
    """The run when its calls alone outgrow `budget`: the question, one note listing the oldest
    steps' calls (a short line each, instead of a message per call and per result), then the
    newest steps as they are, as many as fit (the last one always). Only when even the list
    does not fit are its oldest lines left out, and the note says how many."""
    head, pieces = (run[:1], units(run[1:])) if with_question else ([], units(run))
    lines = [[_line(call) for call in _calls(piece)] for piece in pieces]

    def note(listed: list[str], left_out: int) -> list[BaseMessage]:
        said = [f"({left_out} earlier calls left out)"] if left_out else []
        text = "\n".join([CONDENSED, *said, *listed])
        return [HumanMessage(text, id=f"{m.HIDDEN_PREFIX}context")]

    def listed(split: int) -> list[str]:
        return [line for group in lines[:split] for line in group]

    def fits(split: int, shown: list[str], left_out: int) -> bool:
        kept = [*head, *(x for piece in pieces[split:] for x in piece)]
        return (
            estimated_tokens(kept) + (estimated_tokens(note(shown, left_out)) if split else 0)
            <= budget
        )

    last = max(len(pieces) - 1, 0)
    split = next((at for at in range(last) if fits(at, listed(at), 0)), last)
    shown, left_out = listed(split), 0
    while shown and not fits(split, shown, left_out):
        shown.pop(0)
        left_out += 1
    steps = [x for piece in pieces[split:] for x in piece]
    return [*head, *(note(shown, left_out) if split else []), *steps]


def _calls(piece: list[BaseMessage]) -> list[dict[str, Any]]:
    return list(piece[0].tool_calls) if isinstance(piece[0], AIMessage) else []


def _line(call: dict[str, Any]) -> str:
    return f"- {call['name']}({json.dumps(call.get('args') or {}, ensure_ascii=False)})"


class ContextFit(LoopPolicy):
    needs = "context_share"

    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        ctx = self.settings(request)
        if not ctx.context_share:
            return request
        budget = self.budget(request, ctx)
        if most_tokens(request.messages) <= budget or estimated_tokens(request.messages) <= budget:
            return request
        question = self.run(request).get("question_id")
        return request.override(messages=fitted(request.messages, max(budget, 0), question))

    def budget(self, request: ModelRequest, ctx: Any) -> int:
        """The tokens the messages may take: the window's share, less the reply's room, the
        system prompt and the tool schemas."""
        window = ctx.context_window or self.window_of(request.model, ctx)
        reply = ctx.max_tokens or min(1024, window // 8)
        system = request.system_message.text if request.system_message else ""
        fixed = estimated_tokens([system]) + sum(map(schema_tokens, request.tools))
        return int(window * ctx.context_share) - reply - fixed

    def window_of(self, model: Any, ctx: Any) -> int:
        if self.bindings.is_local(ctx):
            return DEFAULT_CONTEXT
        profile = getattr(model, "profile", None) or {}
        return int(profile.get("max_input_tokens") or DEFAULT_WINDOW)
