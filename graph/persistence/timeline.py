"""A thread's history as a stream of rows, without rebuilding any full state.

`get_state_history` rebuilds every checkpoint's whole state: the conversation is a delta
channel, so each snapshot replays every message written before it, and a thread of N
checkpoints costs O(N²) time and, kept as a list, O(N²) memory (a 500-turn thread: minutes and
gigabytes). A row needs none of that. What happened at a checkpoint is what the tasks that ran
from its parent wrote (the parent's pending writes: a question, a model step, observations), a
status that changed, and the pause it waits on. So this module reads each checkpoint through a
*skimming* view of the saver that tells LangGraph the delta channels have no history to replay:
the graph still works out the next tasks, the pauses and the plain channels (status, answer,
error), the conversation stays empty, and each row is derived from that checkpoint's own writes.

Checkpoint ids are read oldest first in pages (SQL on SQLite and PostgreSQL, the saver's own
index in memory), so time is linear in the thread's length and memory holds one page of ids and
two checkpoints, whatever the length:

    async for row in aiter_history(agent, "thread-1"):   # oldest first
        print(row.step, row.node, row.summary)

`iter_history(agent, thread_id)` is the same for an agent with a sync saver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from graph.messages import RERUN
from graph.persistence.history import HistoryRow, describe_changes

PAGE = 200  # checkpoint ids read per query
MESSAGES = "messages"
_IDS = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = {p} AND checkpoint_ns = '' "
    "AND checkpoint_id > {p} ORDER BY checkpoint_id LIMIT {p}"
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


class SkimmingSaver(BaseCheckpointSaver):
    """A read-only view of `inner` whose delta channels replay nothing.

    Loading a checkpoint through it yields the next tasks, the pauses and the plain channels,
    with the conversation left empty (or as its last stored snapshot). `hold(tuple)` hands it a
    checkpoint already read, so the graph does not read it a second time.
    """

    def __init__(self, inner: BaseCheckpointSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self._held: CheckpointTuple | None = None

    def hold(self, item: CheckpointTuple | None) -> None:
        self._held = item

    def _cached(self, config: Any) -> CheckpointTuple | None:
        held = self._held
        if held is None:
            return None
        wanted = (config.get("configurable") or {}).get("checkpoint_id")
        return held if wanted == held.config["configurable"]["checkpoint_id"] else None

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        return self._cached(config) or self.inner.get_tuple(config)

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return self._cached(config) or await self.inner.aget_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, **kwargs)

    def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        return self.inner.alist(config, **kwargs)

    def get_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return {channel: {"writes": []} for channel in channels}

    async def aget_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return {channel: {"writes": []} for channel in channels}

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("the skimming view of a saver only reads")

    put = put_writes = delete_thread = _refuse

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse()

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()


def _config(thread_id: str, checkpoint_id: str) -> dict[str, Any]:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }


def _memory_ids(saver: Any, thread_id: str) -> list[str]:
    return sorted(saver.storage.get(thread_id, {}).get("", {}))


async def _aid_pages(saver: Any, thread_id: str) -> AsyncIterator[list[str]]:
    """The thread's checkpoint ids, oldest first, a page at a time."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(saver, InMemorySaver):
        yield _memory_ids(saver, thread_id)
        return
    if isinstance(saver, AsyncSqliteSaver):
        await saver.setup()
        async for page in _apaged(lambda after: _asqlite_page(saver, thread_id, after)):
            yield page
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    if isinstance(saver, AsyncPostgresSaver):
        async for page in _apaged(lambda after: _postgres_page(saver, thread_id, after)):
            yield page
        return
    ids = [
        item.config["configurable"]["checkpoint_id"]
        async for item in saver.alist(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        )
    ]
    yield ids[::-1]


async def _apaged(fetch: Callable[[str], Awaitable[list[str]]]) -> AsyncIterator[list[str]]:
    """Pages of ids from `fetch(after)` (the ids after `after`), until one comes back empty."""
    after = ""
    while page := await fetch(after):
        yield page
        after = page[-1]


def _paged(fetch: Callable[[str], list[str]]) -> Iterator[list[str]]:
    """`_apaged` for a sync `fetch`."""
    after = ""
    while page := fetch(after):
        yield page
        after = page[-1]


async def _asqlite_page(saver: Any, thread_id: str, after: str) -> list[str]:
    async with (
        saver.lock,
        saver.conn.execute(_IDS.format(p="?"), (thread_id, after, PAGE)) as cursor,
    ):
        return [row[0] for row in await cursor.fetchall()]


def _sqlite_page(saver: Any, thread_id: str, after: str) -> list[str]:
    with saver.cursor(transaction=False) as cursor:
        cursor.execute(_IDS.format(p="?"), (thread_id, after, PAGE))
        return [row[0] for row in cursor.fetchall()]


async def _postgres_page(saver: Any, thread_id: str, after: str) -> list[str]:
    from psycopg.rows import tuple_row
    from psycopg_pool import AsyncConnectionPool

    query = _IDS.format(p="%s")
    async with saver.lock:
        if isinstance(saver.conn, AsyncConnectionPool):
            async with saver.conn.connection() as conn:
                cursor = conn.cursor(row_factory=tuple_row)
                await cursor.execute(query, (thread_id, after, PAGE))
                return [row[0] for row in await cursor.fetchall()]
        cursor = saver.conn.cursor(row_factory=tuple_row)
        await cursor.execute(query, (thread_id, after, PAGE))
        return [row[0] for row in await cursor.fetchall()]


def _id_pages(saver: Any, thread_id: str) -> Iterator[list[str]]:
    """`_aid_pages` for sync savers."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(saver, InMemorySaver):
        yield _memory_ids(saver, thread_id)
        return
    if isinstance(saver, SqliteSaver):
        yield from _paged(lambda after: _sqlite_page(saver, thread_id, after))
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    if isinstance(saver, PostgresSaver):
        yield from _paged(lambda after: _postgres_page_sync(saver, thread_id, after))
        return
    ids = [
        item.config["configurable"]["checkpoint_id"]
        for item in saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    ]
    yield ids[::-1]


def _postgres_page_sync(saver: Any, thread_id: str, after: str) -> list[str]:
    from psycopg.rows import tuple_row
    from psycopg_pool import ConnectionPool

    query = _IDS.format(p="%s")
    with saver.lock:
        if isinstance(saver.conn, ConnectionPool):
            with saver.conn.connection() as conn:
                cursor = conn.cursor(row_factory=tuple_row)
                return [row[0] for row in cursor.execute(query, (thread_id, after, PAGE))]
        cursor = saver.conn.cursor(row_factory=tuple_row)
        return [row[0] for row in cursor.execute(query, (thread_id, after, PAGE))]


class _Rows:
    """The row of each checkpoint from it, its parent's skimmed snapshot and the parent's
    pending writes. Keeps only the previous checkpoint (the parent, unless the thread forks)."""

    def __init__(self) -> None:
        self.previous: tuple[str, CheckpointTuple, Any] | None = None

    def parent(self, item: CheckpointTuple) -> str | None:
        return ((item.parent_config or {}).get("configurable") or {}).get("checkpoint_id")

    def known(self, checkpoint_id: str | None) -> tuple[CheckpointTuple, Any] | None:
        if self.previous is not None and self.previous[0] == checkpoint_id:
            return self.previous[1], self.previous[2]
        return None

    def row(
        self, item: CheckpointTuple, snapshot: Any, parent: tuple[CheckpointTuple, Any] | None
    ) -> HistoryRow:
        metadata = item.metadata or {}
        source = metadata.get("source")
        before, fresh, node = None, [], "start"
        if parent is not None:
            parent_item, parent_snapshot = parent
            before = parent_snapshot.values or {}
            ran = {task.id for task in parent_snapshot.tasks}
            node = ",".join(sorted({task.name for task in parent_snapshot.tasks})) or "-"
            ours = (lambda task_id: task_id not in ran) if source == "update" else ran.__contains__
            fresh = _messages(w for w in parent_item.pending_writes or () if ours(w[0]))
        if source in ("input", "update"):
            node = str(source)
        values = snapshot.values or {}
        summary = (
            "new input"
            if node == "input"
            else describe_changes(node, fresh, values, before, snapshot.interrupts)
        )
        for message in fresh:  # a result of a call that ran again after a crash says so
            if mark := ran_again(message):
                summary += f"; {getattr(message, 'name', None) or 'tool'}{mark}"
        return HistoryRow(
            step=int(metadata.get("step", -1)),
            node=node,
            checkpoint_id=item.config["configurable"]["checkpoint_id"],
            next=tuple(snapshot.next),
            summary=summary,
            created_at=snapshot.created_at,
            parent_checkpoint_id=self.parent(item),
        )

    def keep(self, item: CheckpointTuple, snapshot: Any) -> None:
        self.previous = (item.config["configurable"]["checkpoint_id"], item, snapshot)


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
    inner = saver if saver is not None else agent.checkpointer
    skim = SkimmingSaver(inner)
    light = agent.copy(update={"checkpointer": skim})
    rows = _Rows()
    async for page in _aid_pages(inner, thread_id):
        for checkpoint_id in page:
            item = await inner.aget_tuple(_config(thread_id, checkpoint_id))
            if item is None:  # deleted while being read
                continue
            skim.hold(item)
            snapshot = await light.aget_state(item.config)
            parent_id = rows.parent(item)
            parent = rows.known(parent_id)
            if parent is None and parent_id:
                parent = await _aread(inner, skim, light, thread_id, parent_id)
            yield rows.row(item, snapshot, parent)
            rows.keep(item, snapshot)
    skim.hold(None)


async def _aread(
    inner: Any, skim: SkimmingSaver, light: Any, thread_id: str, checkpoint_id: str
) -> tuple[CheckpointTuple, Any] | None:
    item = await inner.aget_tuple(_config(thread_id, checkpoint_id))
    if item is None:
        return None
    skim.hold(item)
    return item, await light.aget_state(item.config)


def iter_history(
    agent: Any, thread_id: str, *, saver: BaseCheckpointSaver | None = None
) -> Iterator[HistoryRow]:
    """`aiter_history` for an agent with a sync saver."""
    inner = saver if saver is not None else agent.checkpointer
    skim = SkimmingSaver(inner)
    light = agent.copy(update={"checkpointer": skim})
    rows = _Rows()
    for page in _id_pages(inner, thread_id):
        for checkpoint_id in page:
            item = inner.get_tuple(_config(thread_id, checkpoint_id))
            if item is None:
                continue
            skim.hold(item)
            snapshot = light.get_state(item.config)
            parent_id = rows.parent(item)
            parent = rows.known(parent_id)
            if parent is None and parent_id:
                found = inner.get_tuple(_config(thread_id, parent_id))
                if found is not None:
                    skim.hold(found)
                    parent = (found, light.get_state(found.config))
            yield rows.row(item, snapshot, parent)
            rows.keep(item, snapshot)
    skim.hold(None)


__all__ = ["PAGE", "SkimmingSaver", "aiter_history", "iter_history"]
