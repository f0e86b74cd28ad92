"""Thread locks under faults: a PostgreSQL lock whose connection dies mid-run, an idle timeout,
two processes racing for one thread, and SQLite paths that name one file in different ways
(symlinks, relative paths, hard links, a rename).

Against the real PostgreSQL at 127.0.0.1:5432 (REACT_AGENT_TEST_POSTGRES overrides the URL);
no server is a failure, not a skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import psycopg
import pytest

from graph.persistence.errors import LockLost, PersistenceError
from graph.persistence.locks import (
    OFD_LOCKS,
    ThreadBusy,
    lock_file,
    lock_key,
    store_key,
    thread_lock,
)
from graph.persistence.savers import open_async_saver, open_saver
from tests.support.cli import POSTGRES_URL, REPO

pytestmark = pytest.mark.integration


# -- a tiny graph that counts, one checkpoint per step ---------------------------------------


class Count(TypedDict, total=False):
    count: int
    goal: int
    by: str
    trail: list[str]  # not a primitive: PostgreSQL keeps it in checkpoint_blobs


def counter(saver: Any, name: str, delay: float, log: Path | None = None) -> Any:
    """A graph whose node counts up to `goal`, one step (and checkpoint) at a time, recording
    who ran each step (`by`) in the state and, with `log`, in a file."""
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import END, START, StateGraph

    def record(state: Count) -> Count:
        count = state.get("count", 0) + 1
        if log is not None:
            with log.open("a") as handle:
                handle.write(f"{name} {count} {time.time():.6f}\n")
        return {"count": count, "by": name, "trail": [*state.get("trail", []), name]}

    def step(state: Count) -> Count:
        time.sleep(delay)
        return record(state)

    async def astep(state: Count) -> Count:
        await asyncio.sleep(delay)
        return record(state)

    def route(state: Count) -> str:
        return END if state["count"] >= state["goal"] else "step"

    graph = StateGraph(Count)
    graph.add_node("step", RunnableLambda(step, afunc=astep, name="step"))
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", route)
    return graph.compile(checkpointer=saver)


def sync_counter(saver: Any, delay: float, started: threading.Event) -> Any:
    from langgraph.graph import END, START, StateGraph

    def step(state: Count) -> Count:
        started.set()
        time.sleep(delay)
        return {"count": state.get("count", 0) + 1}

    graph = StateGraph(Count)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda s: END if s["count"] >= s["goal"] else "step")
    return graph.compile(checkpointer=saver)


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 100_000}


# -- PostgreSQL helpers -------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> str:
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL at {POSTGRES_URL} is required (REACT_AGENT_TEST_POSTGRES): {exc}")
    return POSTGRES_URL


@pytest.fixture
def thread(postgres: str) -> Iterator[str]:
    # not "test-...": tests/integration/test_persistence.py deletes those threads when it ends
    thread_id = f"faults-lock-{uuid.uuid4().hex[:10]}"
    yield thread_id
    with psycopg.connect(postgres, autocommit=True) as conn:
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
            # on a fresh database no saver has created the tables yet: nothing to delete
            if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None:
                conn.execute(f"DELETE FROM {table} WHERE thread_id = %s", (thread_id,))


def holders(thread_id: str) -> list[int]:
    """Backends holding the thread's advisory lock."""
    key = lock_key(thread_id)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 1",
            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
        ).fetchall()
    return [pid for (pid,) in rows]


def terminate_lock_connection(thread_id: str) -> float:
    """pg_terminate_backend on the lock's connection; the time it was done."""
    pids = holders(thread_id)
    assert len(pids) == 1, f"expected one holder of the lock, found {pids}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pids[0],))
    return time.monotonic()


def wait_for(predicate: Any, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# -- PostgreSQL: losing the lock stops the run --------------------------------------------


async def test_a_held_lock_refuses_a_second_holder(thread: str) -> None:
    async with thread_lock(POSTGRES_URL, thread):
        with pytest.raises(ThreadBusy, match=f"Thread {thread} is busy"):
            async with thread_lock(POSTGRES_URL, thread):
                pytest.fail("two holders at once")
        assert len(holders(thread)) == 1
    assert holders(thread) == []  # released at once, not when the connection happens to close


async def test_losing_the_lock_cancels_the_run_and_raises_lock_lost(thread: str) -> None:
    ticks: list[float] = []
    cancelled: list[float] = []

    async def run() -> None:
        try:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            cancelled.append(time.monotonic())
            raise

    async def kill_soon() -> float:
        await asyncio.sleep(0.3)
        return await asyncio.to_thread(terminate_lock_connection, thread)

    killer = asyncio.create_task(kill_soon())
    with pytest.raises(LockLost) as caught:
        async with thread_lock(POSTGRES_URL, thread):
            await run()
    killed_at = await killer
    assert cancelled, "the run was not cancelled"
    assert cancelled[0] - killed_at < 1.0  # the closed socket is seen at once, not at a check
    assert max(ticks) < killed_at + 0.5
    message = str(caught.value)
    assert message.startswith(f"The lock on thread {thread} was lost (")
    assert "the run stopped so that no other worker runs it twice" in message
    assert message.endswith(f"resume it with: react-agent resume --thread {thread}")
    assert isinstance(caught.value, PersistenceError) and caught.value.thread_id == thread
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the cancellation did not leak out
    async with thread_lock(POSTGRES_URL, thread):  # and the thread can be taken again
        assert len(holders(thread)) == 1


async def test_an_idle_timeout_does_not_take_the_lock(thread: str) -> None:
    """A server that closes idle sessions after 2 s: the watched lock connection is never
    idle that long, so a run of 4 s keeps its lock."""
    sep = "&" if "?" in POSTGRES_URL else "?"
    url = f"{POSTGRES_URL}{sep}options=-c%20idle_session_timeout%3D2000"
    async with thread_lock(url, thread):
        first = holders(thread)
        await asyncio.sleep(4)
        assert holders(thread) == first and len(first) == 1


async def test_after_the_loss_no_checkpoint_is_written_even_from_a_worker_thread(
    thread: str,
) -> None:
    """A sync run in a worker thread (as `asyncio.to_thread(agent.invoke, ...)` in a service)
    cannot be cancelled; its next checkpoint write raises LockLost instead."""
    started = threading.Event()
    outcome: list[BaseException | str] = []
    with open_saver(POSTGRES_URL) as saver:
        agent = sync_counter(saver, 0.05, started)

        def invoke() -> None:
            try:
                agent.invoke({"count": 0, "goal": 10_000}, config(thread), durability="sync")
                outcome.append("finished")
            except BaseException as exc:
                outcome.append(exc)

        with pytest.raises(LockLost):
            async with thread_lock(POSTGRES_URL, thread):
                work = asyncio.create_task(asyncio.to_thread(invoke))
                await asyncio.to_thread(started.wait, 10)
                await asyncio.sleep(0.3)
                await asyncio.to_thread(terminate_lock_connection, thread)  # cancelled here
                await work
        await asyncio.to_thread(wait_for, lambda: bool(outcome), 10, "the worker thread")
        assert isinstance(outcome[0], LockLost), outcome
        written = len(list(saver.list({"configurable": {"thread_id": thread}})))
        await asyncio.sleep(0.5)
        assert len(list(saver.list({"configurable": {"thread_id": thread}}))) == written


# -- two processes: never both running ----------------------------------------------------

CHILD = """
import asyncio, sys
from graph.persistence.errors import LockLost
from graph.persistence.locks import ThreadBusy, thread_lock
from graph.persistence.savers import open_async_saver
from pathlib import Path
from tests.faults.test_locks import counter

url, thread, name, goal, log, wait = sys.argv[1:7]

async def main() -> None:
    async with open_async_saver(url) as saver:
        agent = counter(saver, name, 0.05, Path(log))
        while True:  # a second worker retrying until the thread is free
            try:
                async with thread_lock(url, thread):
                    print("locked", flush=True)
                    await agent.ainvoke(
                        {"count": 0, "goal": int(goal)},
                        {"configurable": {"thread_id": thread}, "recursion_limit": 100000},
                        durability="sync",
                    )
                    return
            except ThreadBusy:
                if wait != "wait":
                    raise
                await asyncio.sleep(0.005)

try:
    asyncio.run(main())
except LockLost as exc:
    print(exc, flush=True)
    sys.exit(6)
print("done", flush=True)
"""


def child(name: str, thread: str, goal: int, log: Path, wait: bool) -> subprocess.Popen:
    args = [POSTGRES_URL, thread, name, str(goal), str(log), "wait" if wait else "once"]
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_never_both_run_a_thread(thread: str, tmp_path: Path) -> None:
    """The first worker's lock connection is terminated mid-run while a second worker is
    retrying for the lock: the second takes over, the first stops with LockLost, and the
    thread's checkpoints never interleave the two."""
    log = tmp_path / "steps.log"
    first = child("first", thread, 100_000, log, wait=False)
    second = None
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "locked"
        wait_for(lambda: log.exists() and log.read_text().count("first") >= 3, what="steps")
        second = child("second", thread, 5, log, wait=True)
        time.sleep(1.5)  # the second is up and polling (imports take about a second)
        assert second.poll() is None, second.communicate()
        terminate_lock_connection(thread)
        out_first, err_first = first.communicate(timeout=30)
        out_second, err_second = second.communicate(timeout=60)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
    assert first.returncode == 6, err_first
    assert f"The lock on thread {thread} was lost" in out_first
    assert f"react-agent resume --thread {thread}" in out_first
    assert "Traceback" not in err_first
    assert second.returncode == 0, err_second
    assert out_second.split() == ["locked", "done"]

    # the steps, in the order they ran: every step of the first before any of the second
    runs = [line.split() for line in log.read_text().splitlines()]
    names = [name for name, _, _ in runs]
    assert names == sorted(names), names  # "first"* then "second"*
    last_first = max(float(t) for n, _, t in runs if n == "first")
    first_second = min(float(t) for n, _, t in runs if n == "second")
    assert last_first < first_second
    # and the checkpoints say the same: nothing written by the first after the second began
    with open_saver(POSTGRES_URL) as saver:
        stored = list(saver.list({"configurable": {"thread_id": thread}}))  # newest first
    by = [t.checkpoint["channel_values"].get("by") for t in reversed(stored)]
    by = [name for name in by if name]
    assert by == sorted(by) and by[-1] == "second", json.dumps(by)


# -- SQLite: one file, one lock, however it is named --------------------------------------


async def test_sqlite_lock_is_keyed_on_the_file_not_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Symlinks, relative paths, `..`, a hard link from another folder and a renamed file all
    reach the one lock of the file."""
    real = tmp_path / "real" / "checkpoints.sqlite"
    real.parent.mkdir()
    with open_saver(f"sqlite:///{real}"):
        pass  # the store exists, as it does once a first run has opened it
    (tmp_path / "link.sqlite").symlink_to(real)
    (tmp_path / "linked-folder").symlink_to(real.parent, target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    os.link(real, tmp_path / "elsewhere" / "hard.sqlite")
    monkeypatch.chdir(tmp_path)
    aliases = [
        f"sqlite:///{tmp_path / 'link.sqlite'}",
        f"sqlite:///{tmp_path / 'linked-folder' / 'checkpoints.sqlite'}",
        "sqlite:///real/checkpoints.sqlite",  # relative to the working folder
        f"sqlite:///{tmp_path / 'real' / '..' / 'real' / 'checkpoints.sqlite'}",
        f"sqlite:///{tmp_path / 'elsewhere' / 'hard.sqlite'}",
    ]
    canonical = f"sqlite:///{real}"
    async with thread_lock(canonical, "t1"):
        for alias in aliases:
            assert store_key(alias) == store_key(canonical)
            with pytest.raises(ThreadBusy):
                async with thread_lock(alias, "t1"):
                    pytest.fail(f"{alias} bypassed the lock held through {canonical}")
        async with thread_lock(aliases[-1], "another thread"):
            pass
        real.rename(real.with_name("renamed.sqlite"))  # the lock follows the file
        with pytest.raises(ThreadBusy):
            async with thread_lock(f"sqlite:///{real.with_name('renamed.sqlite')}", "t1"):
                pytest.fail("a renamed store bypassed the lock")
    async with thread_lock(aliases[-1], "t1"):  # released: any name takes it
        pass


HOLD = """
import asyncio, sys
from graph.persistence.locks import ThreadBusy, thread_lock

async def main() -> None:
    try:
        async with thread_lock(sys.argv[1], sys.argv[2]):
            print("locked", flush=True)
            await asyncio.sleep(float(sys.argv[3]))
    except ThreadBusy:
        print("busy", flush=True)

asyncio.run(main())
"""


def hold(url: str, thread: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, url, thread, str(seconds)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_hard_link_in_another_process_finds_the_lock_and_the_store_stays_whole(
    tmp_path: Path,
) -> None:
    """One process holds a thread through the store's name, another asks through a hard link:
    busy. The lock bytes lie past the end of the file, which neither grows nor breaks."""
    real = tmp_path / "a" / "checkpoints.sqlite"
    real.parent.mkdir()
    url = f"sqlite:///{real}"
    with open_saver(url) as saver:
        agent = counter(saver, "one", 0.0)
        agent.invoke({"count": 0, "goal": 3}, config("t1"))
    size = real.stat().st_size
    (tmp_path / "b").mkdir()
    os.link(real, tmp_path / "b" / "other.sqlite")
    first = hold(url, "t1", 5)
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "locked"
        second = hold(f"sqlite:///{tmp_path / 'b' / 'other.sqlite'}", "t1", 0)
        out, _ = second.communicate(timeout=30)
        assert out.strip() == "busy"
        third = hold(f"sqlite:///{tmp_path / 'b' / 'other.sqlite'}", "t2", 0)
        out, _ = third.communicate(timeout=30)
        assert out.strip() == "locked"
        with open_saver(url) as saver:  # the store is read and written while a lock is held
            agent = counter(saver, "two", 0.0)
            agent.invoke({"count": 0, "goal": 3}, config("t3"))
            assert agent.get_state(config("t1")).values["count"] == 3
    finally:
        first.kill()
        first.wait()
    assert real.stat().st_size >= size
    assert real.stat().st_size < 1 << 30  # the lock bytes did not grow the file
    assert sqlite3.connect(real).execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_sqlite_locks_leave_the_store_private(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store' / 'checkpoints.sqlite'}"
    async with thread_lock(url, "t1"):
        assert stat.S_IMODE((tmp_path / "store" / "checkpoints.sqlite").stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "store").stat().st_mode) == 0o700
    if not OFD_LOCKS:  # the fallback's flock files are private too
        async with thread_lock(url, "t1"):
            path = lock_file(url, "t1")
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


async def test_memory_needs_no_lock() -> None:
    async with thread_lock("memory", "t1"), thread_lock("memory", "t1"):
        pass


async def test_a_lock_on_an_unreachable_database_is_one_sentence_without_the_password() -> None:
    from graph.settings import ConfigError

    with pytest.raises(ConfigError) as caught:
        async with thread_lock("postgresql://app:pw-hunter22@127.0.0.1:1/test", "t1"):
            pass
    text = str(caught.value)
    assert "hunter22" not in text
    assert text.startswith("Cannot use the PostgreSQL checkpointer at postgresql://app:***@")


async def test_the_async_saver_and_the_lock_together(thread: str) -> None:
    """The pattern the command line uses: one store, the lock around the run."""
    async with open_async_saver(POSTGRES_URL) as saver, thread_lock(POSTGRES_URL, thread):
        agent = counter(saver, "only", 0)
        result = await agent.ainvoke({"count": 0, "goal": 3}, config(thread), durability="sync")
    assert result["count"] == 3 and result["by"] == "only"


def test_cli_run_stops_when_its_lock_is_lost_and_resume_finishes_it(
    openai_server: Any, thread: str, tmp_path: Path
) -> None:
    """The reported bug, through the command line: the lock's connection dies mid-run. The run
    stops without an answer and says how to resume; `resume` finishes it, answering once."""
    from tests.support.cli import cli_env, run_cli, start_cli
    from tests.support.openai_server import Reply, ToolCall

    openai_server.add(
        Reply(tool_calls=[ToolCall("sleepy", {"label": "nap"})]), Reply(content="Rested.")
    )
    calls = tmp_path / "calls.txt"
    env = cli_env(openai_server.base_url, tmp_path / "state", CALLS_FILE=str(calls))
    args = ["--thread", thread, "--tools", "tests.support.crash_tools:TOOLS"]
    args += ["--checkpointer", POSTGRES_URL]
    first = start_cli("ask", "nap", *args, env={**env, "SLEEPY_SECONDS": "2"})
    try:
        wait_for(lambda: calls.exists() and "sleepy-start:nap" in calls.read_text())
        terminate_lock_connection(thread)
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode not in (0, None), err
    assert f"The lock on thread {thread} was lost" in err
    assert f"react-agent resume --thread {thread}" in err
    assert "Rested." not in out and "Traceback" not in err
    assert len(openai_server.chat_requests) == 1  # the stopped run asked nothing more

    done = run_cli("resume", *args, "--json", env={**env, "SLEEPY_SECONDS": "0"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "Rested."
    assert len(openai_server.chat_requests) == 2
    assert calls.read_text().splitlines().count("sleepy-start:nap") == 2  # at least once
