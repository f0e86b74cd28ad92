"""The conversation's reducer: LangGraph's `add_messages` over a batch of writes at once, with
ids that survive a replay and a refusal in one sentence for a write that is not a message.
`tests/unit/test_message_reducer.py` compares the reducer with `add_messages`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    RemoveMessage,
    convert_to_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

_log = logging.getLogger(__name__)


def add_message_batches(messages: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """`add_messages` over a batch of writes in one call: the same result as one call per write
    (later messages with a known id replace earlier ones either way), in one pass.

    Messages written without an id (`("user", "...")` inputs) get one derived from their place
    in the conversation: the channel is rebuilt from its writes on every load, and a random id
    would change each time. The channel replays its stored writes on every load, so an item
    that cannot become a message, or a removal of an id the conversation does not hold, is
    dropped (logged) instead of failing every read: client writes are refused before they are
    stored (`check_messages`, `graph.checked`).
    """
    flat = [m for write in writes for m in (write if isinstance(write, list) else [write])]
    try:
        batch = convert_to_messages(flat)
    except Exception:  # LangChain raises AttributeError for some malformed fields
        batch = _convertible(flat)
    if any(message.id is None for message in batch):
        _give_ids(messages, batch)
    try:
        return add_messages(messages, batch)
    except ValueError as exc:  # a removal of an id the conversation does not hold
        kept = _removable(messages, batch)
        if len(kept) == len(batch):
            raise
        _log.warning("A removal from 'messages' was dropped: %s", exc)
        return add_messages(messages, kept)


def _give_ids(messages: list[AnyMessage], batch: list[BaseMessage]) -> None:
    """An id for each message of the batch written without one, from the length of the
    conversation when it lands: the same whether the batch is one step's writes or a whole
    replay of several steps (a removal or a replacement earlier in it moves the length as it
    did when it was written)."""
    known = {_id(m) for m in messages}
    size = len(messages)
    for message in batch:
        if isinstance(message, RemoveMessage):
            if message.id == REMOVE_ALL_MESSAGES:
                known, size = set(), 0
            elif message.id in known:
                known.discard(message.id)
                size -= 1
            continue
        if message.id is None:
            seed = f"{size}:{message.type}:{message.text}"
            message.id = str(uuid.uuid5(uuid.NAMESPACE_URL, seed))
        if message.id not in known:
            known.add(message.id)
            size += 1


def _convertible(items: list[Any]) -> list[BaseMessage]:
    """The items that can become messages, each converted; the others dropped (logged). Client
    writes are checked before they are stored (`check_messages`), so what fails here is a
    stored write from before those checks: every load would fail on it."""
    out: list[BaseMessage] = []
    for item in items:
        try:
            out.extend(convert_to_messages([item]))
        except Exception as exc:
            _log.warning("A 'messages' write was dropped: %s", _reason(exc))
    return out


def _removable(messages: list[AnyMessage], batch: list[BaseMessage]) -> list[BaseMessage]:
    """The batch without the removals `add_messages` refuses: of an id neither the conversation
    nor an earlier message of the batch holds (a stored one would fail every load)."""
    known = {_id(m) for m in messages}
    kept = []
    for m in batch:
        if isinstance(m, RemoveMessage):
            if m.id == REMOVE_ALL_MESSAGES:
                known = set()
            elif m.id not in known:
                continue
        else:
            known.add(m.id)
        kept.append(m)
    return kept


def _id(message: Any) -> Any:
    """A message's id, also of one a snapshot holds as a dict."""
    return message.get("id") if isinstance(message, dict) else getattr(message, "id", None)


def unknown_removals(messages: Sequence[Any], value: Any) -> list[str]:
    """The ids a `messages` write (already checked by `check_messages`) removes that
    `add_messages` would refuse, only when it is applied, after LangGraph stored the write."""
    items = value if isinstance(value, list) else [value]
    if not any(isinstance(m, (RemoveMessage, dict)) for m in items):
        return []  # no removal (a plain message list: the common case)
    batch = convert_to_messages(items)
    kept = {id(m) for m in _removable(list(messages), batch)}
    return [m.id for m in batch if id(m) not in kept]


def check_messages(value: Any) -> None:
    """Refuse, with one sentence, a `messages` write that cannot become messages, before
    LangGraph converts it to give it an id (its own conversion raises a validation dump, or an
    AttributeError, that never reaches the reducer). Nothing is changed: message objects are
    left alone, other items are converted into copies only to see whether they can be."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, BaseMessage):
            continue
        try:
            convert_to_messages([item])
        except Exception as exc:
            raise ValueError(f"'messages' update refused: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    """The first problem of a conversion error, on one line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic: the first error's field and message, not the dump
        with contextlib.suppress(Exception):
            first = errors()[0]
            field = ".".join(str(part) for part in first.get("loc", ()))
            return f"{field}: {first['msg']}." if field else f"{first['msg']}."
    text = str(exc).split("\n", 1)[0].strip() or type(exc).__name__
    return text if text.endswith(".") else f"{text}."
