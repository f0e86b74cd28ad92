"""The full-state reading of a thread's history: rows from `get_state_history` snapshots.

It rebuilds every checkpoint's whole state, so it costs the square of a thread's length, but
it is plainly right: the tests check `graph.persistence.timeline.aiter_history` (which streams
the same rows without rebuilding any state) against it, and `bench/long_threads.py --history
legacy` measures it. Both readings describe a checkpoint with `describe_changes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graph.persistence.history import HistoryRow, describe_changes


def history_rows(snapshots: Sequence[Any]) -> list[HistoryRow]:
    """Rows oldest first, from `get_state_history` output (newest first)."""
    ordered = list(reversed(snapshots))
    rows = []
    for index, snapshot in enumerate(ordered):
        previous = ordered[index - 1] if index else None
        node = _writer(snapshot, previous)
        parent = (snapshot.parent_config or {}).get("configurable", {})
        rows.append(
            HistoryRow(
                step=int((snapshot.metadata or {}).get("step", -1)),
                node=node,
                checkpoint_id=snapshot.config["configurable"]["checkpoint_id"],
                next=tuple(snapshot.next),
                summary=_summarize(node, snapshot, previous),
                created_at=snapshot.created_at,
                parent_checkpoint_id=parent.get("checkpoint_id"),
            )
        )
    return rows


def _writer(snapshot: Any, previous: Any) -> str:
    source = (snapshot.metadata or {}).get("source")
    if source in ("input", "update"):
        return str(source)
    if previous is None:
        return "start"
    names = sorted({task.name for task in previous.tasks}) if previous.tasks else []
    return ",".join(names) or "-"


def _summarize(node: str, snapshot: Any, previous: Any) -> str:
    """What happened at this checkpoint, in one line, from two full states."""
    if node == "input":
        return "new input"
    values = snapshot.values or {}
    before = (previous.values or {}) if previous is not None else {}
    known = {m.id for m in before.get("messages", []) if getattr(m, "id", None)}
    fresh = [m for m in values.get("messages", []) if not m.id or m.id not in known]
    return describe_changes(node, fresh, values, before, snapshot.interrupts)
