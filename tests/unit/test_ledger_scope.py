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


def _second_request_results(model: ScriptedChatModel) -> list[str]:
    from langchain_core.messages import ToolMessage

    return [x.text for x in model.requests[-1].messages if isinstance(x, ToolMessage)]


@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_call_cut_short_mid_flight_is_not_called_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """A run stopped while its tool ran (Ctrl-C here; a server's cancel or
    `multitask_strategy="interrupt"` there), then a new question: the call started (the ledger
    recorded it), so the model is told it may have taken effect, not that it never ran."""
    import asyncio

    from langchain_core.tools import tool

    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path))

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        raise KeyboardInterrupt  # the person pressed Ctrl-C while it ran

    model = ScriptedChatModel([calls(tool_call("pay", {"amount": 5})), "ok"])
    agent = build_graph(model=model, tools=[pay], protocol="native", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"cut-{form}"}}
    with pytest.raises(KeyboardInterrupt):
        agent.invoke({"messages": [("user", "pay 5")]}, config)
    question = {"messages": [("user", "did it go through?")]}
    if form == "sync":
        out = agent.invoke(question, config)
    else:
        out = asyncio.run(agent.ainvoke(question, config))
    assert out["answer"] == "ok"
    [result] = _second_request_results(model)
    assert "cut short" in result and "may have taken effect" in result, result
    assert "was not run" not in result


def test_a_call_stopped_before_it_started_is_still_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side: a run stopped before act started the call (`interrupt_before`), then a
    new question: the ledger has no start, so the call is answered as not run."""
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path))
    model = ScriptedChatModel([calls(tool_call("echo", {"text": "a"})), "ok"])
    agent = build_graph(
        model=model,
        tools=[echo],
        protocol="native",
        checkpointer=InMemorySaver(),
        interrupt_before=["act"],
    )
    config = {"configurable": {"thread_id": "before"}}
    agent.invoke({"messages": [("user", "go")]}, config)
    out = agent.invoke({"messages": [("user", "and now?")]}, config)
    assert out["answer"] == "ok"
    [result] = _second_request_results(model)
    assert "was not run" in result and "cut short" not in result, result


def test_a_claim_in_the_state_folders_file_waits_for_another_process_claiming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes that share the state folder (code use, no store) resume one pause: each
    claim reads the file, then writes it, so both could find the decision unspent and run the
    call (an outside audit saw it in 6 of 8 tries). A claim holds the file's lock for its read
    and write: while another process holds it, the claim waits, then finds what it wrote."""
    import subprocess
    import sys
    import threading

    from graph.persistence.ledger import LOCK_FILE, ledger_for

    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path))
    ledger = ledger_for(None, "t1")
    assert ledger is not None
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
            str(tmp_path / LOCK_FILE),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        claimed: list[bool] = []
        claiming = threading.Thread(target=lambda: claimed.append(ledger.claim("d1", "c1")))
        claiming.start()
        claiming.join(0.5)
        assert claimed == [], "the claim did not wait for the other process's lock"
    finally:
        holder.communicate("", timeout=30)
    claiming.join(30)
    assert claimed == [True]
    assert ledger.claim("d1", "c1") is False  # spent: a second process's claim asks again
