"""The checkpoint store under faults: PostgreSQL dropping mid-run, a damaged checkpoint in one
thread, secrets in driver errors, and the modes of the files the project creates.

Against real SQLite files and the real PostgreSQL at 127.0.0.1:5432 (REACT_AGENT_TEST_POSTGRES
overrides the URL); no server is a failure, not a skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from graph.persistence.errors import CorruptCheckpoint, PersistenceError, StoreError
from graph.persistence.guarded import StoreGuard
from graph.persistence.locks import lock_key
from graph.persistence.savers import default_url, open_async_saver, open_saver
from graph.persistence.threads import athread_ids, athread_rows, thread_ids
from graph.settings import ConfigError
from tests.faults.test_locks import Count, config, counter
from tests.support.cli import POSTGRES_URL, cli_env, run_cli, start_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration
TOOLS = "tests.support.crash_tools:TOOLS"


def with_query(url: str, **params: str) -> str:
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{url}{'&' if '?' in url else '?'}{extra}"


@pytest.fixture
def schema_url() -> Iterator[str]:
    """A PostgreSQL URL whose tables live in a fresh schema (so listing sees only this test's
    threads), dropped afterwards."""
    schema = f"react_agent_faults_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL at {POSTGRES_URL} is required (REACT_AGENT_TEST_POSTGRES): {exc}")
    with admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield with_query(POSTGRES_URL, options=f"-csearch_path%3D{schema}")
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def terminate_app(application_name: str, keep_lock_of: str | None = None) -> int:
    """Terminate the backends of one application (but not the one holding a thread's lock)."""
    query = (
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()"
    )
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        pids = [pid for (pid,) in conn.execute(query, (application_name,)).fetchall()]
        if keep_lock_of is not None:
            key = lock_key(keep_lock_of)
            held = conn.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' "
                "AND classid = %s::bigint::oid AND objid = %s::bigint::oid",
                ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
            ).fetchall()
            pids = [pid for pid in pids if (pid,) not in held]
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(pids)


def wait_for(predicate: Any, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# -- PostgreSQL dropping mid-run ----------------------------------------------------------


async def test_postgres_dropping_mid_run_is_one_sentence_and_the_run_resumes(
    schema_url: str,
) -> None:
    app = f"faults-{uuid.uuid4().hex[:8]}"
    url = with_query(schema_url, application_name=app)
    thread = f"test-drop-{uuid.uuid4().hex[:8]}"
    ran: list[int] = []

    def recording(saver: Any) -> Any:
        from langgraph.graph import END, START, StateGraph

        async def step(state: Count) -> Count:
            await asyncio.sleep(0.05)
            ran.append(state.get("count", 0) + 1)
            return {"count": state.get("count", 0) + 1}

        graph = StateGraph(Count)
        graph.add_node("step", step)
        graph.add_edge(START, "step")
        graph.add_conditional_edges("step", lambda s: END if s["count"] >= 30 else "step")
        return graph.compile(checkpointer=saver)

    async def drop_soon() -> None:
        while len(ran) < 5:
            await asyncio.sleep(0.01)
        assert await asyncio.to_thread(terminate_app, app) == 1

    with pytest.raises(StoreError) as caught:
        async with open_async_saver(url) as saver:
            dropper = asyncio.create_task(drop_soon())
            await recording(saver).ainvoke({"count": 0}, config(thread), durability="sync")
    await dropper
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith("The PostgreSQL checkpointer at postgresql://")
    assert f"failed while saving a step's result for thread {thread}: " in message or (
        f"failed while saving a checkpoint of thread {thread}: " in message
    )
    assert message.endswith(f"continue the run with: react-agent resume --thread {thread}")
    assert caught.value.thread_id == thread and isinstance(caught.value, PersistenceError)

    # once the database is back: continue from the last checkpoint; finished steps do not run
    # again, the step whose result was lost with the connection does (at least once)
    async with open_async_saver(url) as saver:
        result = await recording(saver).ainvoke(None, config(thread), durability="sync")
    assert result["count"] == 30
    assert sorted(set(ran)) == list(range(1, 31))
    repeated = [n for n in set(ran) if ran.count(n) > 1]
    assert len(repeated) <= 1, ran


def test_cli_run_when_postgres_drops_mid_tool_call(
    openai_server: ScriptedOpenAIServer, tmp_path: Path, schema_url: str
) -> None:
    """The database drops while a tool runs: the finished call's result cannot be saved, the
    run ends with one sentence and the resume command, and `resume` runs that call again."""
    app = f"faults-cli-{uuid.uuid4().hex[:8]}"
    url = with_query(schema_url, application_name=app)
    thread = f"test-cli-drop-{uuid.uuid4().hex[:8]}"
    calls_file, release = tmp_path / "calls.txt", tmp_path / "release"
    env = cli_env(
        openai_server.base_url,
        tmp_path / "state",
        CALLS_FILE=str(calls_file),
        RELEASE_FILE=str(release),
        SLEEPY_SECONDS="60",
    )
    openai_server.add(
        Reply(tool_calls=[ToolCall("sleepy", {"label": "nap"})]), Reply(content="Rested.")
    )
    args = ["--thread", thread, "--tools", TOOLS, "--checkpointer", url]
    first = start_cli("ask", "nap", *args, env=env)
    try:
        wait_for(lambda: calls_file.exists() and "sleepy-start:nap" in calls_file.read_text())
        assert terminate_app(app, keep_lock_of=thread) >= 1  # the store's connection
        release.touch()  # the call finishes; saving its result fails
        _, stderr = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGKILL)
            first.wait()
    assert first.returncode == 1, stderr
    assert "Traceback" not in stderr
    assert f"thread {thread}" in stderr and "PostgreSQL checkpointer" in stderr
    assert f"react-agent resume --thread {thread}" in stderr

    release.unlink()
    done = run_cli("resume", *args, "--json", env={**env, "SLEEPY_SECONDS": "0"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "Rested."
    # the call finished before the drop, but its result was lost with the connection: it ran
    # again on resume (tool calls are at least once)
    assert calls_file.read_text().splitlines().count("sleepy-start:nap") == 2


# -- a damaged checkpoint names its thread and store, and hides no other thread -----------


def corrupt_sqlite(path: Path, thread: str) -> None:
    with sqlite3.connect(path) as conn:
        changed = conn.execute(
            "UPDATE checkpoints SET type = 'msgpack+zlib', checkpoint = x'00010203' "
            "WHERE thread_id = ?",
            (thread,),
        ).rowcount
    assert changed


def test_a_damaged_sqlite_thread_is_named_and_the_others_still_list(tmp_path: Path) -> None:
    path = tmp_path / "store" / "checkpoints.sqlite"
    url = f"sqlite:///{path}"
    with open_saver(url) as saver:
        agent = counter(saver, "w", 0)
        for name in ("good-old", "broken", "good-new"):
            agent.invoke({"count": 0, "goal": 2}, config(name))
    corrupt_sqlite(path, "broken")

    with open_saver(url) as saver:
        agent = counter(saver, "w", 0)
        with pytest.raises(CorruptCheckpoint) as caught:
            agent.get_state(config("broken"))
        message = str(caught.value)
        assert f"thread broken in the SQLite checkpointer {path}" in message
        assert "cannot be decoded (error: " in message  # zlib.error, named
        assert caught.value.thread_id == "broken"
        assert agent.get_state(config("good-old")).values["count"] == 2

        assert thread_ids(saver=agent.checkpointer, limit=2) == ["good-new", "broken"]

    async def listing() -> Any:
        async with open_async_saver(url) as saver:
            return await athread_rows(counter(saver, "w", 0), 50)

    rows, unreadable = asyncio.run(listing())  # what `react-agent threads` lists
    assert [row["thread_id"] for row in rows] == ["good-new", "good-old"]
    [(thread, broken)] = unreadable
    assert thread == "broken" and isinstance(broken, CorruptCheckpoint)
    assert str(path) in str(broken)
    good_new = rows[0]
    assert good_new["updated"] and good_new["status"] == "-"


async def test_a_damaged_thread_in_the_async_sqlite_saver(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.sqlite"
    url = f"sqlite:///{path}"
    async with open_async_saver(url) as saver:
        agent = counter(saver, "w", 0)
        for name in ("a", "b"):
            await agent.ainvoke({"count": 0, "goal": 1}, config(name))
    corrupt_sqlite(path, "a")
    async with open_async_saver(url) as saver:
        agent = counter(saver, "w", 0)
        rows, unreadable = await athread_rows(agent, 50)
        with pytest.raises(CorruptCheckpoint, match="thread a in the SQLite checkpointer"):
            await agent.aget_state(config("a"))
        # the raw listing of every checkpoint names the store instead of a bare zlib error
        with pytest.raises(CorruptCheckpoint, match=f"in the SQLite checkpointer {path}"):
            [item async for item in saver.alist(None)]
    assert [row["thread_id"] for row in rows] == ["b"]
    assert [(thread, type(exc)) for thread, exc in unreadable] == [("a", CorruptCheckpoint)]


async def test_a_damaged_postgres_thread_is_named_and_the_others_still_list(
    schema_url: str,
) -> None:
    async with open_async_saver(schema_url) as saver:
        agent = counter(saver, "w", 0)
        for name in ("pg-good", "pg-broken"):
            await agent.ainvoke({"count": 0, "goal": 2}, config(name))
    with psycopg.connect(schema_url, autocommit=True) as conn:
        changed = conn.execute(
            "UPDATE checkpoint_blobs SET type = 'msgpack+zlib', blob = '\\x00010203'::bytea "
            "WHERE thread_id = 'pg-broken'"
        ).rowcount
    assert changed
    async with open_async_saver(schema_url) as saver:
        agent = counter(saver, "w", 0)
        assert await athread_ids(saver, 10) == ["pg-broken", "pg-good"]
        rows, unreadable = await athread_rows(agent, 50)
    assert [row["thread_id"] for row in rows] == ["pg-good"]
    [(thread, broken)] = unreadable
    assert thread == "pg-broken" and isinstance(broken, CorruptCheckpoint)
    assert "thread pg-broken in the PostgreSQL checkpointer at postgresql://" in str(broken)
    with open_saver(schema_url) as saver:  # the sync saver lists the ids too
        assert thread_ids(saver, 10) == ["pg-broken", "pg-good"]


def test_threads_of_the_memory_saver() -> None:
    with open_saver("memory") as saver:
        agent = counter(saver, "w", 0)
        for name in ("m1", "m2"):
            agent.invoke({"count": 0, "goal": 1}, config(name))
        assert thread_ids(saver, 5) == ["m2", "m1"]
        rows, unreadable = asyncio.run(athread_rows(agent, 5))
    assert [row["thread_id"] for row in rows] == ["m2", "m1"] and not unreadable


# -- secrets never reach a message ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("postgresql://app:Super Secret@127.0.0.1:5432/test", "Secret"),
        ("postgresql://app:hunter22pw@127.0.0.1:1/test", "hunter22pw"),
        ("postgresql://app@127.0.0.1:1/test?password=hunter22pw", "hunter22pw"),
        ("postgresql://app:hunter22pw@127.0.0.1:5432/test?bogus_option=1", "hunter22pw"),
        ("postgresql://app:hunter%2022pw@127.0.0.1:1/test", "hunter 22pw"),
    ],
)
def test_opening_errors_never_show_the_password(url: str, secret: str) -> None:
    with pytest.raises(ConfigError) as caught, open_saver(url):
        pass
    text = str(caught.value)
    assert secret not in text and secret.replace(" ", "%20") not in text
    assert text.startswith("Cannot use the PostgreSQL checkpointer at postgresql://app")


async def test_async_opening_errors_never_show_the_password() -> None:
    with pytest.raises(ConfigError) as caught:
        async with open_async_saver("postgresql://app:Super Secret@127.0.0.1:5432/test"):
            pass
    assert "Secret" not in str(caught.value)


def test_store_errors_mask_the_password_in_driver_text() -> None:
    guard = StoreGuard()
    guard.configure_guard(
        "the PostgreSQL checkpointer at postgresql://app:***@db/prod",
        (psycopg.OperationalError,),
        ["pw with space"],
    )
    exc = psycopg.OperationalError(
        'connection to "postgresql://app:pw with space@db/prod" failed: password=pw with space'
    )
    failure = guard.store_failure(exc, config("t1"), "saving a checkpoint of")
    assert isinstance(failure, StoreError)
    assert "pw with space" not in str(failure) and "space" not in str(failure)
    assert "react-agent resume --thread t1" in str(failure)


# -- files the project creates are private ------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_store_and_its_folders_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path / "new" / "state"))
    old = os.umask(0o022)  # a usual umask: without care, 0755 folders and 0644 files
    try:
        with open_saver(default_url()) as saver:
            counter(saver, "w", 0).invoke({"count": 0, "goal": 1}, config("t"))
            db = tmp_path / "new" / "state" / "checkpoints.sqlite"
            sidecars = [Path(f"{db}-wal"), Path(f"{db}-shm")]
            assert all(p.exists() for p in sidecars)  # WAL mode, the connection open
            assert [mode(p) for p in (db, *sidecars)] == [0o600, 0o600, 0o600]
    finally:
        os.umask(old)
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new" / "state") == 0o700


async def test_the_async_sqlite_store_is_private_too(tmp_path: Path) -> None:
    db = tmp_path / "a" / "checkpoints.sqlite"
    old = os.umask(0o022)
    try:
        async with open_async_saver(f"sqlite:///{db}") as saver:
            await counter(saver, "w", 0).ainvoke({"count": 0, "goal": 1}, config("t"))
            assert [mode(db), mode(Path(f"{db}-wal")), mode(Path(f"{db}-shm"))] == [0o600] * 3
    finally:
        os.umask(old)
    assert mode(db.parent) == 0o700


def test_existing_files_and_folders_keep_their_modes(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    db = folder / "checkpoints.sqlite"
    sqlite3.connect(db).close()
    os.chmod(db, 0o640)
    with open_saver(f"sqlite:///{db}") as saver:
        counter(saver, "w", 0).invoke({"count": 0, "goal": 1}, config("t"))
    assert mode(folder) == 0o755 and mode(db) == 0o640
