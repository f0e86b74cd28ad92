"""A checkpoint's delta-channel history built from a cached ancestor's, on the async SQLite
saver (the CLI's), instead of LangGraph's walk back to the channel's last snapshot.

The state read after a run asks for the history of the new head, a few checkpoints past the
head read before the run, whose history `delta_cache` holds. LangGraph's walk would read and
decode every checkpoint back to the conversation's last snapshot (up to a thousand message
updates ago: thousands of checkpoints on a long thread); `aextend` reads only the checkpoints
in between and their writes, and appends them to the ancestor's history, in the order
LangGraph's own walk gives (`writes_sort_key` within a checkpoint, oldest checkpoint first).
Nothing unusual is handled here: no cached ancestor within `REACH` checkpoints, a read-only
store from before the `task_path` column, any other saver: the caller falls back to LangGraph's
walk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import writes_sort_key

Key = tuple[str, str, str]  # thread, namespace, checkpoint id
Cached = Callable[[Key], Mapping[str, Any] | None]  # the cached histories at a checkpoint
REACH = 64  # checkpoints walked back looking for a cached ancestor (a turn makes about six)
_ROW = (
    "SELECT parent_checkpoint_id, type, checkpoint FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)
_WRITES = (
    "SELECT checkpoint_id, channel, task_id, idx, type, value, task_path FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({cids}) "
    "AND channel IN ({channels})"
)


async def aextend(
    saver: Any, key: Key, channels: Sequence[str], cached: Cached
) -> dict[str, Any] | None:
    """The histories of `channels` at checkpoint `key`, from the nearest ancestor `cached`
    knows and the writes since; None when this cannot be done here (see the module)."""
    if not _extensible(saver):
        return None
    thread_id, namespace, target = key
    chain: list[str] = []  # ancestors, newest first (the target's own writes are not its)
    seeds: dict[str, Any] = {}
    seeded_at: dict[str, int] = {}  # channel -> index in `chain` of the snapshot it starts at
    base: Mapping[str, Any] | None = None
    async with saver.lock:
        row = await _row(saver, thread_id, namespace, target)
        for _ in range(REACH):
            parent = row[0] if row else None
            if not parent or parent in chain:  # the root, or a loop (`put` replaces ids)
                return None
            chain.append(parent)
            if (base := cached((thread_id, namespace, parent))) is not None:
                break
            row = await _row(saver, thread_id, namespace, parent)
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
        marks = ",".join("?" * len(chain)), ",".join("?" * len(channels))
        query = _WRITES.format(cids=marks[0], channels=marks[1])
        try:
            async with saver.conn.execute(query, (thread_id, namespace, *chain, *channels)) as c:
                rows = await c.fetchall()
        except sqlite3.OperationalError:  # a read-only store from before `task_path`
            return None
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


def _extensible(saver: Any) -> bool:
    """Whether `saver` is LangGraph's async SQLite saver, whose tables `aextend` reads."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # only where SQLite is used

    return isinstance(saver, AsyncSqliteSaver)


async def _row(saver: Any, thread_id: str, namespace: str, checkpoint_id: str) -> Any:
    async with saver.conn.execute(_ROW, (thread_id, namespace, checkpoint_id)) as cursor:
        return await cursor.fetchone()


__all__ = ["REACH", "aextend"]
