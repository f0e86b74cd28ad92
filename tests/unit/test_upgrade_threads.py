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
from tests.support.scripted_model import ScriptedChatModel

STORED = Path(__file__).parents[1] / "data" / "threads" / "v0.2-paused-approval.sqlite"
ran: list[str] = []


@tool
def publish(text: str) -> str:
    """Publish a text."""
    ran.append(text)
    return f"published {text}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.mark.parametrize("protocol", ["native", "text"])
@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"type": "approve"}, ["hi"]),
        ({"type": "edit", "edited_action": {"name": "publish", "args": {"text": "new"}}}, ["new"]),
        ({"type": "reject", "message": "not now"}, []),
    ],
    ids=["approve", "edit", "reject"],
)
def test_a_thread_paused_for_approval_by_the_last_release_resumes(
    tmp_path: Path, protocol: str, decision: dict, expected: list[str]
) -> None:
    store = tmp_path / "old.sqlite"
    shutil.copy(STORED, store)
    final = "done" if protocol == "native" else "Thought: ok\nFinal Answer: done"
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
