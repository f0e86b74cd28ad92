"""Token counts as the context policy makes them: on the safe side, with no tokenizer (UTF-8
bytes / 3, plus each message's framing), so a provider's own tokenizer counts no more than the
estimate for English and little more for CJK; and cheap, since every request is measured."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from graph.lru import LRU

PER_MESSAGE = 6  # role and framing tokens of one message
# an image, a file or audio, whatever its bytes (no guide): about what a provider charges for an
# image at full detail (Anthropic ~1,600 for 1.15 megapixels; OpenAI's high detail 765-1,105),
# on the safe side as the rest (LangChain's own estimate charges 85, OpenAI's low detail)
PER_MEDIA_BLOCK = 1_600


def estimated_tokens(items: Sequence[Any]) -> int:
    """A safe-side token count of messages, tool schemas or text: what the policy counts."""
    total = 0
    for item in items:
        if isinstance(item, BaseMessage):
            text = text_of(item)
            if isinstance(item, AIMessage) and item.tool_calls:
                text += json.dumps(item.tool_calls, ensure_ascii=False, default=str)
            total += PER_MESSAGE + media_tokens(item)
        else:
            text = item if isinstance(item, str) else json.dumps(item, default=str)
        total += len(text.encode("utf-8")) // 3 + 1
    return total


def most_tokens(messages: Sequence[BaseMessage]) -> int:
    """An upper bound of `estimated_tokens` that encodes nothing (a character is at most four
    UTF-8 bytes): most requests fit by it, and are not measured byte by byte at every step."""
    return sum(map(_bound, messages))


def _bound(message: BaseMessage) -> int:
    size = len(text_of(message))
    if isinstance(message, AIMessage) and message.tool_calls:
        # the repr, built in C, instead of encoding JSON at every request: JSON escapes a
        # character of parsed arguments in at most twice the characters repr does
        size += 2 * len(repr(message.tool_calls))
    return PER_MESSAGE + media_tokens(message) + size * 4 // 3 + 1


def media_tokens(message: BaseMessage) -> int:
    """The blocks of a message that are neither text nor reasoning, at `PER_MEDIA_BLOCK`."""
    content = message.content
    if isinstance(content, str):
        return 0
    return PER_MEDIA_BLOCK * sum(
        isinstance(b, dict) and b.get("type") not in _WORDS for b in content
    )


# blocks counted by their text (`text_of`), or sent back as words (reasoning, calls)
_WORDS = frozenset({"text", "reasoning", "thinking", "redacted_thinking", "tool_use", "tool_call"})


def text_of(message: BaseMessage) -> str:
    """The message's text: its content when that is a string (`.text` builds a new accessor
    object at every read, and every request reads every message)."""
    content = message.content
    return content if isinstance(content, str) else message.text


def schema_tokens(tool: Any) -> int:
    """A tool as the model is sent it (name, description and arguments schema) in tokens,
    kept per tool name, description and schema class (building the spec takes longer than the
    request, and every request carries the same tools)."""
    if isinstance(tool, dict):
        return estimated_tokens([tool])  # a provider tool given as a dict
    schema = getattr(tool, "args_schema", None)
    if not isinstance(schema, type):
        return estimated_tokens([convert_to_openai_tool(tool)])
    key = (tool.name, tool.description, schema)
    return _SCHEMAS.get(key, lambda: estimated_tokens([convert_to_openai_tool(tool)]))


_SCHEMAS = LRU(256)
