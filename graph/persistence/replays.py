"""A small cache of delta-channel histories, so a thread's conversation is not rebuilt from
the store three times per turn.

The conversation is a LangGraph delta channel: loading a checkpoint asks the saver for the
channel's history (the last stored snapshot and every write after it, oldest first), which on
SQLite walks the checkpoint chain back to that snapshot and decodes every write on the way. A
turn loads the thread's head several times (the caller's state read, the run's own start, the
state read after the run), mostly the same checkpoint, so the last few histories read are kept,
decoded, keyed by thread, namespace, checkpoint and channels.

A checkpoint's history is fixed once the checkpoint exists: it reads the writes stored on its
ancestors, never its own, and LangGraph does not add writes to a checkpoint that already has
children (an update or a replay there forks first). Still, any write stored on a checkpoint
drops the cached histories of that thread's later checkpoints, and deleting a thread drops
them all, so a cached history is never staler than the store.

On the async SQLite saver a checkpoint whose near ancestor is cached (the state read after a
run, a few checkpoints past the one read before it) is not walked back to the last snapshot:
`aextend` reads only the checkpoints in between and their writes, and appends them to the
ancestor's history, in the order LangGraph's own walk gives (`writes_sort_key` within a
checkpoint, oldest checkpoint first). Anything unusual (no cached ancestor within `REACH`
checkpoints, an old table layout) falls back to LangGraph's walk.

Histories are handed out as fresh lists around the cached, immutable writes; the message
objects inside are shared between loads, as they are between a run's nodes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

Key = tuple[str, str, str]  # thread, namespace, checkpoint
SIZE = 8  # channel histories kept per saver: a head or two of the thread being run
REACH = 64  # checkpoints walked back looking for a cached ancestor
_ROW = (
    "SELECT parent_checkpoint_id, type, checkpoint FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)
_WRITES = (
    "SELECT checkpoint_id, channel, task_id, idx, type, value, task_path FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({cids}) "
    "AND channel IN ({channels})"
)


class DeltaHistories:
    """The last `size` channel histories a saver read, one entry per checkpoint and channel
    (a checkpoint that stores one channel's snapshot is asked about the others only)."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str, str, str], Mapping[str, Any]] = OrderedDict()

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
        """The cached histories of these channels at that checkpoint, if all are cached."""
        if key is None or any((*key, ch) not in self._items for ch in channels):
            return None
        found = {}
        for channel in channels:
            self._items.move_to_end((*key, channel))
            found[channel] = self._items[(*key, channel)]
        return found

    def get(self, key: Key | None, channels: Sequence[str]) -> dict[str, Any] | None:
        found = self.covering(key, channels)
        return None if found is None else _fresh(found)

    def put(self, key: Key | None, history: Mapping[str, Any]) -> Mapping[str, Any]:
        if key is not None:
            for channel, entry in _fresh(history).items():
                self._items[(*key, channel)] = entry
                self._items.move_to_end((*key, channel))
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return history

    def wrote(self, config: Any) -> None:
        """Writes were stored on the checkpoint `config` names: forget its thread's later ones
        (checkpoint ids grow with time), or all of the thread's when it names none."""
        configurable = (config or {}).get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if thread_id is None:
            self._items.clear()
            return
        checkpoint_id = str(configurable.get("checkpoint_id") or "")
        for item in [k for k in self._items if k[0] == str(thread_id)]:
            if not checkpoint_id or item[2] > checkpoint_id:
                del self._items[item]

    def forget(self, thread_id: Any) -> None:
        for item in [k for k in self._items if k[0] == str(thread_id)]:
            del self._items[item]


async def aextend(
    saver: Any, cache: DeltaHistories, key: Key, channels: Sequence[str]
) -> dict[str, Any] | None:
    """The history of checkpoint `key` on an async SQLite saver, from a cached ancestor's and
    the writes since; None when no ancestor within `REACH` checkpoints is cached."""
    from langgraph.checkpoint.base import writes_sort_key

    thread_id, namespace, target = key
    chain: list[str] = []  # newest first, the target left out (its writes are its own)
    seeds: dict[str, Any] = {}
    seeded_at: dict[str, int] = {}  # channel -> index in `chain` of its seed
    base: Mapping[str, Any] | None = None
    async with saver.lock:
        row = await _fetch_row(saver, thread_id, namespace, target)
        for _ in range(REACH):
            parent = row[0] if row else None
            if not parent:
                return None
            base = cache.covering((thread_id, namespace, parent), channels)
            chain.append(parent)
            if base is not None:
                break
            row = await _fetch_row(saver, thread_id, namespace, parent)
            if row is None:
                return None
            values = saver.serde.loads_typed((row[1], row[2])).get("channel_values") or {}
            for channel in channels:
                if channel not in seeded_at and channel in values:
                    seeds[channel], seeded_at[channel] = values[channel], len(chain) - 1
            if len(seeded_at) == len(channels):
                break
        else:
            return None
        marks = ",".join("?" * len(chain))
        query = _WRITES.format(cids=marks, channels=",".join("?" * len(channels)))
        params = (thread_id, namespace, *chain, *channels)
        async with saver.conn.execute(query, params) as cursor:
            rows = await cursor.fetchall()
    age = {cid: index for index, cid in enumerate(chain)}
    rows.sort(key=lambda r: (-age[r[0]], writes_sort_key(r[6] or "", r[2], r[3])))
    history: dict[str, Any] = {}
    for channel in channels:
        start = seeded_at.get(channel)
        writes = [
            (r[2], channel, saver.serde.loads_typed((r[4], r[5])))
            for r in rows
            if r[1] == channel and (start is None or age[r[0]] <= start)
        ]
        if start is not None:
            history[channel] = {"seed": seeds[channel], "writes": writes}
        elif base is not None:
            before = base[channel]
            history[channel] = {**before, "writes": [*before["writes"], *writes]}
        else:
            return None
    return history


async def _fetch_row(saver: Any, thread_id: str, namespace: str, checkpoint_id: str) -> Any:
    async with saver.conn.execute(_ROW, (thread_id, namespace, checkpoint_id)) as cursor:
        return await cursor.fetchone()


def _fresh(history: Mapping[str, Any]) -> dict[str, Any]:
    """A copy a caller may change without touching the cached one."""
    return {
        channel: {**entry, "writes": list(entry["writes"])} for channel, entry in history.items()
    }


__all__ = ["DeltaHistories"]
