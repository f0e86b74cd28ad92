"""Checks of a run's set-up that `config` shares with the commands that run the agent, so that
`config` never shows as usable what every run refuses, and errors that name where a bad value
came from: the option typed, or the environment variable (or `.env` line) that gave it.

Light on purpose (no LangChain, no LangGraph, no saver): `config` imports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from graph.cli.options import EXIT, RunOptions, Stop

if TYPE_CHECKING:
    from graph.settings import AgentContext

STATE_DIR_VAR = "REACT_AGENT_STATE_DIR"
STORE_VAR = "REACT_AGENT_CHECKPOINTER"


def env_source(typed: object, variable: str) -> str | None:
    """The variable that gave a setting the user did not type (None when typed, or unset):
    an error about the value must send the user to where it is set."""
    if typed is not None or not os.environ.get(variable, "").strip():
        return None
    return variable


@contextmanager
def blamed(variable: str | None) -> Iterator[None]:
    """A bad value's error (a ValueError: ConfigError and the tools' own) prefixed with the
    environment variable that gave it, so the user knows which line to fix."""
    try:
        yield
    except ValueError as exc:
        if variable is None:
            raise
        from graph.settings import ConfigError

        raise ConfigError(f"{variable}: {exc}") from None


def check_step_cap(run: RunOptions, ctx: AgentContext) -> None:
    """max_steps within the cap: the settings allow up to 1000, the operator's cap less."""
    if ctx.max_steps <= ctx.max_steps_cap:
        return
    given = "--max-steps" if run.max_steps is not None else "REACT_AGENT_MAX_STEPS"
    raise Stop(
        f"{given} {ctx.max_steps} is above the cap of {ctx.max_steps_cap} steps "
        f"(REACT_AGENT_MAX_STEPS_CAP); ask for at most {ctx.max_steps_cap}, or raise the cap.",
        EXIT["usage"],
    )


def check_store(run: RunOptions, *, create: bool = True) -> str:
    """The store URL, its kind checked (and, with `create`, a SQLite file's folder created);
    an error names the variable that gave the URL or the state folder. Returns the URL.
    `config` passes `create=False`: showing the settings must not create folders, so a SQLite
    URL's file is checked by the run that uses it."""
    from graph.cli.locations import default_store, store_url
    from graph.persistence.urls import kind_of

    url = store_url(run.checkpointer)
    variable = env_source(run.checkpointer, STORE_VAR)
    if variable is None and run.checkpointer is None and url == default_store():
        variable = env_source(None, STATE_DIR_VAR)
    if not create and urlsplit(url).scheme == "sqlite":
        return url
    with blamed(variable):
        kind_of(url)
    return url


def check_light(run: RunOptions, ctx: AgentContext, *, create: bool = True) -> str:
    """What `config` and a run both refuse: a step count above the cap, an unknown store URL.
    Returns the store URL."""
    check_step_cap(run, ctx)
    return check_store(run, create=create)
