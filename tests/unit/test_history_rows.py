"""A run's last row in `react-agent history` says how it ended, for every way a run can end:
the status list lives in one place (`graph.state`), so a status added there (a middleware's
`stopped`) is not left out of the rows."""

from __future__ import annotations

import pytest

from graph.persistence.history import describe_changes
from graph.state import TERMINAL


@pytest.mark.parametrize("status", sorted(TERMINAL))
def test_the_finish_row_names_every_terminal_status(status: str) -> None:
    values = {"status": status, "answer": "Enough.", "error": "The model failed."}
    row = describe_changes("finish", [], values, {"status": "running"}, None)
    detail = "The model failed." if status == "error" else "Enough."
    assert row == f"{status}: {detail}"


def test_a_running_checkpoint_has_no_status_row() -> None:
    assert describe_changes("think", [], {"status": "running"}, {}, None) == ""


async def test_a_resumed_run_starts_its_branch_with_a_fork_row() -> None:
    """A resume after a failed model call forks from before that call: the copy it runs on is a
    row of its own that says so (it was an empty `think` row), and the rows after it describe
    only the new branch."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from graph import build_graph
    from graph.persistence.resume import aresume_config
    from graph.persistence.timeline import aiter_history
    from tests.support.scripted_model import ScriptedChatModel

    model = ScriptedChatModel([RuntimeError("HTTP 500 from upstream"), AIMessage("fine")])
    agent = build_graph(model=model, tools=[], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    failed = await agent.ainvoke({"messages": [("user", "hi")]}, config)
    assert failed["status"] == "error"
    assert (await agent.ainvoke(None, await aresume_config(agent, config)))["answer"] == "fine"
    rows = [(row.node, row.summary) async for row in aiter_history(agent, "t")]
    fork = rows.index(next(r for r in rows if r[0] == "fork"))
    assert rows[fork][1].startswith("fork: the run goes on from here")
    assert [summary for _node, summary in rows[fork + 1 :]] == [
        "Final Answer: fine",
        "answered: fine",
    ]
    assert all(summary for _node, summary in rows)
