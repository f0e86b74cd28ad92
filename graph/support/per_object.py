"""A value computed once per live object, for work every step would otherwise redo on the same
messages (a request carries every earlier message of the run again).

Messages are pydantic models: unhashable, and two equal messages are still two objects. So the
cache is keyed by the object's identity, with a weak reference that tells a live object from a
new one at a reused address and drops the entry when the object goes; a caller's fingerprint
(cheap facts such as the content's length) catches an edit made in place. `each` also keeps the
last list it was given, so a list that grew at its end costs the new objects only.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# a message's content and metadata, read by `map` (fingerprints built in C, not in a loop)
CONTENT = operator.attrgetter("content")
METADATA = operator.attrgetter("response_metadata")


def starts_with(objects: Sequence[Any], prefix: Sequence[Any]) -> bool:
    """Whether `objects` begins with these very objects (identity, compared in C): how the
    per-step caches tell a list that grew at its end from another."""
    return len(objects) >= len(prefix) and all(map(operator.is_, prefix, objects))


class _Entry(weakref.ref):
    """A cache entry: the weak reference to its object, carrying the key, the fingerprint and
    the value. One object per entry where a tuple, a callback `partial` and its bound method
    were four: a run's requests add an entry per message, and each object the entries hold
    is one more for the garbage collector to count and walk."""

    __slots__ = ("fingerprint", "key", "value")
    key: int  # the object's id, the entry's key
    fingerprint: Hashable
    value: Any


class PerObject(Generic[T]):
    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._gone = self._forget  # the one callback every entry shares
        # the last list `each` was asked for (held, so no address in it is reused meanwhile)
        self._last: tuple[list[Any], list[Hashable], list[T]] = ([], [], [])

    def get(self, obj: Any, fingerprint: Hashable, compute: Callable[[Any], T]) -> T:
        key = id(obj)
        hit = self._entries.get(key)
        if hit is not None and hit() is obj and hit.fingerprint == fingerprint:
            return hit.value
        value = compute(obj)
        entry = _Entry(obj, self._gone)
        entry.key, entry.fingerprint, entry.value = key, fingerprint, value
        self._entries[key] = entry
        return value

    def each(
        self, objects: Sequence[Any], marks: Sequence[Hashable], compute: Callable[[Any], T]
    ) -> list[T]:
        """`get` for every object with its fingerprint. A run's requests grow at their end, so
        the last list asked for is kept: when the new one starts with those very objects and
        the same fingerprints (compared in C, not object by object in Python), their values
        are reused and only the rest is looked up (the caller builds the fingerprints with
        `map`, for the same reason)."""
        seen, seen_marks, seen_values = self._last
        known = len(seen)
        if known and starts_with(objects, seen) and seen_marks == marks[:known]:
            values = seen_values + self._looked_up(objects[known:], marks[known:], compute)
        else:
            values = self._looked_up(objects, marks, compute)
        self._last = (list(objects), list(marks), values)  # one assignment: threads see either
        return values

    def _looked_up(
        self, objects: Sequence[Any], marks: Sequence[Hashable], compute: Callable[[Any], T]
    ) -> list[T]:
        entries = self._entries
        out: list[T] = []
        for obj, mark in zip(objects, marks, strict=True):
            hit = entries.get(id(obj))
            if hit is not None and hit.fingerprint == mark and hit() is obj:
                out.append(hit.value)
            else:
                out.append(self.get(obj, mark, compute))
        return out

    def __contains__(self, obj: Any) -> bool:
        hit = self._entries.get(id(obj))
        return hit is not None and hit() is obj

    def __len__(self) -> int:
        return len(self._entries)

    def _forget(self, entry: _Entry) -> None:
        """The object went: its entry goes too, unless a newer one took the slot."""
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]
