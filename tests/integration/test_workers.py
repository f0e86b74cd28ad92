"""N stateless worker processes sharing one PostgreSQL checkpointer (`examples/worker.py`).

Two long-lived worker processes take turns on one thread: A runs turn 1, B runs turn 2 and
sees turn 1, A runs turn 3 and sees both, although A never ran turn 2. Everything a turn knows
comes from PostgreSQL. The tables live in a schema of their own (search_path in the URL),
dropped at the end. PostgreSQL is part of CI: no server is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from graph import build_graph
from graph.persistence.locks import lock_key
from graph.persistence.savers import open_saver
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# read at import: the autouse clean_env fixture removes REACT_AGENT_* variables during tests
POSTGRES = os.environ.get("REACT_AGENT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def answer(text: str) -> Reply:
    return Reply(content=f"Thought: I know this.\nFinal Answer: {text}")


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A checkpointer URL whose tables go to a fresh schema, dropped afterwards."""
    schema = f"react_agent_workers_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL at {POSTGRES} is required (REACT_AGENT_TEST_POSTGRES): {exc}")
    with admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in POSTGRES else "?"
        try:
            yield f"{POSTGRES}{sep}options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    """One scripted endpoint for the module's workers; each test adds its replies."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def worker_env(model_server: ScriptedOpenAIServer) -> dict[str, str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "REACT_AGENT_", "LANGSMITH_", "LANGCHAIN_"))
    }
    return {
        **clean,
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "sk-worker-test",
        "REACT_AGENT_MODEL": "scripted",
        "LANGSMITH_TRACING": "false",
    }


class Worker:
    """A long-lived `python -m examples.worker --serve` process."""

    def __init__(self, url: str, env: dict[str, str]) -> None:
        command = ["--checkpointer", url, "--serve", "--protocol", "text"]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "examples.worker", *command],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.pid = 0

    def wait_ready(self) -> Worker:
        first = self._read()
        assert "ready" in first, f"worker did not start: {first}"
        self.pid = first["ready"]
        return self

    def _read(self) -> dict[str, Any]:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(10)
            raise AssertionError(
                f"worker exited ({self.process.returncode}): {self.process.stderr.read()[-3000:]}"
            )
        return json.loads(line)

    def ask(self, thread: str, question: str) -> dict[str, Any]:
        self.process.stdin.write(json.dumps({"thread": thread, "question": question}) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture(scope="module")
def workers(database: str, worker_env: dict[str, str]) -> Iterator[tuple[Worker, Worker]]:
    """Two worker processes, started together (each needs a few seconds of imports)."""
    started: list[Worker] = []
    try:
        started += [Worker(database, worker_env), Worker(database, worker_env)]
        a, b = (worker.wait_ready() for worker in started)
        yield a, b
    finally:
        for worker in started:
            worker.close()


def user_texts(request: Any) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "user"]


def test_turns_alternate_between_two_workers(
    workers: tuple[Worker, Worker], database: str, model_server: ScriptedOpenAIServer
) -> None:
    a, b = workers
    assert a.pid != b.pid
    thread = f"workers-{uuid.uuid4().hex}"
    seen = len(model_server.chat_requests)
    model_server.add(
        answer("Nice to meet you, Ada."),
        answer("Your name is Ada."),
        answer("You are Ada and you like Lisp."),
    )

    first = a.ask(thread, "Hi, my name is Ada.")
    second = b.ask(thread, "What is my name?")
    third = a.ask(thread, "I like Lisp. Summarise what you know about me.")

    assert [t["worker"] for t in (first, second, third)] == [a.pid, b.pid, a.pid]
    assert [t["status"] for t in (first, second, third)] == ["answered"] * 3
    assert third["answer"] == "You are Ada and you like Lisp."
    assert [t["messages"] for t in (first, second, third)] == [2, 4, 6]
    r1, r2, r3 = model_server.chat_requests[seen:]
    assert user_texts(r1) == ["Hi, my name is Ada."]
    # B never ran turn 1: it read it from PostgreSQL
    assert user_texts(r2) == ["Hi, my name is Ada.", "What is my name?"]
    assert "Nice to meet you, Ada." in json.dumps(r2.messages)
    # A sees B's turn although it never ran it
    assert user_texts(r3) == [
        "Hi, my name is Ada.",
        "What is my name?",
        "I like Lisp. Summarise what you know about me.",
    ]
    assert "Your name is Ada." in json.dumps(r3.messages)

    # the thread as any other process reads it from the database
    with open_saver(database) as saver:
        state = build_graph(checkpointer=saver).get_state({"configurable": {"thread_id": thread}})
    assert [m.content for m in state.values["messages"]][-2:] == [
        "I like Lisp. Summarise what you know about me.",
        "You are Ada and you like Lisp.",
    ]
    assert state.values["status"] == "answered" and state.next == ()
    assert model_server.remaining == []


def test_a_thread_runs_on_one_worker_at_a_time(
    workers: tuple[Worker, Worker], database: str, model_server: ScriptedOpenAIServer
) -> None:
    a, b = workers
    thread = f"workers-{uuid.uuid4().hex}"
    seen = len(model_server.chat_requests)
    model_server.add(answer("Hello."))
    assert a.ask(thread, "Hello?")["status"] == "answered"

    # another process holds the thread (as a worker does during a turn): B says busy and
    # touches neither the thread nor the model
    with psycopg.connect(database, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_key(thread),))
        busy = b.ask(thread, "Still there?")
        holder.execute("SELECT pg_advisory_unlock(%s)", (lock_key(thread),))
    assert busy["status"] == "busy" and "busy" in busy["error"]
    assert len(model_server.chat_requests) == seen + 1

    model_server.add(answer("Yes."))
    again = b.ask(thread, "Still there?")
    assert again["status"] == "answered" and again["messages"] == 4
    assert model_server.remaining == []


def test_one_shot_worker_command(
    database: str, worker_env: dict[str, str], model_server: ScriptedOpenAIServer
) -> None:
    """`python -m examples.worker --thread T --question Q`: one turn, JSON out, exit 0."""
    thread = f"workers-{uuid.uuid4().hex}"
    seen = len(model_server.chat_requests)
    model_server.add(
        Reply(
            content='Thought: calculate.\nAction: calculator\nAction Input: {"expression": "6*7"}'
        ),
        answer("42"),
    )
    command = ["--checkpointer", database, "--thread", thread, "--question", "What is 6 * 7?"]
    done = subprocess.run(
        [sys.executable, "-m", "examples.worker", *command, "--protocol", "text"],
        cwd=REPO,
        env=worker_env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    asked = [r.messages[-1]["content"] for r in model_server.chat_requests[seen:]]
    explain = f"{result}; last messages of the model requests: {asked}; stderr: {done.stderr}"
    assert result["thread_id"] == thread and result["worker"] != os.getpid()
    assert (result["answer"], result["status"], result["steps"]) == ("42", "answered", 2), explain
    assert asked == ["What is 6 * 7?", "Observation: 42"], explain
    assert model_server.remaining == []
