"""Writes that cannot poison a thread (issue 40, finding 5).

LangGraph saves a write before its channel applies it. A `Command(update={"status": "weird"})`
was refused by the channel, yet stored: `get_state` and every later run of the thread then
failed with the same ValueError. Now a refused write stores nothing, and a thread whose stored
values are invalid anyway (written here straight through the checkpointer, as the earlier
releases stored them) still answers `get_state` and its history, and its next run goes on.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import RemoveMessage
from langgraph.checkpoint.base import copy_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graph import build_graph
from graph.persistence.savers import open_saver
from tests.support.cli import cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.support.scripted_model import ScriptedChatModel
from tests.support.sentences import assert_one_sentence

# the task id under which LangGraph stores a command's (or an input's) writes for the
# checkpoint they apply to: what a refused `Command(update=...)` left behind
NULL_TASK = "00000000-0000-0000-0000-000000000000"

BAD = [
    ({"status": "weird"}, "'status' must be one of"),
    ({"answer": 5}, "'answer' and 'error' must be text or null"),
    ({"error": ["x"]}, "'answer' and 'error' must be text or null"),
    ({"usage": "many"}, "'usage' must be token counts"),
    ({"steps": 5}, "'steps' must be a list"),
]


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def answered(replies: list[str]) -> tuple[Any, InMemorySaver]:
    saver = InMemorySaver()
    agent = build_graph(model=ScriptedChatModel(replies), tools=[], checkpointer=saver)
    out = agent.invoke({"messages": [("user", "hi")]}, cfg())
    assert out["status"] == "answered"
    return agent, saver


def stored_writes(saver: InMemorySaver) -> int:
    return sum(len(writes) for writes in saver.writes.values())


@pytest.mark.parametrize(("update", "sentence"), BAD, ids=[str(u) for u, _ in BAD])
@pytest.mark.parametrize("goto", [None, "think"])
def test_a_refused_command_update_stores_nothing(
    update: dict[str, Any], sentence: str, goto: str | None
) -> None:
    agent, saver = answered(["first", "second"])
    before = agent.get_state(cfg())
    history = len(list(agent.get_state_history(cfg())))
    stored = stored_writes(saver)
    with pytest.raises(ValueError, match=sentence) as refused:
        agent.invoke(Command(update=update, goto=goto or ()), cfg())
    assert_one_sentence(str(refused.value))
    assert agent.get_state(cfg()).values == before.values
    assert len(list(agent.get_state_history(cfg()))) == history
    assert stored_writes(saver) == stored, "a refused write was stored"
    out = agent.invoke({"messages": [("user", "again")]}, cfg())
    assert (out["status"], out["answer"]) == ("answered", "second")


@pytest.mark.parametrize(("update", "sentence"), BAD, ids=[str(u) for u, _ in BAD])
async def test_a_refused_async_command_update_stores_nothing(
    update: dict[str, Any], sentence: str
) -> None:
    agent, saver = answered(["first", "second"])
    before = await agent.aget_state(cfg())
    stored = stored_writes(saver)
    with pytest.raises(ValueError, match=sentence):
        await agent.ainvoke(Command(update=update), cfg())
    assert (await agent.aget_state(cfg())).values == before.values
    assert stored_writes(saver) == stored
    out = await agent.ainvoke({"messages": [("user", "again")]}, cfg())
    assert (out["status"], out["answer"]) == ("answered", "second")


POISON = [
    ("status", "weird"),
    ("answer", 5),
    ("error", {"x": 1}),
    ("usage", "many"),
    ("approvals", ["x"]),
    ("steps", 5),
    ("run", "zz"),
    ("run", {"started_at": "yesterday", "iteration": 0}),
    ("run", {"no_such_field": 1}),
    ("messages", [{"role": "robot", "content": "x"}]),
    ("messages", [RemoveMessage(id="nope")]),
]


@pytest.mark.parametrize(("key", "value"), POISON, ids=[f"{k}={v!r}" for k, v in POISON])
def test_a_thread_with_a_bad_stored_write_still_reads_and_runs(
    key: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The write an earlier release stored for a refused command, put straight into the
    checkpointer: the thread reads (the bad value dropped, and logged), and the next run
    answers and leaves a head without it."""
    agent, saver = answered(["first", "second"])
    head = saver.get_tuple(cfg())
    saver.put_writes(head.config, [(key, value)], NULL_TASK)
    with caplog.at_level(logging.WARNING, logger="graph"):
        values = agent.get_state(cfg()).values
    assert values["status"] == "answered" and values["answer"] == "first"
    assert values.get("approvals") in (None, {})
    assert f"{key!r} was dropped" in caplog.text or f"'{key}' write was dropped" in caplog.text
    assert len(list(agent.get_state_history(cfg()))) >= 2
    out = agent.invoke({"messages": [("user", "again")]}, cfg())
    assert (out["status"], out["answer"]) == ("answered", "second")
    assert agent.get_state(cfg()).values["status"] == "answered"


@pytest.mark.parametrize(
    ("key", "value"),
    [("status", "weird"), ("answer", 5), ("error", ["x"]), ("approvals", ["x"])],
)
def test_a_bad_stored_value_reads_as_absent_and_the_next_run_goes_on(key: str, value: Any) -> None:
    """A checkpoint whose stored value for a field is invalid (written as a new head by hand):
    the field reads as absent, and the next run writes it anew."""
    agent, saver = answered(["first", "second"])
    head = saver.get_tuple(cfg())
    checkpoint = copy_checkpoint(head.checkpoint)
    checkpoint["channel_values"][key] = value
    version = saver.get_next_version(checkpoint["channel_versions"].get(key), None)
    checkpoint["channel_versions"][key] = version
    checkpoint["id"] = str(uuid6())  # later than the head
    saver.put(head.config, checkpoint, {**head.metadata, "step": 99}, {key: version})
    assert saver.get_tuple(cfg()).checkpoint["id"] == checkpoint["id"]
    values = agent.get_state(cfg()).values
    assert key not in values or values[key] in (None, {}), values
    assert [s.values.get("status") for s in agent.get_state_history(cfg())][1] == "answered"
    out = agent.invoke({"messages": [("user", "again")]}, cfg())
    assert (out["status"], out["answer"]) == ("answered", "second")


@pytest.mark.parametrize("how", ["command", "update_state", "fork"])
def test_removing_a_message_the_thread_lacks_is_refused_before_it_is_stored(how: str) -> None:
    """`add_messages` refuses the removal of an id the conversation does not hold only when it
    applies it, after LangGraph stored it: the removal is refused first, and a removal of one
    the thread holds still works."""
    agent, saver = answered(["first", "second"])
    stored = stored_writes(saver)
    bad = {"messages": [RemoveMessage(id="nope")]}
    with pytest.raises(ValueError, match="removes 'nope', which the thread does not hold") as no:
        if how == "command":
            agent.invoke(Command(update=bad), cfg())
        elif how == "update_state":
            agent.update_state(cfg(), bad)
        else:
            first = list(agent.get_state_history(cfg()))[-1]
            agent.update_state(first.config, bad, as_node="think")
    assert_one_sentence(str(no.value))
    assert stored_writes(saver) == stored
    question = agent.get_state(cfg()).values["messages"][0]
    agent.update_state(cfg(), {"messages": [RemoveMessage(id=question.id)]})
    assert [m.id for m in agent.get_state(cfg()).values["messages"]].count(question.id) == 0
    out = agent.invoke({"messages": [("user", "again")]}, cfg())
    assert (out["status"], out["answer"]) == ("answered", "second")


def test_the_cli_reads_and_continues_a_thread_with_a_bad_stored_write(
    tmp_path: Path, openai_server: ScriptedOpenAIServer
) -> None:
    """The same through the command line, on its SQLite store: `show` and `history` read the
    thread, and the next question is answered on it."""
    env = cli_env(openai_server.base_url, tmp_path / "state", REACT_AGENT_MODEL="scripted")
    openai_server.add(Reply(content="first"))
    assert run_cli("ask", "hi", "--thread", "p", env=env).returncode == 0
    with open_saver(f"sqlite:///{tmp_path / 'state' / 'checkpoints.sqlite'}") as saver:
        head = saver.get_tuple(cfg("p"))
        saver.put_writes(head.config, [("status", "weird"), ("answer", 5)], NULL_TASK)
    history = run_cli("history", "--thread", "p", "--json", env=env)
    assert history.returncode == 0, history.stdout + history.stderr
    head_id = head.config["configurable"]["checkpoint_id"]
    shown = run_cli("show", "--thread", "p", "--checkpoint", head_id, "--json", env=env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert json.loads(shown.stdout)["status"] == "answered"
    assert "weird" not in history.stdout + shown.stdout
    openai_server.add(Reply(content="second"))
    done = run_cli("ask", "again", "--thread", "p", "--json", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["answer"] == "second"
