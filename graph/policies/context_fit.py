"""ContextFit: a request never outgrows the model's window, and never hides the current run's
own calls from the model.

When the conversation would fill more than `context_share` of the window (`context_window`,
else the model's profile, else 8192 tokens; the embedded model's own context), less the reply's
room, the system prompt and the tools as the model reads them, the request (never the thread,
the trace or a checkpoint) is made smaller in this order:

1. old tool *results* are cleared, oldest first, their calls kept: LangChain's own
   `ClearToolUsesEdit` (what `ContextEditingMiddleware` applies), with this policy's budget and
   token count; the newest results stay, and the newest step's, which the model has not read
   yet, are never cleared;
2. earlier turns (the runs before this one) are left out, oldest first and whole (a step with
   its results), so the request still starts with a question of the user's;
3. the newest step's results are cut, each marked with how much, while they keep a quarter of
   the budget;
4. only then are the run's oldest steps written as one compact note listing each call (name
   and arguments), so the model still sees what it did; with every older step in the note, the
   newest results are cut as far as needed.

When even that does not fit the share, the same steps fit the whole window; when it does not
fit the whole window either, no request is sent: the run ends with status `error` and a
sentence saying what takes the room. No call of the run is ever left out of sight.

Summaries need a model call, so they are an opt-in: add LangChain's `SummarizationMiddleware`,
which rewrites the stored thread before this policy sees it. Tokens are estimated on the safe
side (UTF-8 bytes / 3, plus each message's overhead), so a provider's own tokenizer counts no
more than the estimate for English and little more for CJK. `context_share=0` turns this off.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ClearToolUsesEdit, ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph import messages as m
from graph.models.local.sizing import DEFAULT_CONTEXT
from graph.policies.base import Decision, LoopPolicy, ended
from graph.policies.token_estimates import (
    PER_MESSAGE,
    estimated_tokens,
    media_tokens,
    most_tokens,
    schema_tokens,
    text_of,
)
from graph.protocols.text.prompts import text_system_prompt

DEFAULT_WINDOW = 8192  # when neither the setting nor the model's profile gives one
KEEP_RESULTS = 3  # the newest results kept while older ones can be cleared instead
CLEARED = "[result cleared to fit the context window]"
CONDENSED = "Earlier steps of this run (their results cleared to fit the context window):"
NEWEST_SHARE = 4  # the newest results keep a quarter of the budget before calls are condensed
MIN_SHOWN = 64  # the fewest tokens each of them is cut to when every older call is condensed
CUT_ROOM = 80  # bytes kept free for the note that says a result was cut


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
    the user's (a policy's own request appended after the run, as StepLimit's, is not a question
    when the run's question is known)."""
    if question_id is not None:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].id == question_id:
                return i
    return max((i for i, x in enumerate(messages) if m.is_user_message(x)), default=None)


def cleared(messages: Sequence[BaseMessage], budget: int) -> list[BaseMessage]:
    """The messages with old tool results cleared, oldest first, until they fit `budget`; the
    newest `KEEP_RESULTS` stay while clearing the others is enough, then all but the newest
    step's (results the model has not read yet are never cleared)."""
    out = list(messages)  # the edit replaces cleared messages by copies, never in place
    unread = len(_unread(out))
    for keep in (max(KEEP_RESULTS, unread), unread):
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
) -> list[BaseMessage] | None:
    """The request's messages within `budget`: old results cleared, then earlier turns left out
    (newest kept while they fit, starting at a question of the user's), then the newest step's
    results cut, then, as a last resort, the run's oldest steps condensed into one note. Every
    call of the current run stays in sight; None when even that cannot fit."""
    out = cleared(messages, budget)
    if estimated_tokens(out) <= budget:
        return out
    at = run_start(out, question_id)
    run = out[at:] if at is not None else out
    used = estimated_tokens(run)
    if used > budget:
        return shortened(run, budget, budget // NEWEST_SHARE) or condensed(
            run, budget, with_question=at is not None
        )
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


def _unread(messages: Sequence[BaseMessage]) -> list[int]:
    """Where the newest step's results are: the model has not read them yet."""
    steps = [i for i, x in enumerate(messages) if isinstance(x, AIMessage)]
    last = messages[steps[-1]] if steps else None
    if not isinstance(last, AIMessage) or not last.tool_calls:
        return []
    return [i for i in range(steps[-1] + 1, len(messages)) if isinstance(messages[i], ToolMessage)]


def shortened(messages: list[BaseMessage], budget: int, least: int) -> list[BaseMessage] | None:
    """The messages with the newest step's results cut (each marked) so that they fit
    `budget`, when the results keep at least `least` tokens between them; else None."""
    unread = _unread(messages)
    if not unread:
        return None
    out = list(messages)
    for i in unread:
        out[i] = _cut(out[i], 0)
    share = (budget - estimated_tokens(out)) // len(unread)
    whole = estimated_tokens([messages[i] for i in unread])
    if share < MIN_SHOWN or share * len(unread) < min(least, whole):
        return None
    for i in unread:
        out[i] = _cut(messages[i], share)
    return out


def _cut(message: BaseMessage, tokens: int) -> BaseMessage:
    """The result within `tokens` (as `estimated_tokens` counts), its cut said at its end. Its
    images (blocks that are not text) stay where they fit beside the note, else one line says
    they were removed: a model is never sent less without being told."""
    text, media = text_of(message), media_tokens(message)
    kept = not media or media + PER_MESSAGE + 1 + CUT_ROOM // 3 <= tokens
    room = max((tokens - PER_MESSAGE - 1 - (media if kept else CUT_ROOM // 3)) * 3, 0)
    data = text.encode("utf-8")
    if kept and len(data) <= room:
        return message
    if len(data) > room:
        head = data[: max(room - CUT_ROOM, 0)].decode("utf-8", "ignore")
        text = head + f"\n[{len(text) - len(head):,} more characters cut to fit the context window]"
    blocks = [b for b in message.content if isinstance(b, dict) and b.get("type") != "text"]
    content: Any = text
    if kept and blocks:
        content = [{"type": "text", "text": text}, *blocks]
    elif blocks:
        kinds = ", ".join(sorted({str(b.get("mime_type") or b.get("type")) for b in blocks}))
        content = f"{text}\n[{len(blocks)} {kinds} block(s) removed to fit the context window]"
    return message.model_copy(update={"content": content, "artifact": None})


def condensed(
    run: list[BaseMessage], budget: int, *, with_question: bool
) -> list[BaseMessage] | None:
    """The run when its calls outgrow `budget`: the question, one note listing the oldest
    steps' calls (a short line each, instead of a message per call and per result), then the
    newest steps as they are, as many as fit (the last one always, its results cut if need
    be). None when even the whole list cannot fit: no call is left out of sight."""
    head, pieces = (run[:1], units(run[1:])) if with_question else ([], units(run))
    lines = [_line(call) for piece in pieces for call in _calls(piece)]
    listed = [0, *itertools.accumulate(len(_calls(piece)) for piece in pieces)]  # lines per split

    def request(split: int) -> list[BaseMessage]:
        note = [CONDENSED, *lines[: listed[split]]]
        shown = [HumanMessage("\n".join(note), id=f"{m.HIDDEN_PREFIX}context")] if split else []
        return [*head, *shown, *(x for piece in pieces[split:] for x in piece)]

    last = max(len(pieces) - 1, 0)
    for split in range(min(1, last), last + 1):
        asked = request(split)
        if estimated_tokens(asked) <= budget:
            return asked
        fit = shortened(asked, budget, budget // NEWEST_SHARE if split < last else MIN_SHOWN)
        if fit is not None:
            return fit
    return None


def _calls(piece: list[BaseMessage]) -> list[dict[str, Any]]:
    return list(piece[0].tool_calls) if isinstance(piece[0], AIMessage) else []


def _line(call: dict[str, Any]) -> str:
    return f"- {call['name']}({json.dumps(call.get('args') or {}, ensure_ascii=False)})"


class ContextFit(LoopPolicy):
    needs = "context_share"

    def shaped(self, request: ModelRequest) -> Decision:
        ctx = self.settings(request)
        if not ctx.context_share:
            return request
        window = ctx.context_window or self.window_of(request.model, ctx)
        room = self.room(request, ctx, window)
        budget = room - (window - int(window * ctx.context_share))
        if most_tokens(request.messages) <= budget or estimated_tokens(request.messages) <= budget:
            return request
        question = self.run(request).get("question_id")
        # the share's margin first; past it, the whole window before the run gives up
        for limit in (budget, room):
            messages = fitted(request.messages, limit, question) if limit > 0 else None
            if messages is not None:
                return request.override(messages=messages)
        return ended({"status": "error", "error": _no_room(window, room)})

    def room(self, request: ModelRequest, ctx: Any, window: int) -> int:
        """The tokens the messages may take in the whole window: less the reply's room, the
        system prompt and the tools as the model reads them (under the text protocol, in the
        prompt with the reply format)."""
        reply = ctx.max_tokens or min(1024, window // 8)
        system = request.system_message.text if request.system_message else ""
        if self.run(request).get("protocol") == "text" and not self.bindings.is_local(ctx):
            system = text_system_prompt([], system or None)
        fixed = estimated_tokens([system]) + sum(map(schema_tokens, request.tools))
        return window - reply - fixed

    def window_of(self, model: Any, ctx: Any) -> int:
        if self.bindings.is_local(ctx):
            return DEFAULT_CONTEXT
        profile = getattr(model, "profile", None) or {}
        return int(profile.get("max_input_tokens") or DEFAULT_WINDOW)


def _no_room(window: int, room: int) -> str:
    return (
        f"The run does not fit the model's context window ({window:,} tokens): after the "
        f"system prompt, the tools and the room for the reply, {max(room, 0):,} tokens are "
        "left, too few for the question and every call of the run; shorten the question, the "
        "system prompt or the tool list, lower REACT_AGENT_MAX_TOKENS, or set "
        "REACT_AGENT_CONTEXT_WINDOW to what the model takes."
    )
