"""A value computed once per live object, for work every step would otherwise redo on the same
messages (a request carries every earlier message of the run again).

Messages are pydantic models: unhashable, and two equal messages are still two objects. So the
cache is keyed by the object's identity, with a weak reference that tells a live object from a
new one at a reused address and drops the entry when the object goes; a caller's fingerprint
(cheap facts such as the content's length) catches an edit made in place.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class PerObject(Generic[T]):
    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Hashable, T]] = {}

    def get(self, obj: Any, fingerprint: Hashable, compute: Callable[[Any], T]) -> T:
        key = id(obj)
        hit = self._entries.get(key)
        if hit is not None and hit[0]() is obj and hit[1] == fingerprint:
            return hit[2]
        value = compute(obj)
        self._entries[key] = (weakref.ref(obj, partial(self._forget, key)), fingerprint, value)
        return value

    def each(
        self, objects: Sequence[Any], marks: Sequence[Hashable], compute: Callable[[Any], T]
    ) -> list[T]:
        """`get` for every object with its fingerprint, in one loop: a request carries every
        earlier message of the run, and this runs at every step (the caller builds the
        fingerprints in one comprehension, cheaper than a call per object)."""
        entries = self._entries
        out: list[T] = []
        for obj, mark in zip(objects, marks, strict=True):
            hit = entries.get(id(obj))
            if hit is not None and hit[1] == mark and hit[0]() is obj:
                out.append(hit[2])
            else:
                out.append(self.get(obj, mark, compute))
        return out

    def __contains__(self, obj: Any) -> bool:
        hit = self._entries.get(id(obj))
        return hit is not None and hit[0]() is obj

    def __len__(self) -> int:
        return len(self._entries)

    def _forget(self, key: int, ref: weakref.ref) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry[0] is ref:
            del self._entries[key]
