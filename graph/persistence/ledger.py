"""The call ledger: what ran, kept outside the checkpoints.

A fork or a replay restores a checkpoint's values, seals included, so what ran lives outside
them, in LangGraph's store (`runtime.store`): `langgraph dev`, Aegra and LangGraph Server always
give a graph one, and the CLI opens one on its checkpointer's URL (`graph.persistence.stores`).

Three kinds of record, per thread (namespace `("react_agent", "calls", <thread id>)`):

* `decision/<id>`: an approval decision that was used. A gated call runs only by claiming its
  decision; a decision already claimed (the call ran, or started and was cut short by a crash)
  makes act ask the person again.
* `asked/<task id>/ask/<n>`: the ids act's n-th re-ask about a spent decision paused a run with:
  only an answer to one runs the call, none once another answer reached it (`ApprovalCheck`).
* `attempt/<task id>/<call id>`: how many times this task started the call and how many of
  those finished, written before the tool runs (so a crash leaves it behind) and after; finish
  deletes those of calls whose results the thread holds (`forget`). A task run again after a
  crash (LangGraph gives it the same id) finds its earlier attempts and marks the call as a
  re-run; a new question after a run cut short mid-call (a server's cancel) finds the call by
  its id (`started`), so the model is told it may have taken effect, not that it never ran.

With no store (code use: `build_graph(...)` without `store=`), the ledger is a LangGraph
`SqliteStore` in the agent's private state folder (`ledger.sqlite`, its claims locked through
`ledger.lock`): it holds for the processes of this machine that share that folder. A run with
no thread id (no checkpointer) keeps no ledger: it cannot be replayed or resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.store.base import BaseStore, GetOp, Op, PutOp, SearchOp
from langgraph.types import Command

from graph import messages as m
from graph.persistence.file_locks import held_exclusively
from tools.support.files import private_dir, private_file, state_dir

NAMESPACE = ("react_agent", "calls")
FILE, LOCK_FILE = "ledger.sqlite", "ledger.lock"

# A ledger operation, written once for both forms: a generator that yields the store operations
# it needs one at a time (LangGraph's `Op`s, run by `batch` or `abatch`), is sent each result,
# and returns its own.
Plan = Generator[Op, Any, Any]


@dataclass(frozen=True)
class Attempt:
    """One start of a call by one task: how many earlier starts of it never finished."""

    key: str
    earlier: int  # starts before this one that did not finish (a crash, a kill)
    finished: int
    call: str


class Ledger:
    """Decisions spent and attempts started, for one thread, in `store`."""

    def __init__(self, store: BaseStore, thread_id: str, shared: Path | None = None) -> None:
        self.store = store
        self.namespace = (*NAMESPACE, label(thread_id))
        self.shared = shared  # the lock file of a store other processes use too (the fallback)

    def claim(self, decision: str, call_id: str) -> bool:
        """Spend `decision` on `call_id`; False when it was spent before (ask again)."""
        held = CLAIMING.holding((self.namespace, decision))
        with held as free, held_exclusively(self.shared if free else None):
            return free and _run(self.store, self._claim(decision, call_id))

    async def aclaim(self, decision: str, call_id: str) -> bool:
        held = CLAIMING.holding((self.namespace, decision))
        with held as free, held_exclusively(self.shared if free else None):  # a local file
            return free and await _arun(self.store, self._claim(decision, call_id))

    def release(self, decision: str) -> None:
        """Give `decision` back: its call paused inside (an `interrupt()` of the tool's own),
        and the resume runs it on the same decision."""
        _run(self.store, self._put(f"decision/{decision}", None))

    async def arelease(self, decision: str) -> None:
        await _arun(self.store, self._put(f"decision/{decision}", None))

    def asked(self, question: str) -> set[str] | None:
        """The interrupt ids act's re-ask `question` paused a run with (None: it never did)."""
        return _run(self.store, self._asked(question))

    async def aasked(self, question: str) -> set[str] | None:
        return await _arun(self.store, self._asked(question))

    def mark_asked(self, question: str, ids: list[str] | None) -> None:
        _run(self.store, self._put(f"asked/{question}", {"ids": ids}))

    async def amark_asked(self, question: str, ids: list[str] | None) -> None:
        await _arun(self.store, self._put(f"asked/{question}", {"ids": ids}))

    def start(self, task_id: str, call_id: str) -> Attempt:
        """Record that this task starts the call (before its side effect)."""
        return _run(self.store, self._start(task_id, call_id))

    async def astart(self, task_id: str, call_id: str) -> Attempt:
        return await _arun(self.store, self._start(task_id, call_id))

    def finish(self, attempt: Attempt) -> None:
        _run(self.store, self._put(attempt.key, _counts(attempt, finished=True)))

    async def afinish(self, attempt: Attempt) -> None:
        await _arun(self.store, self._put(attempt.key, _counts(attempt, finished=True)))

    def forget(self, answered: set[str]) -> None:
        """Delete the attempt records of these calls: their results are in the thread, so no
        rerun and no next turn will look for them (kept, they would grow the store by a row
        per call for good, in the state folder's file even for threads held in memory)."""
        _run(self.store, self._forget(answered))

    async def aforget(self, answered: set[str]) -> None:
        await _arun(self.store, self._forget(answered))

    def started(self, call_ids: list[str]) -> set[str]:
        """Which of these calls some task of the thread started (found by the call's id)."""
        return _run(self.store, self._started(call_ids))

    async def astarted(self, call_ids: list[str]) -> set[str]:
        return await _arun(self.store, self._started(call_ids))

    # -- the operations, as plans ---------------------------------------------------------

    def _put(self, key: str, value: dict[str, Any] | None) -> Plan:
        """Write `value` (None deletes)."""
        yield PutOp(self.namespace, key, value, index=False)

    def _asked(self, question: str) -> Plan:
        item = yield GetOp(self.namespace, f"asked/{question}")
        ids = (item.value or {}).get("ids") if item is not None else None
        return None if ids is None else set(ids)

    def _claim(self, decision: str, call_id: str) -> Plan:
        key = f"decision/{decision}"
        if (yield GetOp(self.namespace, key)) is not None:
            return False
        yield PutOp(self.namespace, key, {"call": call_id}, index=False)
        return True

    def _start(self, task_id: str, call_id: str) -> Plan:
        key = f"attempt/{task_id}/{call_id}"
        item = yield GetOp(self.namespace, key)
        value = item.value if item is not None else {}
        started, finished = int(value.get("started", 0)), int(value.get("finished", 0))
        attempt = Attempt(key, max(started - finished, 0), finished, call_id)
        yield PutOp(self.namespace, key, _counts(attempt, finished=False), index=False)
        return attempt

    def _forget(self, answered: set[str]) -> Plan:
        items = yield SearchOp(self.namespace, limit=10_000)
        for item in items:
            if item.key.startswith("attempt/") and (item.value or {}).get("call") in answered:
                yield PutOp(self.namespace, item.key, None, index=False)

    def _started(self, call_ids: list[str]) -> Plan:
        found = set()
        for call_id in call_ids:
            if (yield SearchOp(self.namespace, filter={"call": call_id}, limit=1)):
                found.add(call_id)
        return found


def _counts(attempt: Attempt, *, finished: bool) -> dict[str, Any]:
    """What the record of `attempt` says once it started (or, `finished`, once it ended)."""
    total = attempt.earlier + attempt.finished + 1
    done = total if finished else attempt.finished
    return {"call": attempt.call, "started": total, "finished": done}


def label(thread_id: str) -> str:
    """The thread id as a store namespace label, which may hold no period and no NUL
    (percent-encoded, so two ids never share a label)."""
    return thread_id.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")


class Claims:
    """The claims this process is making now. A claim reads the store, then writes it (no
    write-if-absent in `BaseStore`), so it holds its key till its write is done and a second
    claim of that key meanwhile is refused (asks again). Across processes the fallback file is
    locked around each claim; on a server's store one run per thread is the engine's."""

    def __init__(self) -> None:
        self._held: set[Any] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def holding(self, key: Any) -> Iterator[bool]:
        """True inside when no other claim of `key` is under way (it is held till the end)."""
        with self._lock:
            free = key not in self._held
            self._held.add(key)
        try:
            yield free
        finally:
            if free:
                with self._lock:
                    self._held.discard(key)


CLAIMING = Claims()
_LOCK = threading.Lock()  # get-then-put of parallel calls in one process


def _run(store: BaseStore, plan: Plan) -> Any:
    """Carry a plan out with the store's sync `batch`, one plan at a time in this process."""
    with _LOCK:
        try:
            result = None
            while True:
                result = store.batch([plan.send(result)])[0]
        except StopIteration as done:
            return done.value


async def _arun(store: BaseStore, plan: Plan) -> Any:
    """Carry a plan out with `abatch`; on LangGraph's sync SqliteStore (the fallback file: a
    local write of a fraction of a millisecond, and no async form) with `batch` in place, and
    on another sync-only store on a worker thread."""
    from langgraph.store.sqlite import SqliteStore

    try:
        result = None
        while True:
            ops = [plan.send(result)]
            if isinstance(store, SqliteStore):
                result = store.batch(ops)[0]
                continue
            try:
                result = (await store.abatch(ops))[0]
            except NotImplementedError:  # a sync-only store
                result = (await asyncio.to_thread(store.batch, ops))[0]
    except StopIteration as done:
        return done.value


def ledger_for(store: BaseStore | None, thread_id: str | None) -> Ledger | None:
    """The thread's ledger in the run's store, else in the state folder's file; None for a
    run without a thread (nothing of it can be replayed or resumed)."""
    if not thread_id:
        return None
    if store is not None:
        return Ledger(store, thread_id)
    return Ledger(fallback_store(), thread_id, state_dir() / LOCK_FILE)


def fallback_store() -> BaseStore:
    """The state folder's ledger file, opened once per process and folder (the folder made
    then, not looked for at every call)."""
    with _OPENING:  # parallel calls of one step would set the file up twice
        return _file_store(str(state_dir()))


_OPENING = threading.Lock()


@lru_cache(maxsize=4)
def _file_store(folder: str) -> BaseStore:
    from langgraph.store.sqlite import SqliteStore

    path = private_dir(Path(folder)) / FILE
    private_file(path)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    # a committed write survives a killed process without an fsync per call
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    store = SqliteStore(conn)
    store.setup()
    return store


def rerun_marked(result: Any, call_id: str, attempt: Attempt | None) -> Any:
    """The result of a call started again after `attempt.earlier` unfinished starts."""
    if attempt is None or not attempt.earlier:
        return result

    def mark(message: Any) -> Any:
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            meta = {**message.response_metadata, m.RERUN: attempt.earlier}
            return message.model_copy(update={"response_metadata": meta})
        return message

    if isinstance(result, Command) and isinstance(result.update, dict):
        found = result.update.get("messages") or []
        found = found if isinstance(found, list) else [found]
        update = {**result.update, "messages": [mark(x) for x in found]}
        return Command(update=update, goto=result.goto, graph=result.graph)
    return mark(result)
