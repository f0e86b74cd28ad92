"""A thread's history as a stream of rows, without rebuilding any full state.

`get_state_history` rebuilds every checkpoint's whole state: the conversation is a delta
channel, so each snapshot replays every message written before it, and a thread of N
checkpoints costs O(N²) time and, kept as a list, O(N²) memory (a 500-turn thread: minutes and
gigabytes). A row needs none of that. What happened at a checkpoint is what the tasks that ran
from its parent wrote (the parent's pending writes: a question, a model step, observations), a
status that changed, and the pause it waits on. So this module reads each checkpoint through a
*skimming* view of the saver (`skimming`) that tells LangGraph the delta channels have no
history to replay: the graph still works out the next tasks, the pauses and the plain channels
(status, answer, error), the conversation stays empty, and each row is derived from that
checkpoint's own writes.

Checkpoint ids are read oldest first in pages (SQL on SQLite and PostgreSQL, the saver's own
index in memory), so time is linear in the thread's length and memory holds one page of ids and
two checkpoints, whatever the length:

    async for row in aiter_history(agent, "thread-1"):   # oldest first
        print(row.step, row.node, row.summary)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from graph.messages import RERUN
from graph.persistence.history import HistoryRow, describe_changes
from graph.persistence.queries import acolumn
from graph.persistence.skimming import SkimmingSaver

PAGE = 200  # checkpoint ids read per query
MESSAGES = "messages"
_IDS = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
    "AND checkpoint_id > ? ORDER BY checkpoint_id LIMIT ?"
)


def ran_again(found: Any) -> str:
    """The plain-words mark of a call that ran again after a crash cut an earlier attempt short,
    or "" for any other call. `found` is a trace step (`rerun: True`), a step event (`rerun`:
    the count) or a ToolMessage (`response_metadata["react_rerun"]`: the count). A person must
    be told: a side effect of that call may have happened twice."""
    if isinstance(found, Mapping):
        count = found.get("rerun")
    else:
        count = (getattr(found, "response_metadata", None) or {}).get(RERUN)
    if not count:
        return ""
    if isinstance(count, int) and not isinstance(count, bool) and count > 1:
        return f" (ran again: {count} earlier attempts were interrupted)"
    return " (ran again: an earlier attempt was interrupted)"


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _memory_ids(saver: Any, thread_id: str) -> list[str]:
    return sorted(saver.storage.get(thread_id, {}).get("", {}))


async def _aid_pages(saver: Any, thread_id: str) -> AsyncIterator[list[str]]:
    """The thread's checkpoint ids, oldest first, a page at a time."""
    if isinstance(saver, InMemorySaver):
        yield _memory_ids(saver, thread_id)
        return
    after = ""
    while page := await acolumn(saver, _IDS, (thread_id, after, PAGE)):
        yield page
        after = page[-1]
    if page is None:
        found = [
            i.config["configurable"]["checkpoint_id"] async for i in saver.alist(_config(thread_id))
        ]
        yield found[::-1]


class _Read(NamedTuple):
    item: CheckpointTuple
    snapshot: Any  # its skimmed StateSnapshot

    @property
    def id(self) -> str:
        return self.item.config["configurable"]["checkpoint_id"]

    @property
    def parent_id(self) -> str | None:
        return ((self.item.parent_config or {}).get("configurable") or {}).get("checkpoint_id")


class _Reader:
    """The agent re-pointed at a skimming view of the saver, and the checkpoint read last (the
    next one's parent, unless the thread forks)."""

    def __init__(self, agent: Any, saver: BaseCheckpointSaver | None) -> None:
        self.inner = saver if saver is not None else agent.checkpointer
        self.skim = SkimmingSaver(self.inner)
        self.light = agent.copy(update={"checkpointer": self.skim})
        self.previous: _Read | None = None
        self.seen: set[str] = set()  # the messages rows have described (`_said`)

    async def aread(self, thread_id: str, checkpoint_id: str | None) -> _Read | None:
        item = (
            await self.inner.aget_tuple(_config(thread_id, checkpoint_id))
            if checkpoint_id
            else None
        )
        if item is None:
            return None
        self.skim.hold(item)
        return _Read(item, await self.light.aget_state(item.config))

    def missing(self, read: _Read) -> str | None:
        """The parent's id when it must be read: it is not the checkpoint read last."""
        known = self.previous is not None and self.previous.id == read.parent_id
        return None if known else read.parent_id

    def row(self, read: _Read, parent: _Read | None) -> HistoryRow:
        """The row of `read` (its parent read just now, or the checkpoint read last)."""
        if parent is None and self.previous is not None and self.previous.id == read.parent_id:
            parent = self.previous
        self.previous = read
        return _row(read, parent, self.seen)


def _row(read: _Read, parent: _Read | None, seen: set[str]) -> HistoryRow:
    """A checkpoint's row from its skimmed snapshot and its parent's pending writes. A message
    an earlier row described (`seen`, by id) is not this row's: a new turn writes the whole
    conversation again to put its answers for unfinished calls before the new question."""
    metadata = read.item.metadata or {}
    source = metadata.get("source")
    before, fresh, node = None, [], "start"
    if parent is not None:
        before = parent.snapshot.values or {}
        ran = {task.id for task in parent.snapshot.tasks}
        node = ",".join(sorted({task.name for task in parent.snapshot.tasks})) or "-"
        ours = (lambda task_id: task_id not in ran) if source == "update" else ran.__contains__
        writes = () if source == "fork" else parent.item.pending_writes or ()  # the old branch's
        fresh = _messages(w for w in writes if ours(w[0]))
        fresh = [x for x in fresh if not x.id or not seen.intersection(_said(x))]
        for x in fresh:
            seen.update({x.id} if x.id else _said(x))
    if source in ("input", "update", "fork"):
        node = str(source)
    snapshot = read.snapshot
    values = snapshot.values or {}
    if node == "input":
        summary = "new input"
    elif node == "fork":  # a copy of its parent that a resume or replay runs on from
        summary = "fork: the run goes on from here; the earlier branch stays in the history"
    else:
        summary = describe_changes(node, fresh, values, before, snapshot.interrupts)
    for message in fresh:  # a result of a call that ran again after a crash says so
        if mark := ran_again(message):
            summary += f"; {getattr(message, 'name', None) or 'tool'}{mark}"
    return HistoryRow(
        step=int(metadata.get("step", -1)),
        node=node,
        checkpoint_id=read.id,
        next=tuple(snapshot.next),
        summary=summary,
        created_at=snapshot.created_at,
        parent_checkpoint_id=read.parent_id,
    )


def _said(message: Any) -> set[str]:
    """What identifies a message a row described: its id, and for a question its text. An
    input's question is written without an id and always described (the same question may be
    asked twice); the thread's reducer gives it one, and a later step that writes it again
    (a new turn putting its answers for unfinished calls before it) carries that id."""
    question = {f"question:{message.text}"} if message.type == "human" else set()
    return ({message.id} if message.id else set()) | question


def _messages(writes: Any) -> list[Any]:
    """The messages among pending writes, as LangChain messages (an input's `("user", "...")`
    converted); a write that is not one is skipped, since a row only describes."""
    from langchain_core.messages import convert_to_messages

    found: list[Any] = []
    for _task, channel, value in writes:
        if channel != MESSAGES:
            continue
        for item in value if isinstance(value, list) else [value]:
            try:
                found.extend(convert_to_messages([item]))
            except Exception:  # a row describes what it can read
                continue
    return found


async def aiter_history(
    agent: Any, thread_id: str, *, saver: BaseCheckpointSaver | None = None
) -> AsyncIterator[HistoryRow]:
    """The thread's rows, oldest first, streamed: no full state is rebuilt, memory stays
    bounded whatever the thread's length. `saver` defaults to the agent's checkpointer."""
    reader = _Reader(agent, saver)
    async for page in _aid_pages(reader.inner, thread_id):
        for checkpoint_id in page:
            if (read := await reader.aread(thread_id, checkpoint_id)) is not None:
                yield reader.row(read, await reader.aread(thread_id, reader.missing(read)))
    reader.skim.hold(None)


__all__ = ["PAGE", "SkimmingSaver", "aiter_history", "ran_again"]
