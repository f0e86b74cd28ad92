"""The options the run commands share are declared once (`graph.cli.options`) and reach every
command that runs the agent, with the same flags and help, gathered into one `RunOptions`."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main

from graph.cli.app import app
from graph.cli.options import FLAGS, RunOptions, with_run_options

RUN_COMMANDS = ("ask", "chat", "resume", "replay")


def command(name: str) -> Any:
    """The command as Typer builds it for the command line."""
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", RUN_COMMANDS)
def test_every_run_command_takes_every_run_option(name: str) -> None:
    flags = {opt for param in command(name).params for opt in getattr(param, "opts", [])}
    assert set(FLAGS.values()) <= flags


def test_the_shared_options_have_one_help_text() -> None:
    """One text per option, except that --schema's mentions --json only where the command has
    it (`chat` has none: its help must not send the reader to a flag it lacks)."""
    texts = {
        (p.name, p.help)
        for name in RUN_COMMANDS
        for p in command(name).params
        if p.name in FLAGS and p.name != "schema"
    }
    assert len(texts) == len(FLAGS) - 1
    for name in RUN_COMMANDS:
        params = {p.name: p for p in command(name).params}
        schema_help = params["schema"].help or ""
        assert ("--json" in schema_help) == ("as_json" in params), name


def test_the_options_given_are_gathered_into_run_options() -> None:
    seen: list[tuple[str, RunOptions]] = []

    @with_run_options
    def probe(text: str, *, run: RunOptions) -> None:
        seen.append((text, run))

    probe(text="hi", model="m", protocol="text", max_steps=None, checkpointer="memory")
    [(text, run)] = seen
    assert text == "hi" and run.checkpointer == "memory"
    assert run.settings() == {"model": "m", "protocol": "text"}  # what was given, no store
    assert run.flags() == {"model": "--model", "protocol": "--protocol"}
