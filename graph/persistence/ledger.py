"""The call ledger: what ran, kept outside the checkpoints.

A fork or a replay restores a checkpoint's values, the approval seals included, so "this
decision already ran" and "this call started before and never finished" cannot live in the
checkpoints: they live in LangGraph's store (`runtime.store`), which `langgraph dev`, Aegra
(PostgreSQL, shared by its instances) and LangGraph Server always give a graph, and which the
CLI opens on the same URL as its checkpointer (`graph.persistence.savers.open_async_store`).

Two kinds of record, per thread (namespace `("react_agent", "calls", <thread id>)`):

* `decision/<id>`: an approval decision that was used. A gated call runs only by claiming its
  decision; a decision already claimed (the call ran, or started and was cut short by a crash)
  makes act ask the person again.
* `attempt/<task id>/<call id>`: how many times this task started the call and how many of
  those finished, written before the tool runs (so a crash leaves it behind) and after. A task
  that runs again after a crash (`react-agent resume`, or any engine re-running the run from
  its last checkpoint: LangGraph gives the task the same id) finds its earlier attempts and
  marks the call as a re-run.

With no store (code use: `build_graph(...)` without `store=`), the ledger is a LangGraph
`SqliteStore` in the agent's private state folder (`ledger.sqlite`, next to the approval key):
it holds for every process of this machine that shares that folder, not across machines. A run
with no thread id (no checkpointer) keeps no ledger: it cannot be replayed or resumed.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from graph.support.files import private_dir, private_file, state_dir

NAMESPACE = ("react_agent", "calls")
FILE = "ledger.sqlite"


@dataclass(frozen=True)
class Attempt:
    """One start of a call by one task: how many earlier starts of it never finished."""

    key: str
    earlier: int  # starts before this one that did not finish (a crash, a kill)
    finished: int


class Ledger:
    """Decisions spent and attempts started, for one thread, in `store`."""

    def __init__(self, store: BaseStore, thread_id: str) -> None:
        self.store = store
        self.namespace = (*NAMESPACE, label(thread_id))

    # -- decisions ------------------------------------------------------------------------

    def claim(self, decision: str, call_id: str) -> bool:
        """Spend `decision` on `call_id`; False when it was spent before (ask again)."""
        key = f"decision/{decision}"
        with _LOCK:
            if self.store.get(self.namespace, key) is not None:
                return False
            self.store.put(self.namespace, key, {"call": call_id}, index=False)
        return True

    async def aclaim(self, decision: str, call_id: str) -> bool:
        key = f"decision/{decision}"
        if await _aget(self.store, self.namespace, key) is not None:
            return False
        await _aput(self.store, self.namespace, key, {"call": call_id})
        return True

    def release(self, decision: str) -> None:
        """Give `decision` back: its call paused inside (an `interrupt()` of the tool's own),
        and the resume runs it on the same decision."""
        self.store.delete(self.namespace, f"decision/{decision}")

    async def arelease(self, decision: str) -> None:
        key = f"decision/{decision}"
        if _local(self.store):
            self.store.delete(self.namespace, key)
            return
        try:
            await self.store.adelete(self.namespace, key)
        except NotImplementedError:
            await asyncio.to_thread(self.store.delete, self.namespace, key)

    # -- attempts -------------------------------------------------------------------------

    def start(self, task_id: str, call_id: str) -> Attempt:
        """Record that this task starts the call (before its side effect)."""
        key = f"attempt/{task_id}/{call_id}"
        with _LOCK:
            item = self.store.get(self.namespace, key)
            attempt = _attempt(key, item.value if item is not None else None)
            self.store.put(self.namespace, key, _started(attempt), index=False)
        return attempt

    async def astart(self, task_id: str, call_id: str) -> Attempt:
        key = f"attempt/{task_id}/{call_id}"
        item = await _aget(self.store, self.namespace, key)
        attempt = _attempt(key, item.value if item is not None else None)
        await _aput(self.store, self.namespace, key, _started(attempt))
        return attempt

    def finish(self, attempt: Attempt) -> None:
        self.store.put(self.namespace, attempt.key, _finished(attempt), index=False)

    async def afinish(self, attempt: Attempt) -> None:
        await _aput(self.store, self.namespace, attempt.key, _finished(attempt))


def label(thread_id: str) -> str:
    """The thread id as a store namespace label, which may hold no period and no NUL
    (percent-encoded, so two ids never share a label)."""
    return thread_id.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")


_LOCK = threading.Lock()  # get-then-put of parallel calls in one process


def _attempt(key: str, value: dict[str, Any] | None) -> Attempt:
    started = int((value or {}).get("started", 0))
    finished = int((value or {}).get("finished", 0))
    return Attempt(key, max(started - finished, 0), finished)


def _started(attempt: Attempt) -> dict[str, int]:
    return {"started": attempt.earlier + attempt.finished + 1, "finished": attempt.finished}


def _finished(attempt: Attempt) -> dict[str, int]:
    total = attempt.earlier + attempt.finished + 1
    return {"started": total, "finished": total}


async def _aget(store: BaseStore, namespace: tuple[str, ...], key: str) -> Any:
    if _local(store):
        return store.get(namespace, key)
    try:
        return await store.aget(namespace, key)
    except NotImplementedError:  # a sync-only store
        return await asyncio.to_thread(store.get, namespace, key)


async def _aput(store: BaseStore, namespace: tuple[str, ...], key: str, value: dict) -> None:
    if _local(store):
        store.put(namespace, key, value, index=False)
        return
    try:
        await store.aput(namespace, key, value, index=False)
    except NotImplementedError:
        await asyncio.to_thread(store.put, namespace, key, value, index=False)


def _local(store: BaseStore) -> bool:
    """LangGraph's sync SqliteStore (the fallback file): a local write of a fraction of a
    millisecond, done in place rather than on a worker thread (it has no async form)."""
    from langgraph.store.sqlite import SqliteStore

    return isinstance(store, SqliteStore)


def ledger_for(store: BaseStore | None, thread_id: str | None) -> Ledger | None:
    """The thread's ledger in the run's store, else in the state folder's file; None for a
    run without a thread (nothing of it can be replayed or resumed)."""
    if not thread_id:
        return None
    return Ledger(store if store is not None else fallback_store(), thread_id)


def fallback_store() -> BaseStore:
    """The state folder's ledger file, opened once per process and folder."""
    path = str(private_dir(state_dir()) / FILE)
    with _OPENING:  # parallel calls of one step would set the file up twice
        return _file_store(path)


_OPENING = threading.Lock()


@lru_cache(maxsize=4)
def _file_store(path: str) -> BaseStore:
    from langgraph.store.sqlite import SqliteStore

    private_file(Path(path))
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    # a committed write survives a killed process without an fsync per call
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    store = SqliteStore(conn)
    store.setup()
    return store
