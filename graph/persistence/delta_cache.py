"""The last few delta-channel histories a saver read, so a long thread's turn does not rebuild
its conversation from the store three times (issue 27).

The conversation is a LangGraph delta channel: loading a checkpoint asks the saver for the
channel's history (the last stored snapshot and every write after it, oldest first), which
walks the checkpoint chain back to that snapshot and decodes every write on the way: on a
thread of a few hundred turns, a few thousand checkpoints and a thousand messages. A turn loads
the thread's head three times (the caller's state read, the run's own start, the state read
after the run), the first two the same checkpoint, the third a few checkpoints past it. So the
last `SIZE` histories read are kept, decoded, keyed by value: thread, namespace, checkpoint id
and channel (never by object identity).

A checkpoint's history is fixed once the checkpoint exists: it reads the writes stored on its
ancestors, never its own, and LangGraph adds no writes to a checkpoint that has children (an
update or a replay there forks first). The cache does not rely on that alone, so a cached
history is never staler than what this saver wrote:

- writes stored on a checkpoint drop the thread's cached histories of later checkpoints (its
  descendants: a checkpoint id is larger than its parent's); a checkpoint stored again under
  an existing id drops that one too;
- deleting or pruning a thread drops all of the thread's. (LangGraph's other ways of changing
  stored checkpoints, `copy_thread` and `delete_for_runs`, are implemented by none of the
  savers used here; one that gains them must drop the cache the same way.)

Another process writing the same thread is covered by LangGraph's rule above only, as any
reader's view of a checkpoint it has loaded.

Histories are handed out as fresh containers (the writes list, the seed's list or dict), so a
caller appending to a loaded conversation changes no later load. The message objects inside
are shared between loads, as they are between a run's nodes: LangChain messages are treated as
values (the reducers replace a message, never change one in place).

On the async SQLite saver a checkpoint whose near ancestor is cached (the state read after a
run) is not walked back to the snapshot: `delta_extend.aextend` reads only the checkpoints in
between and appends their writes to the ancestor's history.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from graph.persistence.delta_extend import Key, aextend

SIZE = 8  # (checkpoint, channel) histories kept per saver: a head or two of the running thread


class DeltaHistories:
    """The last `size` channel histories a saver read, one entry per checkpoint and channel
    (a checkpoint that stores one channel's snapshot is asked about the others only). Safe to
    share between threads: the sync savers write from LangGraph's worker threads."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str, str, str], Mapping[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(config: Any) -> Key | None:
        """The cache key, or None when `config` names no checkpoint (the head, which moves)."""
        configurable = (config or {}).get("configurable") or {}
        checkpoint_id = configurable.get("checkpoint_id")
        thread_id = configurable.get("thread_id")
        if not checkpoint_id or thread_id is None:
            return None
        return str(thread_id), str(configurable.get("checkpoint_ns") or ""), str(checkpoint_id)

    def covering(self, key: Key | None, channels: Sequence[str]) -> dict[str, Any] | None:
        """The cached entries of these channels at that checkpoint, if all are cached (shared:
        for building on, not for handing out)."""
        if key is None:
            return None
        with self._lock:
            if any((*key, ch) not in self._items for ch in channels):
                return None
            found = {}
            for channel in channels:
                self._items.move_to_end((*key, channel))
                found[channel] = self._items[(*key, channel)]
        return found

    def get(self, key: Key | None, channels: Sequence[str]) -> dict[str, Any] | None:
        """A copy of the cached histories of these channels at that checkpoint, or None."""
        found = self.covering(key, channels)
        return None if found is None else fresh(found)

    def put(self, key: Key | None, history: Mapping[str, Any]) -> Mapping[str, Any]:
        """Keep a copy of `history` (the caller goes on with the one it read)."""
        if key is not None:
            kept = fresh(history)
            with self._lock:
                for channel, entry in kept.items():
                    self._items[(*key, channel)] = entry
                    self._items.move_to_end((*key, channel))
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return history

    def drop(self, thread_id: Any = None, after: str = "", *, inclusive: bool = False) -> None:
        """Forget the thread's histories of checkpoints after `after` (or from it, when
        `inclusive`); all of the thread's when `after` is empty; everything when no thread."""
        with self._lock:
            if thread_id is None:
                self._items.clear()
                return
            for item in [k for k in self._items if k[0] == str(thread_id)]:
                if not after or item[2] > after or (inclusive and item[2] == after):
                    del self._items[item]

    def wrote(self, config: Any) -> None:
        """Writes were stored on the checkpoint `config` names: its descendants' histories read
        them (all of the thread's are dropped when it names no checkpoint)."""
        configurable = (config or {}).get("configurable") or {}
        self.drop(configurable.get("thread_id"), str(configurable.get("checkpoint_id") or ""))


class HistoryCache:
    """The saver mixin: delta-channel histories served from `histories` when cached, and the
    cache told about every write and deletion that goes through the saver."""

    @property
    def histories(self) -> DeltaHistories:
        """This saver's cache, made on first use (savers are built by LangGraph's constructors,
        which this mixin leaves alone)."""
        cache = self.__dict__.get("_delta_histories")
        if cache is None:
            cache = self.__dict__["_delta_histories"] = DeltaHistories()
        return cache

    # -- reads ----------------------------------------------------------------------------

    def get_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        key = self.histories.key(config)
        if (cached := self.histories.get(key, channels)) is not None:
            return cached
        history = super().get_delta_channel_history(  # type: ignore[misc]
            config=config, channels=channels
        )
        return self.histories.put(key, history)

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        key = self.histories.key(config)
        if (cached := self.histories.get(key, channels)) is not None:
            return cached
        history = None
        if key is not None:
            cached = functools.partial(self.histories.covering, channels=channels)
            history = await aextend(self, key, channels, cached)
        if history is None:
            history = await super().aget_delta_channel_history(  # type: ignore[misc]
                config=config, channels=channels
            )
        return self.histories.put(key, history)

    # -- writes and deletions: what the cache must forget --------------------------------

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self._replacing(config, checkpoint)
        return super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc]

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self._replacing(config, checkpoint)
        return await super().aput(config, checkpoint, metadata, new_versions)  # type: ignore[misc]

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        try:
            super().put_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        finally:  # after the write, so no read during it caches what it is replacing
            self.histories.wrote(config)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        try:
            await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        finally:
            self.histories.wrote(config)

    def delete_thread(self, thread_id: str) -> None:
        try:
            super().delete_thread(thread_id)  # type: ignore[misc]
        finally:
            self.histories.drop(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        try:
            await super().adelete_thread(thread_id)  # type: ignore[misc]
        finally:
            self.histories.drop(thread_id)

    def prune(self, thread_ids: Sequence[str], **kwargs: Any) -> None:
        try:
            super().prune(thread_ids, **kwargs)  # type: ignore[misc]
        finally:
            for thread_id in thread_ids:
                self.histories.drop(thread_id)

    async def aprune(self, thread_ids: Sequence[str], **kwargs: Any) -> None:
        try:
            await super().aprune(thread_ids, **kwargs)  # type: ignore[misc]
        finally:
            for thread_id in thread_ids:
                self.histories.drop(thread_id)

    def _replacing(self, config: Any, checkpoint: Any) -> None:
        """A checkpoint stored under an id the store may hold already (`put` replaces) changes
        that checkpoint's history and its descendants'; a new one (the usual case) drops none."""
        thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
        checkpoint_id = (checkpoint or {}).get("id")
        if thread_id is not None and checkpoint_id:
            self.histories.drop(thread_id, str(checkpoint_id), inclusive=True)


def fresh(history: Mapping[str, Any]) -> dict[str, Any]:
    """A copy whose containers a caller may change without touching the cached one: the
    writes list and the seed's value (a `_DeltaSnapshot` named tuple, or a plain value)."""
    return {channel: _fresh_entry(entry) for channel, entry in history.items()}


def _fresh_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    copied = {**entry, "writes": list(entry["writes"])}
    if "seed" in entry:
        seed = entry["seed"]
        if isinstance(seed, tuple) and hasattr(seed, "_replace") and hasattr(seed, "value"):
            copied["seed"] = seed._replace(value=copy.copy(seed.value))
        else:
            copied["seed"] = copy.copy(seed)
    return copied


__all__ = ["DeltaHistories", "HistoryCache", "fresh"]
