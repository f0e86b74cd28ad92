"""ContextFit: a request never outgrows the model's window. When the conversation would fill
more than `context_share` of the window (`context_window`, else the model's profile, else
8192 tokens; the embedded model's own context), the oldest turns are left out of *the request*
(the thread, the trace and every checkpoint keep them), whole: a step's tool calls and their
results go together, and the current question always stays.

Tokens are estimated on the safe side (UTF-8 bytes / 3, plus each message's overhead), so a
provider's own tokenizer counts no more than the estimate for English and little more for
CJK, and the share leaves the rest of the window for the reply. To summarize instead of
leaving turns out, add LangChain's `SummarizationMiddleware`; `context_share=0` turns this off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool

from graph import messages as m
from graph.policies.base import LoopPolicy
from graph.support.per_object import CONTENT, PerObject

DEFAULT_WINDOW = 8192  # when neither the setting nor the model's profile gives one
PER_MESSAGE = 6  # role and framing tokens of one message


def estimated_tokens(items: Sequence[Any]) -> int:
    """A safe-side token count of messages, tool schemas or text."""
    total = 0
    for item in items:
        if isinstance(item, BaseMessage):
            text = item.text
            if isinstance(item, AIMessage) and item.tool_calls:
                text += json.dumps(item.tool_calls, ensure_ascii=False, default=str)
            total += PER_MESSAGE
        else:
            text = item if isinstance(item, str) else json.dumps(item, default=str)
        total += len(text.encode("utf-8")) // 3 + 1
    return total


def most_tokens(messages: Sequence[BaseMessage]) -> int:
    """An upper bound of `estimated_tokens` that encodes nothing (a character is at most four
    UTF-8 bytes): most requests fit by it, and are not measured byte by byte at every step.
    Each message is measured once while it lives (`graph.support.per_object`): a run's
    requests share every earlier message, and measuring them again made each step's cost grow
    with the run."""
    sizes = list(map(len, map(CONTENT, messages)))  # what an edit in place changes
    return sum(_BOUNDS.each(messages, sizes, _bound))


_BOUNDS: PerObject[int] = PerObject()


def _bound(message: BaseMessage) -> int:
    size = len(message.text)
    if isinstance(message, AIMessage) and message.tool_calls:
        size += len(json.dumps(message.tool_calls, ensure_ascii=False, default=str))
    return PER_MESSAGE + size * 4 // 3 + 1


def _schema_tokens(tool: Any) -> int:
    """A tool's arguments schema in tokens, measured once while the tool lives (`tool.args`
    builds the JSON schema anew at every read)."""
    if not isinstance(tool, BaseTool):
        return estimated_tokens([tool])  # a provider tool given as a dict
    mark = (tool.name, id(getattr(tool, "args_schema", None)))
    return _SCHEMAS.get(tool, mark, lambda t: estimated_tokens([t.args]))


_SCHEMAS: PerObject[int] = PerObject()


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


def fitted(messages: Sequence[BaseMessage], budget: int) -> list[BaseMessage]:
    """The latest question, the newest whole pieces of its turn that fit `budget` (the last one
    always), then, while they fit, earlier turns, starting at a question of the user's."""
    at = max((i for i, x in enumerate(messages) if m.is_user_message(x)), default=None)
    head = [messages[at]] if at is not None else []
    used = estimated_tokens(head)
    steps = _newest(units(messages[at + 1 :] if at is not None else messages), budget, used)
    used += sum(estimated_tokens(piece) for piece in steps)
    earlier = _newest(units(messages[:at]), budget, used, keep_one=False) if at else []
    while earlier and not m.is_user_message(earlier[0][0]):
        earlier.pop(0)  # a request starts with the user's words, as chat APIs expect
    return [x for piece in [*earlier, head, *steps] for x in piece]


def _newest(
    pieces: list[list[BaseMessage]], budget: int, used: int, *, keep_one: bool = True
) -> list[list[BaseMessage]]:
    kept: list[list[BaseMessage]] = []
    for piece in reversed(pieces):
        cost = estimated_tokens(piece)
        if used + cost > budget and (kept or not keep_one):
            break
        kept.append(piece)
        used += cost
    return kept[::-1]


class ContextFit(LoopPolicy):
    def shaped(self, request: ModelRequest) -> ModelRequest | ModelResponse:
        ctx = self.settings(request)
        if not ctx.context_share:
            return request
        window = ctx.context_window or self.window_of(request.model, ctx)
        reply = ctx.max_tokens or min(1024, window // 8)
        fixed = estimated_tokens(
            [request.system_message.text if request.system_message else ""]
        ) + sum(map(_schema_tokens, request.tools))
        budget = int(window * ctx.context_share) - reply - fixed
        if most_tokens(request.messages) <= budget or estimated_tokens(request.messages) <= budget:
            return request
        return request.override(messages=fitted(request.messages, max(budget, 0)))

    def window_of(self, model: Any, ctx: Any) -> int:
        if self.bindings.is_local(ctx):
            from graph.models.local.server import DEFAULT_CONTEXT

            return DEFAULT_CONTEXT
        profile = getattr(model, "profile", None) or {}
        return int(profile.get("max_input_tokens") or DEFAULT_WINDOW)
