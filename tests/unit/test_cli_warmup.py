"""A question on a new thread starts the embedded model in the background while the command
gets ready, when nothing the command checks next can fail; any other run does not."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from graph.cli.options import RunOptions
from graph.cli.warmup import start_model


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the background start did, in order, with a fake server and model."""
    import graph.models.factory as factory
    import graph.models.local.shared as server

    calls: list[Any] = []
    model = SimpleNamespace(warm=lambda: calls.append("records"))
    monkeypatch.delenv("REACT_AGENT_CHECKPOINTER", raising=False)
    monkeypatch.setattr(factory, "wants_local", lambda ctx: True)
    monkeypatch.setattr(
        server, "local_server", lambda: calls.append("server") or SimpleNamespace(base_url="u")
    )
    monkeypatch.setattr(factory, "resolve_model", lambda ctx: calls.append("model") or model)
    return calls


def test_the_server_starts_then_the_records_are_evaluated(started: list[Any]) -> None:
    thread = start_model(RunOptions(tools="calculator,current_time"))
    assert thread is not None and not thread.daemon  # an early exit waits for it, then stops it
    thread.join(10)
    assert started == ["server", "model", "records"]


@pytest.mark.parametrize(
    "run",
    [
        RunOptions(checkpointer="postgresql://nobody@127.0.0.1:1/none"),  # a store to check
        RunOptions(tools="calculator,my_pkg.tools:lookup"),  # a tool to import
        RunOptions(mcp_config="servers.json"),  # servers to start
        RunOptions(max_steps=-5),  # refused settings
    ],
)
def test_a_run_with_something_left_to_check_starts_nothing(
    started: list[Any], run: RunOptions
) -> None:
    assert start_model(run) is None
    assert started == []


def test_another_endpoint_starts_nothing(
    started: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import graph.models.factory as factory

    monkeypatch.setattr(factory, "wants_local", lambda ctx: False)
    assert start_model(RunOptions(base_url="http://127.0.0.1:9/v1")) is None
    assert started == []


def test_a_state_folder_it_cannot_create_starts_nothing(
    started: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Opening the store there fails, and the command says so before any model loads. (A file
    where a folder should be: no user, root included, can create the folder.)"""
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("REACT_AGENT_STATE_DIR", str(tmp_path / "a-file" / "state"))
    assert start_model(RunOptions()) is None
    assert started == []
