"""What Ctrl-C prints, per store and per `--json`: a memory store keeps nothing once the command
exits, so it offers no resume command; a saved run does, on stderr and, under `--json`, in an
object on stdout that a script can read."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROGRAM = """
import sys
from graph.cli.interrupts import run_turns
from graph.cli.session import Unsaved

async def interrupted():
    raise KeyboardInterrupt

run_turns(interrupted(), "t1", Unsaved(question=sys.argv[2] == "unsaved"), sys.argv[1], True)
"""


def ctrl_c(url: str, unsaved: bool = False) -> tuple[int, dict, str]:
    args = [sys.executable, "-c", PROGRAM, url, "unsaved" if unsaved else "saved"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout), done.stderr.strip()


@pytest.mark.parametrize(
    ("url", "unsaved", "saved"),
    [("sqlite:///x.sqlite", False, True), ("memory", False, False), ("sqlite:///x", True, False)],
)
def test_ctrl_c_says_whether_the_run_can_be_resumed(url: str, unsaved: bool, saved: bool) -> None:
    status, summary, said = ctrl_c(url, unsaved)
    assert status == 130
    assert summary["status"] == "interrupted" and summary["thread_id"] == "t1"
    assert summary["saved"] is saved and summary["error"] == said
    assert (summary["resume"] is not None) is saved
    assert ("resume --thread t1" in said) is saved


TERMINATED = """
import asyncio, os, signal, sys
from graph.cli.interrupts import run_turns
from graph.cli.session import Unsaved

async def terminated():
    os.kill(os.getpid(), signal.SIGTERM)  # a supervisor, `timeout` or `docker stop`
    await asyncio.sleep(30)

run_turns(terminated(), "t1", Unsaved(), "sqlite:///x.sqlite", True, " --tools calculator")
"""


def test_sigterm_ends_a_run_as_ctrl_c_does_with_its_own_status() -> None:
    """A process ended by SIGTERM used to die with nothing on stdout: no `--json` object,
    no resume command."""
    done = subprocess.run(
        [sys.executable, "-c", TERMINATED], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 143, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "interrupted" and summary["saved"] is True
    assert summary["resume"].endswith("resume --thread t1 --tools calculator")
    assert summary["error"] == done.stderr.strip()
