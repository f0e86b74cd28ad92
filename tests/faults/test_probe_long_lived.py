"""A probe of a long-lived process that runs the agent many times: a server worker, a notebook,
a script looping over questions, using the compiled graph from code (sync and async).

What must stay bounded after warm-up is measured at run W and again after M more runs
(`tests/support/long_lived.py`: threads by name, open descriptors, live run objects, pending
asyncio tasks, allocated memory blocks, this process's PostgreSQL sessions in
`pg_stat_activity`, the call ledger's rows, the state folder's files), with a full collection
first and margins far below one thing per run. Threads are deleted from the saver after each
run where the saver's own growth (the checkpoints) would hide anything else.

Covered: both protocols, `invoke`/`stream`/`ainvoke`/`astream`, a sync tool, an async tool, a
tool that raises, a sync tool hung past `tool_timeout`; InMemorySaver, and the SQLite and
PostgreSQL savers opened by URL per request (`open_saver`, `open_async_saver`) with
`build_graph` per request and the thread lock (`thread_lock`) around the run; approval pauses
left unanswered, approved runs, replays from before act (asking again) and forks; runs
cancelled at many points and `astream`s the caller stops reading, on a reused and on fresh
event loops.

What held: ordinary runs add no thread, descriptor, run object, pending task or memory per run,
in every combination above; a saver opened by URL per request closes its connection (no
descriptor, no aiosqlite thread, no PostgreSQL session left, the lock's session included) and
a graph built per request keeps nothing of it; a hung sync tool holds one daemon worker, and
its run's objects, until it returns (by design: graph/support/workers.py), after which the
worker is reused and later runs add none; a cancelled run leaves no task; an `astream` left
unread is closed by the loop's generator finalizer on the loop's next turn (at most that
finalizer and its last write pending, as under `create_agent`, which leaves one); approval
pauses, approvals, replays and forks grow nothing but the checkpoints. Bounded by design, and
not tested here for the runs it takes to fill them: tools built anew per request keep up to
256 argument schemas (`graph/policies/token_estimates._SCHEMAS`, an LRU); `approval_mode=
"per_call"` pauses fill typing's and LangChain's own caches with HITL's per-call decision
models (about 2.6 MB, plateauing after some 60 pauses, the same under `create_agent`).
Decision rows in the ledger (one per approved call) must be kept: a replay must ask again.

Found (first strict xfails, each checked to fail on its own assertion with --runxfail), and
fixed; neither has a counterpart under `create_agent`, which keeps no ledger and takes no
thread lock):

- the call ledger keeps a row for every tool call that ever ran (`attempt/<task>/<call>`,
  finished, its result checkpointed), also after its thread is deleted: +45 rows per 45 runs,
  in the state folder's `ledger.sqlite` (a file that outlives an InMemorySaver's threads,
  some 400-750 bytes a call) or in the `store=` given (process memory, for an InMemoryStore).
  `Ledger.finish` rewrites the record as finished instead of spending it, and nothing removes
  a deleted thread's namespace (graph/persistence/ledger.py);
- a thread lock on a SQLite store keeps a descriptor of the store for the life of the process,
  also after the store is closed and its file deleted (the file's space is never freed): +12
  descriptors for 12 stores. `sqlite_lock` parks the released descriptor in `_IDLE` by
  (device, inode), and `_idle_descriptor` closes a deleted file's only when that same key is
  locked again, which never happens (graph/persistence/file_locks.py).

Fixed: the run's finish node deletes the attempt records of its calls whose results the thread
holds (`Ledger.forget`): only calls cut short (what a rerun and a new turn look for) and spent
decisions stay. (Deleting a record when its call ended was tried first: a call that ended
while its run was cancelled, its result never saved, was then told to the model as "not run";
tests/faults/test_probe_concurrency.py caught it.) Each
lock release closes the kept descriptors of store files deleted since (`_close_deleted`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from graph import build_graph
from graph.persistence.locks import OFD_LOCKS, thread_lock
from graph.persistence.savers import open_async_saver, open_saver
from tests.conftest import service_url
from tests.support.concurrency_model import ConversationModel
from tests.support.long_lived import (
    Footprint,
    RotatingModel,
    assert_flat,
    ledger_rows,
    open_fds,
    pg_sessions,
    run_objects,
    thread_names,
    tool_kinds,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:The v3 streaming protocol"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

PROTOCOLS = ["native", "text"]
# read at import, before the suite's clean_env removes REACT_AGENT_* variables
POSTGRES_URL = service_url("postgres")
WARM, MEASURED = 15, 45  # runs before the first measure, runs between the two
ROTATION = ("sync_echo", "async_echo", "failing")
STREAM_MODES = ["updates", "messages", "custom", "values"]


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def ask(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


def state_dir() -> Path:
    return Path(os.environ["REACT_AGENT_STATE_DIR"])  # the suite's own, one per test


def state_files() -> int:
    folder = state_dir()
    return len(list(folder.iterdir())) if folder.exists() else 0


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds the hanging tool; opened when the test ends, whatever happened."""
    event = threading.Event()
    yield event
    event.set()


def expected(out: dict[str, Any], n: int) -> None:
    """The run answered its own question with its own tool's result (or failure)."""
    assert out["status"] == "answered", out.get("error")
    assert out["answer"].startswith(f"answer q{n} "), out["answer"]


def last_values(chunks: list[Any]) -> dict[str, Any]:
    return [data for mode, data in chunks if mode == "values"][-1]


# -- ordinary runs ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_many_runs_of_every_tool_kind_add_nothing_per_run(protocol: str, mode: str) -> None:
    """Sync, async and raising tools in turn, `invoke` and `stream` alternately (their async
    forms on one reused loop), InMemorySaver: after warm-up, run 60 holds what run 15 held."""
    saver = InMemorySaver()
    model = RotatingModel(protocol=protocol, cycle=ROTATION)
    tools = list(tool_kinds().values())
    graph = build_graph(model=model, tools=tools, protocol=protocol, checkpointer=saver)
    loop = asyncio.new_event_loop()

    async def astreamed(n: int) -> list[Any]:
        return [
            x async for x in graph.astream(ask(f"q{n}"), cfg(f"t{n}"), stream_mode=STREAM_MODES)
        ]

    def run(n: int) -> None:
        given, c = ask(f"q{n}"), cfg(f"t{n}")
        if mode == "sync":
            if n % 2:
                out = last_values(list(graph.stream(given, c, stream_mode=STREAM_MODES)))
            else:
                out = graph.invoke(given, c)
        elif n % 2:
            out = last_values(loop.run_until_complete(astreamed(n)))
        else:
            out = loop.run_until_complete(graph.ainvoke(given, c))
        expected(out, n)
        saver.delete_thread(f"t{n}")

    try:
        for n in range(WARM):
            run(n)
        before = Footprint.take(loop, files=state_files())
        for n in range(WARM, WARM + MEASURED):
            run(n)
        after = Footprint.take(loop, files=state_files())
    finally:
        loop.close()
    grown = before.growth(after)
    assert grown["files"] == 0, grown  # nothing per run in the state folder
    assert_flat(grown, MEASURED)


# -- the call ledger --------------------------------------------------------------------------


def _store_rows(store: InMemoryStore) -> int:
    return len(store.search(("react_agent", "calls"), limit=1_000_000))


@pytest.mark.parametrize("where", ["state folder", "store"])
def test_the_call_ledger_keeps_nothing_of_finished_runs_whose_thread_is_deleted(
    where: str,
) -> None:
    """A finished call whose result is checkpointed is never looked up again (a rerun counts
    unfinished starts only; `started` is asked about calls with no result), and here its
    thread is deleted as well: nothing can resume, replay or continue it. Yet each run leaves
    its attempt row, in the state folder's `ledger.sqlite` (beside an InMemorySaver, whose
    threads end with the process) or in the `store=` the graph was given."""
    saver = InMemorySaver()
    store = InMemoryStore() if where == "store" else None
    model = ConversationModel(protocol="native", tool="sync_echo")
    tools = [tool_kinds()["sync"]]
    graph = build_graph(model=model, tools=tools, checkpointer=saver, store=store)

    def rows() -> int:
        return _store_rows(store) if store is not None else ledger_rows(state_dir())

    def run(n: int) -> None:
        expected(graph.invoke(ask(f"q{n}"), cfg(f"t{n}")), n)
        saver.delete_thread(f"t{n}")

    for n in range(10):
        run(n)
    before = rows()
    for n in range(10, 10 + MEASURED):
        run(n)
    grown = rows() - before
    assert grown <= 5, f"{grown} ledger rows after {MEASURED} runs of deleted threads"


# -- savers by URL, one graph per request -----------------------------------------------------


def _url(kind: str, folder: Path) -> str:
    return POSTGRES_URL if kind == "postgres" else f"sqlite:///{folder / 'checkpoints.sqlite'}"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_graph_built_per_request_on_a_saver_opened_by_url_leaves_nothing_open(
    kind: str, mode: str, tmp_path: Path
) -> None:
    """A server's request: open the saver by URL, build the graph, run (async: under the
    thread's lock, as docs/checkpoints.md asks of code running one thread from several
    workers), delete the thread, close the saver. Descriptors, threads (aiosqlite's), this
    process's PostgreSQL sessions (the saver's, the setup guard's, the lock's) and memory
    stay where they were after warm-up."""
    url = _url(kind, tmp_path)
    tools = list(tool_kinds().values())
    prefix = f"long-lived-{uuid.uuid4().hex[:8]}"  # the PostgreSQL database may be shared

    def sessions() -> int:
        return pg_sessions(url) if kind == "postgres" else 0

    def request_sync(n: int) -> None:
        thread = f"{prefix}-{n}"
        with open_saver(url) as saver:
            model = RotatingModel(protocol="native", cycle=ROTATION)
            graph = build_graph(model=model, tools=tools, checkpointer=saver)
            expected(graph.invoke(ask(f"q{n}"), cfg(thread)), n)
            saver.delete_thread(thread)

    async def request_async(n: int) -> None:
        thread = f"{prefix}-{n}"
        async with open_async_saver(url) as saver:
            model = RotatingModel(protocol="native", cycle=ROTATION)
            graph = build_graph(model=model, tools=tools, checkpointer=saver)
            async with thread_lock(url, thread):
                expected(await graph.ainvoke(ask(f"q{n}"), cfg(thread)), n)
            await saver.adelete_thread(thread)

    loop = asyncio.new_event_loop()

    def request(n: int) -> None:
        if mode == "sync":
            request_sync(n)
        else:
            loop.run_until_complete(request_async(n))

    warm, measured = 6, 14
    try:
        for n in range(warm):
            request(n)
        before = Footprint.take(loop, sessions=sessions())
        for n in range(warm, warm + measured):
            request(n)
        after = Footprint.take(loop, sessions=sessions())
    finally:
        loop.close()
    grown = before.growth(after)
    assert grown["sessions"] <= 0, grown  # each request's sessions are closed with it
    # a graph kept per request would be some 650 blocks a request, a run's state a few hundred
    assert_flat(grown, measured, blocks_per_run=60)


@pytest.mark.skipif(not OFD_LOCKS, reason="the descriptors kept are those of Linux's OFD locks")
def test_thread_locks_on_stores_that_are_closed_and_deleted_leave_no_descriptor(
    tmp_path: Path,
) -> None:
    """A process that works on many SQLite stores one after another (a store per tenant or per
    experiment, removed when done): each is opened by URL, a thread of it locked and run, the
    saver closed and the file deleted. A released lock's descriptor is kept for the store's
    next lock (closing it would drop SQLite's own locks in this process), but a deleted store
    has no next lock: its descriptor was only closed when the same file was locked again. Now
    each release closes the kept descriptors of stores deleted since, so one at most stays
    open (the latest store's, until any next lock)."""
    tools = [tool_kinds()["async"]]

    async def one(n: int) -> None:
        path = tmp_path / f"store-{n}.sqlite"
        url = f"sqlite:///{path}"
        async with open_async_saver(url) as saver:
            model = ConversationModel(protocol="native", tool="async_echo")
            graph = build_graph(model=model, tools=tools, checkpointer=saver)
            async with thread_lock(url, "t"):
                expected(await graph.ainvoke(ask(f"q{n}"), cfg("t")), n)
        path.unlink()

    async def main() -> tuple[int, int, list[str]]:
        for n in range(2):
            await one(n)
        before = len(open_fds())
        for n in range(2, 14):
            await one(n)
        held = [x for x in open_fds() if x.startswith(str(tmp_path)) and x.endswith("(deleted)")]
        return before, len(open_fds()), held

    before, after, held = asyncio.run(main())
    # the last store's descriptor is closed at the next lock, of any store: one at most
    assert after - before <= 0 and len(held) <= 1, f"{len(held)} deleted stores still open"


# -- a tool hung past tool_timeout ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_hung_sync_tool_holds_one_worker_until_it_returns_then_runs_reuse_it(
    mode: str, gate: threading.Event
) -> None:
    """By design (graph/support/workers.py): a sync call past `tool_timeout` is abandoned on
    its daemon worker, which it holds, with its run's objects, until it returns. Afterwards
    the workers are idle and reused: ordinary runs add none, and nothing of the hung runs is
    left."""
    saver = InMemorySaver()
    model = ConversationModel(protocol="native", tool="work")
    graph = build_graph(
        model=model, tools=[tool_kinds(gate)["hanging"]], checkpointer=saver, tool_timeout=0.05
    )
    loop = asyncio.new_event_loop()

    def run(text: str, thread: str) -> dict[str, Any]:
        c = cfg(thread)
        if mode == "sync":
            out = graph.invoke(ask(text), c)
        else:
            out = loop.run_until_complete(graph.ainvoke(ask(text), c))
        saver.delete_thread(thread)
        return out

    hung = 6
    try:
        for n in range(10):
            assert run(f"q{n}", f"t{n}")["answer"] == f"answer q{n} worked q{n}"
        base = Footprint.take(loop)
        for n in range(hung):
            answer = run(f"hang{n}", f"h{n}")["answer"]
            assert "timed out after 0.05 s" in answer, answer
        held = Footprint.take(loop)
        workers = held.threads["react-agent-worker"]  # idle ones (an earlier test's) reused
        assert hung <= workers <= base.threads["react-agent-worker"] + hung + 1, held.threads
        assert held.objects["HumanMessage"] >= hung  # each hung call holds its run's state
        gate.set()
        deadline = time.monotonic() + 10
        while sum((run_objects() - base.objects).values()) and time.monotonic() < deadline:
            time.sleep(0.02)  # the released calls return and their workers let go of them
        released = Footprint.take(loop)
        for n in range(10, 10 + 30):
            assert run(f"q{n}", f"t{n}")["answer"] == f"answer q{n} worked q{n}"
        after = Footprint.take(loop)
    finally:
        loop.close()
    assert sum((released.objects - base.objects).values()) == 0, released.objects
    assert thread_names()["react-agent-worker"] <= held.threads["react-agent-worker"] + 1
    assert_flat(released.growth(after), 30)


# -- cancellation and streams left unread -----------------------------------------------------


@pytest.mark.parametrize("loop_kind", ["reused", "fresh"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cancelled_runs_and_unread_streams_leave_no_task_thread_or_run_behind(
    protocol: str, loop_kind: str
) -> None:
    """Each round: an `ainvoke` task cancelled after a different number of loop turns (in the
    model call, a sync tool on its worker, an async tool, a checkpoint write), then an
    `astream` the caller stops reading after its first event and drops without closing. On a
    reused loop the dropped stream is closed by the loop's async-generator finalizer when the
    loop next runs: pending tasks stay at that finalizer's (at most three at any time: the
    close and the run's last write), and none once the loop has run; on fresh loops
    (`asyncio.run` per round) nothing is pending."""
    saver = InMemorySaver()
    model = RotatingModel(protocol=protocol, cycle=("sync_echo", "async_echo"))
    tools = list(tool_kinds().values())
    graph = build_graph(model=model, tools=tools, protocol=protocol, checkpointer=saver)
    loop = asyncio.new_event_loop()
    pending: list[int] = []

    async def round_(n: int) -> None:
        task = asyncio.ensure_future(graph.ainvoke(ask(f"q{n}"), cfg(f"c{n}")))
        for _ in range(n % 25):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        async for _ in graph.astream(ask(f"q{n}"), cfg(f"s{n}"), stream_mode="updates"):
            break  # dropped unread: no aclose()

    def run(n: int) -> None:
        if loop_kind == "reused":
            loop.run_until_complete(round_(n))
            pending.append(len(asyncio.all_tasks(loop)))
        else:
            asyncio.run(round_(n))
        # the previous round's stream has been closed by now (its loop ran again, or ended)
        for thread in (f"c{n - 1}", f"s{n - 1}"):
            saver.delete_thread(thread)

    warm, measured = 15, 45
    try:
        for n in range(warm):
            run(n)
        loop.run_until_complete(asyncio.sleep(0.05))
        before = Footprint.take(loop)
        for n in range(warm, warm + measured):
            run(n)
        loop.run_until_complete(asyncio.sleep(0.05))  # the last stream's finalizer runs
        for thread in (f"c{warm + measured - 1}", f"s{warm + measured - 1}"):
            saver.delete_thread(thread)
        after = Footprint.take(loop)
    finally:
        loop.close()
    assert max(pending, default=0) <= 3, pending
    assert_flat(before.growth(after), measured)


# -- approvals, replays and forks -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_approval_pauses_approvals_replays_and_forks_add_nothing_per_run(mode: str) -> None:
    """Each round: a pause left unanswered; a pause approved and run; a replay from before act
    (a new decision is asked for, and left unanswered); a fork with a new question from the
    answered checkpoint. Threads deleted at the end of the round: the process holds no more
    than after warm-up."""
    saver = InMemorySaver()
    model = ConversationModel(protocol="native", tool="sync_echo")
    graph = build_graph(model=model, tools=[tool_kinds()["sync"]], checkpointer=saver)
    loop = asyncio.new_event_loop()
    approve = Command(resume={"decisions": [{"type": "approve"}]})
    gated = {"approve": ["sync_echo"]}

    def call(given: Any, c: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if mode == "sync":
            return graph.invoke(given, c, **kw)
        return loop.run_until_complete(graph.ainvoke(given, c, **kw))

    def history(c: dict[str, Any]) -> list[Any]:
        if mode == "sync":
            return list(graph.get_state_history(c))

        async def listed() -> list[Any]:
            return [s async for s in graph.aget_state_history(c)]

        return loop.run_until_complete(listed())

    def round_(n: int) -> None:
        left, done = cfg(f"left{n}"), cfg(f"done{n}")
        assert call(ask(f"q{n}"), left, context=gated).get("__interrupt__")
        assert call(ask(f"q{n}"), done, context=gated).get("__interrupt__")
        expected(call(approve, done), n)
        states = history(done)
        before_act = next(s for s in states if s.next == ("act",))
        assert call(None, before_act.config).get("__interrupt__")  # asks again
        answered = next(s for s in states if s.values.get("status") == "answered")
        forked = call(ask(f"q{n + 1000}"), answered.config)
        assert forked["answer"] == f"answer q{n + 1000} echo: q{n + 1000}"
        for thread in (f"left{n}", f"done{n}"):
            saver.delete_thread(thread)

    try:
        for n in range(6):
            round_(n)
        before = Footprint.take(loop)
        for n in range(6, 26):
            round_(n)
        after = Footprint.take(loop)
    finally:
        loop.close()
    assert_flat(before.growth(after), 20, blocks_per_run=40)  # a round is five runs
