"""The approvals ledger (decisions spent, calls started and finished) is kept only for runs that
store checkpoints: a run without a checkpointer can be neither resumed nor replayed, so there is
nothing to spend a decision or mark a rerun for, and code that builds a graph without one finds
no ledger file left in its state folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph import build_graph
from graph.persistence.ledger import FILE
from tests.support.plain_tools import echo
from tests.support.scripted_model import ScriptedChatModel, calls, tool_call


def one_call(checkpointer: InMemorySaver | None) -> dict:
    model = ScriptedChatModel([calls(tool_call("echo", {"text": "a"})), "done"])
    agent = build_graph(model=model, tools=[echo], protocol="native", checkpointer=checkpointer)
    return agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t1"}})


def test_a_run_without_a_checkpointer_writes_no_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path))
    out = one_call(None)
    assert out["status"] == "answered" and out["steps"][0]["observation"] == "echo: a"
    assert not (tmp_path / FILE).exists()


def test_a_checkpointed_run_records_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path))
    assert one_call(InMemorySaver())["status"] == "answered"
    assert (tmp_path / FILE).exists()  # no store: the ledger falls back to the state folder
