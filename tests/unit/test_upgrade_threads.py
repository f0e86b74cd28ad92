"""Threads written by the release before the middleware rewrite go on after the upgrade.

tests/data/threads/v0.2-paused-approval.sqlite was written by that release (commit 0650fb0):
two threads, `paused-native` and `paused-text`, each paused for approval of
`publish({"text": "hi"})` with the interrupt value it wrote then (LangChain's schema plus
the Agent Inbox fields). They are resumed with this release's decisions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from graph import build_graph
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call

STORED = Path(__file__).parents[1] / "data" / "threads" / "v0.2-paused-approval.sqlite"
ran: list[str] = []


@tool
def publish(text: str) -> str:
    """Publish a text."""
    ran.append(text)
    return f"published {text}"


# each decision on `publish({"text": "hi"})`, and what then ran
DECISIONS = pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"type": "approve"}, ["hi"]),
        ({"type": "edit", "edited_action": {"name": "publish", "args": {"text": "new"}}}, ["new"]),
        ({"type": "reject", "message": "not now"}, []),
    ],
    ids=["approve", "edit", "reject"],
)


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def stored_copy(fixture: Path, tmp_path: Path) -> Path:
    """A copy of a stored release's threads, so a test never writes to the fixture."""
    store = tmp_path / "old.sqlite"
    shutil.copy(fixture, store)
    return store


def final_answer(protocol: str) -> str:
    return "done" if protocol == "native" else "Thought: ok\nFinal Answer: done"


@pytest.mark.parametrize("protocol", ["native", "text"])
@DECISIONS
def test_a_thread_paused_for_approval_by_the_last_release_resumes(
    tmp_path: Path, protocol: str, decision: dict, expected: list[str]
) -> None:
    store = stored_copy(STORED, tmp_path)
    final = final_answer(protocol)
    config = {"configurable": {"thread_id": f"paused-{protocol}"}}
    with SqliteSaver.from_conn_string(str(store)) as saver:
        agent = build_graph(
            model=ScriptedChatModel([final]),
            tools=[publish],
            checkpointer=saver,
            protocol=protocol,
            approve=["publish"],
        )
        assert agent.get_state(config).next == ("review",)
        out = agent.invoke(Command(resume={"decisions": [decision]}), config)
        assert (out["status"], out["answer"]) == ("answered", "done")
        assert ran == expected
        again = build_graph(
            model=ScriptedChatModel([final]), tools=[publish], checkpointer=saver, protocol=protocol
        ).invoke({"messages": [("user", "and now?")]}, config)
        assert again["status"] == "answered"


# Written by the release before a one-call step went to act by an edge and a first run left
# its status unset (commit 638462a, the scripted model and `publish` tool above): paused for
# approval at review (both protocols), paused inside act per call (a pending `Send` to act),
# and a finished thread of two steps.
BEFORE_EDGE = STORED.with_name("v0.3-before-act-edge.sqlite")


@pytest.mark.parametrize("thread", ["paused-native", "paused-text", "per-call-native"])
@DECISIONS
def test_a_thread_paused_before_the_act_edge_resumes(
    tmp_path: Path, thread: str, decision: dict, expected: list[str]
) -> None:
    store = stored_copy(BEFORE_EDGE, tmp_path)
    protocol = "text" if thread.endswith("text") else "native"
    final = final_answer(protocol)
    config = {"configurable": {"thread_id": thread}}
    mode = "per_call" if thread.startswith("per-call") else "batched"
    with SqliteSaver.from_conn_string(str(store)) as saver:
        agent = build_graph(
            model=ScriptedChatModel([final, final]),
            tools=[publish],
            checkpointer=saver,
            protocol=protocol,
            approve=["publish"],
            approval_mode=mode,
        )
        assert agent.get_state(config).next == ("act" if mode == "per_call" else "review",)
        # per call, LangChain's middleware takes one decision per pause
        answer = decision if mode == "per_call" else {"decisions": [decision]}
        out = agent.invoke(Command(resume=answer), config)
        assert (out["status"], out["answer"]) == ("answered", "done")
        assert ran == expected
        again = agent.invoke({"messages": [("user", "and now?")]}, config)
        assert again["status"] == "answered"


def test_a_finished_thread_from_before_the_act_edge_goes_on(tmp_path: Path) -> None:
    store = stored_copy(BEFORE_EDGE, tmp_path)
    config = {"configurable": {"thread_id": "finished-native"}}
    script = [calls(tool_call("publish", {"text": "c"})), "done again"]
    with SqliteSaver.from_conn_string(str(store)) as saver:
        agent = build_graph(model=ScriptedChatModel(script), tools=[publish], checkpointer=saver)
        out = agent.invoke({"messages": [("user", "publish c")]}, config)
    assert (out["status"], out["answer"]) == ("answered", "done again")
    assert ran == ["c"]
    assert [s["tool_input"] for s in out["steps"] if s["kind"] == "action"] == [{"text": "c"}]
