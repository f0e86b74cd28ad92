"""A tool call that ran again after a crash says so wherever the command line shows it: the
step line, the closing note, `--json`'s steps and `history` (issue 40, finding 6).

The graph marks such a result `response_metadata["react_rerun"] = N` (the earlier starts that
never finished) and its trace entry `rerun: True`; the threads here are built by hand with
that metadata, so these tests need no crash.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph.cli.options import Stop
from graph.cli.render import Lines, StepPrinter
from graph.cli.session import report
from tests.support.cli import cli_env, run_cli

ONCE = " (ran again: an earlier attempt was interrupted)"


def step_lines(*events: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    printer = StepPrinter(Lines(out))
    for event in events:
        printer.event(event)
    return out.getvalue().splitlines()


def test_the_step_line_says_the_call_ran_again() -> None:
    base = {"event": "observation", "tool": "publish", "text": "published", "is_error": False}
    assert step_lines(
        base, {**base, "rerun": 1}, {**base, "rerun": 3}, {**base, "rerun": True}
    ) == [
        "Observation: published",
        f"Observation: published{ONCE}",
        "Observation: published (ran again: 3 earlier attempts were interrupted)",
        f"Observation: published{ONCE}",
    ]


def conversation(rerun: int | None) -> list[Any]:
    metadata = {"react_rerun": rerun} if rerun else {}
    call = {"name": "publish", "args": {"text": "hi"}, "id": "c1"}
    return [
        HumanMessage("publish hi", id="q1"),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage(
            "published", tool_call_id="c1", name="publish", id="t1", response_metadata=metadata
        ),
        AIMessage("Published.", id="a2"),
    ]


def reported(values: dict[str, Any], *, as_json: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(Stop):
        report(values, "t1", False, as_json, "sqlite:///x.sqlite")
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("rerun", [1, None])
def test_json_and_the_closing_note_carry_the_mark(rerun: int | None) -> None:
    values = {
        "messages": conversation(rerun),
        "status": "answered",
        "answer": "Published.",
        "run": {"question_id": "q1"},
    }
    printed, _ = reported(values, as_json=True)
    [action] = [s for s in json.loads(printed)["steps"] if s["kind"] == "action"]
    assert action.get("rerun", False) is bool(rerun)
    _, said = reported(values, as_json=False)
    note = (
        "Note: the call to publish ran again (an earlier attempt was interrupted by a crash); "
        "any effect of it may have happened twice."
    )
    assert (note in said.splitlines()) is bool(rerun)


@pytest.mark.integration
def test_history_marks_the_row_of_a_call_that_ran_again(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from graph import build_graph

    store = tmp_path / "hand.sqlite"
    with SqliteSaver.from_conn_string(str(store)) as saver:
        agent = build_graph(
            model="m", base_url="http://127.0.0.1:9/v1", tools=[], checkpointer=saver
        )
        config = {"configurable": {"thread_id": "hand"}}
        messages = conversation(2)
        agent.update_state(config, {"messages": messages[:1]}, as_node="finish")
        agent.update_state(config, {"messages": messages[1:]}, as_node="finish")
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "state")
    listing = run_cli("history", "-t", "hand", "--checkpointer", f"sqlite:///{store}", env=env)
    assert listing.returncode == 0, listing.stderr
    row = listing.stdout.splitlines()[-1]
    assert "publish → published;" in row
    assert row.endswith("; publish (ran again: 2 earlier attempts were interrupted)")
