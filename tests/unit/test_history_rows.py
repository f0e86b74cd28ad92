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
