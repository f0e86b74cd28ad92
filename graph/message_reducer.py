"""The conversation's reducer: LangGraph's `add_messages`, over a batch of writes at once, with
a shortcut for the common case and a refusal in one sentence for a write that is not a message.

LangGraph runs this reducer four times per iteration (each node's write, and each router's
fresh copy of the state), and `add_messages` makes several passes in Python over the whole
conversation each time. Most writes only append new messages, so the reducer first checks
that (`_only_appends`) and then joins the two lists. The check needs every id the conversation
holds; the ids of the last conversation checked are kept, so a conversation that grew at its
end (or a copy of one) costs only its new messages (`_KnownIds`).
`tests/unit/test_message_reducer.py` compares the reducer with `add_messages`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    BaseMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from graph.messages import ID_OF
from graph.support.per_object import starts_with

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
    standard = _STANDARD.issuperset(map(type, flat))  # messages already: nothing to convert
    if standard:
        batch = flat
    else:
        try:
            batch = convert_to_messages(flat)
        except Exception:  # LangChain raises AttributeError for some malformed fields
            batch = _convertible(flat)
    if not standard or None in map(ID_OF, batch):
        for offset, message in enumerate(batch):
            if not isinstance(message, BaseMessage):  # pragma: no cover - convert_to_messages
                raise ValueError(f"'messages' update refused: {message!r:.80} is not a message.")
            if message.id is None:
                seed = f"{len(messages) + offset}:{message.type}:{message.text}"
                message.id = str(uuid.uuid5(uuid.NAMESPACE_URL, seed))
    if _only_appends(messages, batch, standard):
        return [*messages, *batch]
    try:
        return add_messages(messages, batch)
    except ValueError as exc:  # a removal of an id the conversation does not hold
        kept = _removable(messages, batch)
        if len(kept) == len(batch):
            raise
        _log.warning("A removal from 'messages' was dropped: %s", exc)
        return add_messages(messages, kept)


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


def _only_appends(messages: list[AnyMessage], batch: list[BaseMessage], standard: bool) -> bool:
    """Whether `add_messages` would only append the batch: every id new and distinct, nothing
    to remove, no chunk to convert (none in a batch of `standard` classes). The stored list is
    checked by its classes (a snapshot may hold dicts, an `Overwrite` anything) and its ids."""
    ids = list(map(ID_OF, batch))
    if len(set(ids)) != len(ids):
        return False
    if not standard and any(isinstance(x, _NOT_APPENDED) for x in batch):
        return False
    known = _KNOWN(messages)
    return known is not None and known.isdisjoint(ids)


class _KnownIds:
    """The ids of a conversation of plain messages, or None when it holds anything else (a
    message without an id, a chunk, a dict). The last conversation asked for is kept with its
    ids: when the next one starts with those very objects (compared in C), only its new
    messages are read. Each stored message's id is set before it is stored (the reducer
    gives one to a message written without) and never changed in place.

    The kept set only grows while it stands for the kept list, and is replaced otherwise, so
    a thread that reads it while another extends it can only see ids too many: the reducer
    then takes `add_messages`' path, which gives the same result."""

    def __init__(self) -> None:
        self._last: tuple[list[Any], set[Any]] = ([], set())

    def __call__(self, messages: Sequence[Any]) -> set[Any] | None:
        seen, ids = self._last
        if seen and starts_with(messages, seen):
            new = messages[len(seen) :]
        else:
            new, ids = messages, set()
        if new:
            others = set(map(type, new)) - _STANDARD
            if others and not all(map(_plain, others)):
                return None
            added = set(map(ID_OF, new))
            if None in added:
                return None
            ids.update(added)
            self._last = (list(messages), ids)  # one assignment: threads see either
        return ids


_KNOWN = _KnownIds()


def _plain(kind: type) -> bool:
    """A message class `add_messages` keeps as it is (no conversion, no chunk to merge)."""
    return issubclass(kind, BaseMessage) and not issubclass(kind, _NOT_APPENDED)


_NOT_APPENDED = (RemoveMessage, BaseMessageChunk)
_STANDARD = frozenset({HumanMessage, AIMessage, ToolMessage, SystemMessage})


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
