"""`react-agent trace` on real checkpoints (a SQLite file written by real runs of the graph with a
scripted model), read as a person reads it: a 3-step thread with a failing tool, a failed run, a
paused run and the same run after its approval, `--run` and `--json`."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.types import Command

from graph import build_graph
from graph.persistence.savers import open_saver
from tests.support.cli import cli_env, run_cli
from tests.support.plain_tools import explode, publish
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

pytestmark = pytest.mark.integration


@tool
def echo(text: str) -> str:
    """Repeat the text back, after a short wait."""
    time.sleep(0.05)
    return f"echo: {text}"


def step(name: str, args: dict, tokens: tuple[int, int]) -> AIMessage:
    reply = calls(tool_call(name, args))
    reply.usage_metadata = {
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "total_tokens": sum(tokens),
    }
    return reply


def ask(agent: Any, thread: str, payload: Any) -> dict[str, Any]:
    return agent.invoke(payload, {"configurable": {"thread_id": thread}})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite file with the threads the tests read."""
    url = f"sqlite:///{tmp_path_factory.mktemp('trace') / 'runs.sqlite'}"
    done = AIMessage(
        "All done.", usage_metadata={"input_tokens": 200, "output_tokens": 5, "total_tokens": 205}
    )
    with open_saver(url) as saver:
        three = ScriptedChatModel(
            [
                step("echo", {"text": "one"}, (100, 10)),
                step("explode", {"text": "two"}, (150, 12)),
                done,
            ]
        )
        agent = build_graph(model=three, tools=[echo, explode], checkpointer=saver)
        assert ask(agent, "three", {"messages": [("user", "three steps")]})["status"] == "answered"

        broken = ScriptedChatModel([RuntimeError("connection refused")])
        agent = build_graph(model=broken, tools=[echo], checkpointer=saver)
        assert ask(agent, "failed", {"messages": [("user", "fail")]})["status"] == "error"

        for thread in ("paused", "approved"):
            model = ScriptedChatModel([calls(tool_call("publish", {"text": "hi"})), "Published."])
            agent = build_graph(
                model=model, tools=[publish], checkpointer=saver, approve=["publish"]
            )
            assert "__interrupt__" in ask(agent, thread, {"messages": [("user", "publish hi")]})
        time.sleep(0.3)  # a person takes a moment to approve
        resumed = ask(agent, "approved", Command(resume={"decisions": [{"type": "approve"}]}))
        assert resumed["status"] == "answered"
        model = ScriptedChatModel(["Second answer."])
        agent = build_graph(model=model, tools=[publish], checkpointer=saver)
        assert ask(agent, "approved", {"messages": [("user", "and again")]})["status"] == "answered"
    return url


def trace(store: str, tmp_path: Path, *args: str) -> Any:
    env = cli_env("http://127.0.0.1:9/v1", tmp_path)
    return run_cli("trace", "--checkpointer", store, *args, env=env)


def lines(text: str) -> list[list[str]]:
    """Each table row as its cells (two spaces or more apart); the waterfall bars dropped."""
    return [
        [c for c in re.split(r"\s{2,}", line.strip()) if not re.fullmatch(r"#+", c)]
        for line in text.splitlines()[1:]
    ]


def test_a_three_step_run_reads_top_to_bottom(store: str, tmp_path: Path) -> None:
    done = trace(store, tmp_path, "--thread", "three")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert head.startswith("thread three · run 1 of 1 · answered · ")
    assert "tokens 450 in / 27 out" in head
    assert "approvals" not in head  # none were asked for
    rows = lines(done.stdout)
    assert rows[0] == ["step", "node", "time", "waterfall", "what happened"]
    assert [r[:1] if r[0] == "tool" else r[:2] for r in rows[1:]] == [
        ["1", "think"], ["1", "act"], ["tool"], ["2", "think"], ["2", "act"], ["tool"],
        ["3", "think"], ["3", "finish"],
    ]  # fmt: skip
    assert rows[1][-1] == '→ Action: echo({"text": "one"}) [100 in / 10 out]'
    assert rows[3][-1] == 'echo({"text": "one"}) → echo: one'
    assert rows[6][-1].startswith('ERROR explode({"text": "two"}) → ')
    assert "disk on fire" in rows[6][-1]
    assert rows[7][-1] == "Final Answer: All done. [200 in / 5 out]"

    assert "\x1b[" not in done.stdout and "█" not in done.stdout
    tool_ms = re.search(r"\n\s+tool\s+(\d+) ms", done.stdout)
    assert tool_ms and int(tool_ms.group(1)) >= 50  # echo's own wait, from its result


def test_a_failed_run_names_the_failing_step_and_the_error(store: str, tmp_path: Path) -> None:
    done = trace(store, tmp_path, "--thread", "failed")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("thread failed · run 1 of 1 · error · ")
    rows = lines(done.stdout)
    think = next(r for r in rows if "think" in r)
    assert think[-1].startswith("ERROR error: ") and "connection refused" in think[-1]
    assert rows[-1][0] == "error" and "connection refused" in rows[-1][-1]


def test_a_paused_run_shows_what_waits_for_approval(store: str, tmp_path: Path) -> None:
    done = trace(store, tmp_path, "--thread", "paused")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert " · paused · " in head and "approvals 0 ms" in head
    last = lines(done.stdout)[-1]
    assert last[:3] == ["1", "review", "…"]
    assert last[-1] == 'waiting for approval: publish({"text": "hi"})'


def test_an_approved_run_shows_the_wait_and_run_picks_a_run(store: str, tmp_path: Path) -> None:
    first = trace(store, tmp_path, "--thread", "approved", "--run", "1")
    assert first.returncode == 0, first.stderr
    head = first.stdout.splitlines()[0]
    assert head.startswith("thread approved · run 1 of 2 · answered · ")
    waited = re.search(r"approvals (\d+) ms", head)
    assert waited and int(waited.group(1)) >= 300
    review = next(r for r in lines(first.stdout) if "review" in r)
    assert review[-1].startswith("waited for approval")
    tool_row = next(r for r in lines(first.stdout) if r[0] == "tool")
    assert tool_row[-1] == 'publish({"text": "hi"}) → published hi'

    last = trace(store, tmp_path, "--thread", "approved")  # the last run by default
    assert last.stdout.splitlines()[0].startswith("thread approved · run 2 of 2 · answered")
    assert "Final Answer: Second answer." in last.stdout


def test_json_is_one_object_with_every_bar(store: str, tmp_path: Path) -> None:
    done = trace(store, tmp_path, "--thread", "three", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert (run["status"], run["run"], run["runs"]) == ("answered", 1, 1)
    assert (run["input_tokens"], run["output_tokens"]) == (450, 27)
    assert [b["node"] for b in run["bars"]] == ["think", "act", "think", "act", "think", "finish"]
    failing = run["bars"][3]["tools"][0]
    assert failing["name"] == "explode" and failing["error"] is True
    assert run["tool_ms"] >= 50 and run["duration_ms"] >= run["model_ms"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--thread", "nobody"], "nobody"),
        (["--thread", "three", "--run", "5"], "--run 5: thread 'three' has 1 run (1 to 1"),
        (["--thread", "three", "--run", "nope"], "--run nope: no run of thread 'three'"),
    ],
)
def test_a_wrong_thread_or_run_is_one_sentence(
    store: str, tmp_path: Path, args: list[str], says: str
) -> None:
    done = trace(store, tmp_path, *args)
    assert done.returncode != 0
    assert says in done.stderr
    assert "Traceback" not in done.stderr
