"""The command line starts without LangChain or LangGraph, and every way of starting it works.

No timings here (the machine's load would make them flaky; `bench/cli_startup.py` measures):
the check is structural, on `sys.modules` of a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO, cli_env, run_cli

HEAVY = ("langchain_core", "langchain_openai", "langgraph", "openai", "httpx", "aiosqlite", "rich")


def imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("module", ["graph.cli", "graph.cli.app"])
def test_importing_the_command_line_loads_no_heavy_library(module: str) -> None:
    loaded = imported_after(f"import {module}")
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == [], f"import {module} loaded {heavy[:10]}"
    assert "graph.persistence.savers" not in loaded and "graph.settings" not in loaded


def test_help_loads_no_heavy_library() -> None:
    code = (
        "import sys\nsys.argv = ['react-agent', '--help']\nfrom graph.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = imported_after(code)
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []


def test_config_loads_no_langchain_or_langgraph() -> None:
    code = (
        "import sys\nsys.argv = ['react-agent', 'config']\nfrom graph.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    loaded = imported_after(code)
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []


@pytest.mark.parametrize(
    "command",
    [
        None,  # the console script
        [sys.executable, "-m", "graph.cli"],
        [sys.executable, str(REPO / "graph" / "cli" / "app.py")],
    ],
    ids=["react-agent", "python -m graph.cli", "python graph/cli/app.py"],
)
def test_every_way_of_starting_shows_help(command: list[str] | None, tmp_path: Path) -> None:
    env = cli_env("http://127.0.0.1:9/v1", tmp_path)
    done = run_cli("--help", env=env, command=command)
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    for name in (
        "ask",
        "chat",
        "resume",
        "history",
        "show",
        "replay",
        "threads",
        "config",
        "tools",
    ):
        assert f"  {name} " in done.stdout


def test_store_location_matches_the_savers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from graph.cli.locations import store_url
    from graph.persistence.savers import default_url

    cases = [
        {"REACT_AGENT_STATE_DIR": str(tmp_path / "s")},
        {"XDG_STATE_HOME": str(tmp_path / "x")},
        {"REACT_AGENT_CHECKPOINTER": "memory"},
        {"REACT_AGENT_CHECKPOINTER": "  ", "REACT_AGENT_STATE_DIR": "~/agent"},
        {},
    ]
    for case in cases:
        for name in ("REACT_AGENT_STATE_DIR", "XDG_STATE_HOME", "REACT_AGENT_CHECKPOINTER"):
            monkeypatch.delenv(name, raising=False)
        for name, value in case.items():
            monkeypatch.setenv(name, value)
        assert store_url() == default_url(), case
    assert store_url("sqlite:///given.sqlite") == "sqlite:///given.sqlite"


def test_the_objects_left_at_exit_are_not_collected_again() -> None:
    """The interpreter's last full collection walked everything LangChain and LangGraph built
    (0.2-0.35 s of a three-second `ask`): the command freezes what is left once it is done,
    so the exit does not pay for it (`bench/first_answer.py`)."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['react-agent', '--help']\nfrom graph.cli import main\nmain()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "frozen True"
