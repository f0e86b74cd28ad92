"""Issue 40, finding 6: after a crash, the call that runs again says so, and a call that needs
approval asks again instead of running.

In process (a tool cut short by a `KeyboardInterrupt`, as Ctrl-C or a killed worker leaves it,
then the run continued from its last checkpoint, as any engine retries it) and through the CLI
(`kill -9` while a tool blocks, then `react-agent resume` in another process), on SQLite and
PostgreSQL. The mark is the graph's own: `response_metadata["react_rerun"]` on the stored
ToolMessage and `rerun: True` on its trace entry.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from graph.messages import RERUN
from graph.persistence.savers import open_saver
from graph.steps import steps_of
from tests.support.cli import (
    CLI,
    POSTGRES_URL,
    REPO,
    checkpointer_url,
    cli_env,
    recorded,
    run_cli,
    start_cli,
    wait_for,
)
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

TOOLS = "tests.support.crash_tools:TOOLS"
attempts: list[str] = []


class Killed(BaseException):
    """What a worker's death looks like from inside the run: the call never returns."""


@tool
def flaky(label: str) -> str:
    """Start; the first attempt of each label dies half way."""
    attempts.append(label)
    if attempts.count(label) == 1:
        raise Killed
    return f"done {label}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    attempts.clear()


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


# -- in process: the run continued from its last checkpoint --------------------------------


@pytest.mark.parametrize("thread", ["t", "demo.1"])  # a store's namespace label has no "."
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_cut_short_and_run_again_is_marked(mode: str, thread: str) -> None:
    import asyncio

    agent = build_graph(
        model=ScriptedChatModel(
            [
                calls(tool_call("flaky", {"label": "x"})),
                "ok",
                calls(tool_call("flaky", {"label": "x"})),
                "ok",
            ]
        ),
        tools=[flaky],
        checkpointer=InMemorySaver(),
    )
    question = {"messages": [("user", "go")]}
    run = agent.invoke if mode == "sync" else (lambda *a: asyncio.run(agent.ainvoke(*a)))
    with pytest.raises(Killed):
        run(question, cfg(thread))
    out = run(None, cfg(thread))  # as `react-agent resume` or a serving engine's retry does
    assert out["status"] == "answered" and attempts == ["x", "x"]
    [result] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result.response_metadata[RERUN] == 1
    assert out["steps"][0]["rerun"] is True
    assert steps_of(agent.get_state(cfg(thread)).values)[0]["rerun"] is True
    later = run({"messages": [("user", "again")]}, cfg(thread))  # a call that finished: no mark
    assert attempts == ["x", "x", "x"] and "rerun" not in later["steps"][0]


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_a_gated_call_cut_short_asks_again_instead_of_running(mode: str) -> None:
    agent = build_graph(
        model=ScriptedChatModel([calls(tool_call("flaky", {"label": "z"})), "ok"]),
        tools=[flaky],
        checkpointer=InMemorySaver(),
        approve=["flaky"],
        approval_mode=mode,
    )
    paused = agent.invoke({"messages": [("user", "go")]}, cfg("t"))
    [pause] = paused["__interrupt__"]
    approve = {"decisions": [{"type": "approve"}]} if mode == "batched" else {"type": "approve"}
    with pytest.raises(Killed):
        agent.invoke(Command(resume={pause.id: approve}), cfg("t"))
    assert attempts == ["z"]
    again = agent.invoke(None, cfg("t"))  # the engine's retry: the approval was spent
    [asked] = again["__interrupt__"]
    assert attempts == ["z"]
    assert "z" in json.dumps(asked.value)
    out = agent.invoke(Command(resume={asked.id: approve}), cfg("t"))
    if mode == "per_call" and out.get("__interrupt__"):
        # per call, a retry that lost the first answer pauses in HITL, then in the check
        # (the answer it got is for the attempt that died): one more decision
        assert attempts == ["z"]
        [asked] = out["__interrupt__"]
        out = agent.invoke(Command(resume={asked.id: approve}), cfg("t"))
    assert attempts == ["z", "z"] and out["status"] == "answered"
    assert out["steps"][0]["rerun"] is True


# -- through the CLI: kill -9, then resume in another process --------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A checkpointer URL; PostgreSQL threads are deleted afterwards."""
    with checkpointer_url(request.param, tmp_path, "crash") as url:
        yield url


@pytest.fixture
def thread() -> str:
    return f"crash-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def calls_file(tmp_path: Path) -> Path:
    return tmp_path / "calls.txt"


@pytest.fixture
def env(openai_server: ScriptedOpenAIServer, tmp_path: Path, calls_file: Path) -> dict:
    return cli_env(openai_server.base_url, tmp_path / "state", CALLS_FILE=str(calls_file))


def kill_when_started(worker: subprocess.Popen, calls_file: Path) -> None:
    try:
        wait_for(lambda: "sleepy-start:nap" in recorded(calls_file), what="the tool to start")
        os.kill(worker.pid, signal.SIGKILL)  # mid-flight: the tool is still running
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == -signal.SIGKILL


def stored(url: str, thread: str) -> Any:
    with open_saver(url) as saver:
        return build_graph(checkpointer=saver).get_state(cfg(thread))


@pytest.mark.integration
def test_kill_9_then_resume_marks_the_call_that_ran_again(
    openai_server: ScriptedOpenAIServer, env: dict, store: str, thread: str, calls_file: Path
) -> None:
    openai_server.add(Reply(tool_calls=[ToolCall("sleepy", {"label": "nap"})]), Reply("Rested."))
    args = ["--thread", thread, "--protocol", "native", "--tools", TOOLS, "--checkpointer", store]
    worker = start_cli("ask", "sleep", *args, env={**env, "SLEEPY_SECONDS": "60"})
    kill_when_started(worker, calls_file)

    done = run_cli("resume", *args, "--json", env={**env, "SLEEPY_SECONDS": "0"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "answered"
    assert recorded(calls_file).count("sleepy-start:nap") == 2  # tool calls are at least once
    [action] = [s for s in result["steps"] if s["kind"] == "action"]
    assert action["rerun"] is True  # ... and the second run says so
    messages = stored(store, thread).values["messages"]
    [observed] = [m for m in messages if isinstance(m, ToolMessage)]
    assert observed.response_metadata[RERUN] == 1


@pytest.mark.integration
def test_kill_9_during_an_approved_call_then_resume_asks_again(
    openai_server: ScriptedOpenAIServer, env: dict, store: str, thread: str, calls_file: Path
) -> None:
    openai_server.add(Reply(tool_calls=[ToolCall("sleepy", {"label": "nap"})]), Reply("Rested."))
    args = ["--thread", thread, "--protocol", "native", "--tools", TOOLS, "--checkpointer", store]
    gated = [*args, "--approve", "sleepy"]
    worker = subprocess.Popen(
        [CLI, "ask", "sleep", *gated],
        env={**env, "SLEEPY_SECONDS": "60"},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    assert worker.stdin is not None
    worker.stdin.write(b"a\n")  # the person approves once
    worker.stdin.flush()
    kill_when_started(worker, calls_file)

    paused = run_cli("resume", *gated, env={**env, "SLEEPY_SECONDS": "0"}, stdin="")
    assert recorded(calls_file) == ["sleepy-start:nap"]  # not run again on the old approval
    assert "Approval needed: sleepy" in paused.stderr
    assert stored(store, thread).interrupts  # still paused, waiting for a new decision

    done = run_cli("resume", *gated, "--json", env={**env, "SLEEPY_SECONDS": "0"}, stdin="a\n")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "answered"
    assert recorded(calls_file) == ["sleepy-start:nap", "sleepy-start:nap", "sleepy-done:nap"]
    [action] = [s for s in result["steps"] if s["kind"] == "action"]
    assert action["rerun"] is True


# -- the store the CLI opens beside its checkpointer ---------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_the_store_beside_the_checkpointer_keeps_the_ledger_across_processes(
    kind: str, tmp_path: Path
) -> None:
    """What one process spent, the next one (opening the same URL) finds spent."""
    from graph.persistence.ledger import Ledger
    from graph.persistence.stores import open_async_store, open_store

    url = f"sqlite:///{tmp_path / 'c.sqlite'}" if kind == "sqlite" else POSTGRES_URL
    thread = f"crash-{uuid.uuid4().hex[:10]}"
    with open_store(url) as store:
        assert Ledger(store, thread).claim("decision", "call")
        started = Ledger(store, thread).start("task", "call")
        assert started.earlier == 0
    async with open_async_store(url) as store:
        assert not await Ledger(store, thread).aclaim("decision", "call")
        again = await Ledger(store, thread).astart("task", "call")
        assert again.earlier == 1  # the first start never finished


@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "approved"])
def test_a_tool_that_pauses_itself_resumes_without_a_mark_or_a_new_approval(gated: bool) -> None:
    """A tool's own `interrupt()` (an "ask the user" tool) re-runs the task when answered, as
    LangGraph resumes any node: that is no crash (no mark) and, for an approved call, no new
    decision (the approval covers the call it paused inside)."""
    from langgraph.types import interrupt

    @tool
    def ask_amount(to: str) -> str:
        """Ask the person how much, then pay."""
        attempts.append(to)
        amount = interrupt(f"how much for {to}?")
        return f"paid {amount} to {to}"

    agent = build_graph(
        model=ScriptedChatModel([calls(tool_call("ask_amount", {"to": "bob"})), "ok"]),
        tools=[ask_amount],
        checkpointer=InMemorySaver(),
        approve=["ask_amount"] if gated else [],
    )
    paused = agent.invoke({"messages": [("user", "pay bob")]}, cfg("t"))
    if gated:
        assert "action_requests" in paused["__interrupt__"][0].value
        paused = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("t"))
    [question] = paused["__interrupt__"]
    assert question.value == "how much for bob?"
    out = agent.invoke(Command(resume="5"), cfg("t"))
    assert out["status"] == "answered" and out["steps"][0]["observation"] == "paid 5 to bob"
    assert "rerun" not in out["steps"][0]
