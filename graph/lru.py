"""A small least-recently-used cache with a fixed bound: every cache in the project is one of
these, keyed by values (never by `id()`), so none grows without limit."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def peek(self, key: Hashable) -> Any:
        """The cached value, or None."""
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        return None

    def put(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The cached value for `key`, made (and kept) on a miss."""
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self.put(key, value)
        return value

    def __len__(self) -> int:
        return len(self._items)
