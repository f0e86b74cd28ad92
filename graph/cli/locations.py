"""Where the command line keeps its checkpoints, worked out without importing a saver.

`graph.persistence.savers.default_url` gives the same answer, but importing that module loads
LangGraph (about half a second), which `react-agent config` must not pay just to print a path.
A test keeps the two in step.
"""

from __future__ import annotations

import os

from tools.support.files import state_dir


def store_url(given: str | None = None) -> str:
    """The checkpointer URL a command uses: `--checkpointer`, REACT_AGENT_CHECKPOINTER, or the
    SQLite file under the state folder."""
    if given:
        return given
    return os.environ.get("REACT_AGENT_CHECKPOINTER", "").strip() or default_store()


def default_store() -> str:
    """The SQLite file under the state folder: where checkpoints go when nothing says."""
    return f"sqlite:///{state_dir() / 'checkpoints.sqlite'}"
