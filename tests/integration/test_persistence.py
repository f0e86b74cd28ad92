"""Checkpoints a user can trust, through the command line, on SQLite and PostgreSQL.

Crash and resume (kill -9), approval pauses answered on stdin, history / show / replay, one run
at a time per thread, and the errors a user can cause.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.cli import (
    checkpointer_url,
    cli_env,
    run_cli,
    start_cli,
    wait_for,
)
from tests.support.cli import recorded as calls
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

pytestmark = pytest.mark.integration
TOOLS = "tests.support.crash_tools:TOOLS"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A checkpointer URL; PostgreSQL threads are deleted afterwards."""
    with checkpointer_url(request.param, tmp_path, "test") as url:
        yield url


@pytest.fixture
def thread() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def calls_file(tmp_path: Path) -> Path:
    return tmp_path / "calls.txt"


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path, calls_file: Path) -> dict:
    return cli_env(openai_server.base_url, tmp_path / "state", CALLS_FILE=str(calls_file))


def stored_result_writes(url: str, thread_id: str) -> int:
    """Observations saved as pending writes for the thread (each act task writes its own
    ToolMessage to the conversation the moment its call finishes)."""
    query = (
        "SELECT count(*) FROM {table} WHERE thread_id = {p} AND channel = 'messages' "
        "AND substr(task_path, 1, 14) = '~__pregel_push'"
    )
    if url.startswith("sqlite"):
        path = url[len("sqlite:///") :]
        with sqlite3.connect(path) as conn:
            return conn.execute(query.format(table="writes", p="?"), (thread_id,)).fetchone()[0]
    with psycopg.connect(url) as conn:
        sql = query.format(table="checkpoint_writes", p="%s")
        return conn.execute(sql, (thread_id,)).fetchone()[0]


def test_kill_9_mid_tool_call_then_resume_runs_nothing_twice(
    openai_server: ScriptedOpenAIServer, env: dict, store: str, thread: str, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("tick", {"label": "a"}), ToolCall("sleepy", {"label": "b"})]),
        Reply(content="Both done."),
    )
    args = ["--thread", thread, "--protocol", "native", "--tools", TOOLS, "--checkpointer", store]
    worker = start_cli("ask", "tick and sleep", *args, env={**env, "SLEEPY_SECONDS": "60"})
    try:
        wait_for(
            lambda: {"tick:a", "sleepy-start:b"} <= set(calls(calls_file)),
            what="both tool calls to start",
        )
        wait_for(
            lambda: stored_result_writes(store, thread) >= 1,
            what="the finished call to be checkpointed",
        )
        os.kill(worker.pid, signal.SIGKILL)  # mid-flight: sleepy is still sleeping
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == -signal.SIGKILL
    assert sorted(calls(calls_file)) == ["sleepy-start:b", "tick:a"]  # parallel: any order

    # another process picks the thread up
    done = run_cli(
        "resume",
        *args[:2],
        "--tools",
        TOOLS,
        "--checkpointer",
        store,
        "--json",
        env={**env, "SLEEPY_SECONDS": "0"},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "answered" and result["answer"] == "Both done."
    assert sorted(calls(calls_file)) == [
        "sleepy-done:b",
        "sleepy-start:b",
        "sleepy-start:b",
        "tick:a",
    ]  # tick ran once
    assert [s["observation"] for s in result["steps"] if s["kind"] == "action"] == [
        "ticked a",
        "slept b",
    ]
    assert not openai_server.remaining


def test_history_show_and_replay(
    openai_server: ScriptedOpenAIServer, env: dict, store: str, thread: str, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("tick", {"label": "first"})]),
        Reply(content="Ticked first."),
    )
    args = ["--thread", thread, "--checkpointer", store]
    assert run_cli("ask", "tick", *args, "--tools", TOOLS, env=env).returncode == 0

    listing = run_cli("history", *args, "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    rows = [json.loads(line) for line in listing.stdout.splitlines()]
    nodes = [row["node"] for row in rows]
    assert nodes == ["input", "__start__", "think", "act", "think", "finish"]
    summaries = [row["summary"] for row in rows]
    assert "question: tick" in summaries[1] and 'Action: tick({"label": "first"})' in summaries[2]
    assert "tick → ticked first" in summaries[3] and "answered: Ticked first." in summaries[5]
    before_act = rows[2]["checkpoint_id"]

    shown = run_cli("show", *args, "--checkpoint", before_act, env=env)
    assert shown.returncode == 0, shown.stderr
    state = json.loads(shown.stdout)
    assert state["pending"][0]["args"] == {"label": "first"}
    assert state["messages"][0] == {**state["messages"][0], "type": "human", "content": "tick"}
    assert "next: act" in shown.stderr

    openai_server.add(Reply(content="Ticked second."))
    fork = run_cli(
        "replay",
        *args,
        "--checkpoint",
        before_act,
        "--input",
        '{"label": "second"}',
        "--tools",
        TOOLS,
        "--json",
        env=env,
    )
    assert fork.returncode == 0, fork.stderr
    assert json.loads(fork.stdout)["answer"] == "Ticked second."
    assert calls(calls_file) == ["tick:first", "tick:second"]

    again = run_cli("history", *args, env=env)
    text = again.stdout
    assert "answered: Ticked first." in text and "answered: Ticked second." in text  # both kept
    original = run_cli("show", *args, "--checkpoint", before_act, env=env)
    assert json.loads(original.stdout)["pending"][0]["args"] == {"label": "first"}


@pytest.mark.parametrize(
    ("typed", "expected_call", "observation"),
    [
        ("a\n", "publish:hello", "published 'hello'"),
        ('e\n{"text": "edited"}\n', "publish:edited", "published 'edited'"),
        ("r\nnot today\n", None, "rejected the tool call for `publish` with reason: not today"),
        ("s\npublished it by hand\n", None, "published it by hand"),
    ],
    ids=["approve", "edit", "reject", "respond"],
)
def test_approval_through_stdin(
    openai_server: ScriptedOpenAIServer,
    env: dict,
    thread: str,
    calls_file: Path,
    typed: str,
    expected_call: str | None,
    observation: str,
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("publish", {"text": "hello"})]),
        Reply(content="Done."),
    )
    done = run_cli(
        "ask",
        "publish hello",
        "--thread",
        thread,
        "--tools",
        TOOLS,
        "--approve",
        "publish",
        "--json",
        env=env,
        stdin=typed,
    )
    assert done.returncode == 0, done.stderr
    assert 'Approval needed: publish {"text": "hello"}' in done.stderr
    assert calls(calls_file) == ([expected_call] if expected_call else [])
    result = json.loads(done.stdout)
    assert result["steps"][0]["observation"].endswith(observation)
    tool_reply = openai_server.chat_requests[1].body["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["content"].endswith(observation)


def test_approval_pause_survives_the_process(
    openai_server: ScriptedOpenAIServer, env: dict, store: str, thread: str, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("publish", {"text": "later"})]),
        Reply(content="Published later."),
    )
    args = ["--thread", thread, "--tools", TOOLS, "--checkpointer", store]
    paused = run_cli("ask", "publish later", *args, "--approve", "publish", env=env, stdin="")
    assert paused.returncode == 4
    assert f"Paused for approval. Continue with: react-agent resume --thread {thread}" in (
        paused.stderr
    )
    assert calls(calls_file) == []
    listing = run_cli("threads", "--checkpointer", store, env=env)
    assert any(thread in line and "paused" in line for line in listing.stdout.splitlines())

    # a new process, without --approve: the policy the run started with still applies
    done = run_cli("resume", *args, "--json", env=env, stdin="a\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "Published later."
    assert calls(calls_file) == ["publish:later"]


def test_second_process_on_a_busy_thread_is_refused(
    openai_server: ScriptedOpenAIServer, env: dict, store: str, thread: str, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("sleepy", {"label": "long"})]), Reply(content="Slept.")
    )
    args = ["--thread", thread, "--tools", TOOLS, "--checkpointer", store]
    release = calls_file.with_name("release")
    first = start_cli(
        "ask",
        "sleep",
        *args,
        env={**env, "SLEEPY_SECONDS": "60", "RELEASE_FILE": str(release)},
    )
    try:
        wait_for(lambda: "sleepy-start:long" in calls(calls_file), what="the first run")
        second = run_cli("ask", "me too", *args, env=env)
        assert second.returncode == 5
        assert f"Thread {thread} is busy: another run on it is in progress" in second.stderr
        release.touch()  # now let the first run finish
        assert first.wait(60) == 0
    finally:
        if first.poll() is None:
            first.kill()
    history = run_cli("history", "--thread", thread, "--checkpointer", store, env=env)
    assert "me too" not in history.stdout and "answered: Slept." in history.stdout
    assert len(openai_server.chat_requests) == 2


def test_unknown_thread_and_checkpoint(env: dict, store: str) -> None:
    args = ["--thread", "test-nope", "--checkpointer", store]
    assert run_cli("history", *args, env=env).stderr.startswith("error: no thread 'test-nope'")
    gone = run_cli("resume", *args, env=env)
    assert gone.returncode == 2 and "no thread 'test-nope'" in gone.stderr
    missing = run_cli(
        "show", *args, "--checkpoint", "1f000000-0000-6000-8000-000000000000", env=env
    )
    assert missing.returncode == 2
    assert "no checkpoint '1f000000-0000-6000-8000-000000000000'" in missing.stderr


def test_database_down_is_one_sentence(env: dict) -> None:
    done = run_cli(
        "history",
        "--thread",
        "x",
        "--checkpointer",
        "postgresql://postgres@127.0.0.1:1/test",
        env=env,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: Cannot use the PostgreSQL checkpointer at postgresql://postgres@127.0.0.1:1/test"
    )
    assert "Traceback" not in done.stderr


def test_bad_checkpointer_url(env: dict) -> None:
    done = run_cli("threads", "--checkpointer", "sqlite://", env=env)
    assert done.returncode == 2 and "names no file" in done.stderr


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(
    openai_server: ScriptedOpenAIServer, env: dict, thread: str, calls_file: Path
) -> None:
    openai_server.add(
        Reply(tool_calls=[ToolCall("sleepy", {"label": "nap"})]), Reply(content="Rested.")
    )
    args = ["--thread", thread, "--tools", TOOLS]
    worker = start_cli("ask", "nap", *args, env={**env, "SLEEPY_SECONDS": "60"})
    try:
        wait_for(lambda: "sleepy-start:nap" in calls(calls_file), what="the tool to start")
        worker.send_signal(signal.SIGINT)
        _, stderr = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 130
    assert (
        f"Interrupted. The run is saved; continue it with: react-agent resume --thread {thread}"
        in stderr
    )
    assert "Traceback" not in stderr
    done = run_cli("resume", *args, "--json", env={**env, "SLEEPY_SECONDS": "0"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "Rested."


def test_chat_keeps_one_thread(openai_server: ScriptedOpenAIServer, env: dict, thread: str) -> None:
    openai_server.add(Reply(content="Hello, Ada."), Reply(content="You are Ada."))
    done = run_cli(
        "chat",
        "--thread",
        thread,
        "--protocol",
        "native",
        env=env,
        stdin="I am Ada.\n\nWho am I?\n/exit\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Final Answer: Hello, Ada.", "Final Answer: You are Ada."]
    sent = [m["content"] for m in openai_server.chat_requests[1].body["messages"][1:]]
    assert sent == ["I am Ada.", "Hello, Ada.", "Who am I?"]
    assert f"continue with: react-agent chat --thread {thread}" in done.stderr
