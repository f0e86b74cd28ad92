"""The channels' checks agree with the state's declared types: a status the `Status` literal
names is one the status channel takes, and every bookkeeping field `Run` declares has a check
(a field added to one and not the other would be refused, or taken unchecked)."""

from __future__ import annotations

import pytest

from graph import channels
from graph.state import STATUSES, Run, Status


def test_the_status_channel_takes_exactly_the_declared_statuses() -> None:
    assert set(Status.__args__) == STATUSES == channels.STATUSES  # type: ignore[attr-defined]
    for status in STATUSES:
        assert channels.replace_status(None, status) == status
    with pytest.raises(ValueError, match="'status' must be one of"):
        channels.replace_status(None, "finished")


def test_every_bookkeeping_field_has_a_check() -> None:
    declared = set(Run.__annotations__)
    assert declared == set(channels._RUN_TYPES)
    with pytest.raises(ValueError, match="has no field 'nope'"):
        channels.merge_run({}, {"nope": 1})


def test_a_bad_stored_field_is_dropped_and_the_good_ones_kept() -> None:
    merged = channels.merge_run_batches({}, [{"iteration": 2, "invalid_streak": "x"}])
    assert merged == {"iteration": 2}
