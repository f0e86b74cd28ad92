"""A SQLite store the CLI cannot write: read-only, or a disk that fills up mid-command.

Read-only is made real: the file and its folder lose their write bits, and as root (who
ignores file modes) the CLI runs without the capabilities that override them. A full disk is a file
size limit (RLIMIT_FSIZE, with SIGXFSZ ignored, as a shell's `ulimit -f` sets it) on the CLI's
process: SQLite's writes past it fail with a disk error, as on a full file system.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import resource
import signal
import stat
import string
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli import CLI, REPO, cli_env, run_cli
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall
from tests.support.sentences import assert_one_sentence

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform != "linux", reason="prctl and RLIMIT_FSIZE as on Linux"),
]
TOOLS = "tests.support.crash_tools:TOOLS"
PR_CAPBSET_DROP = 24  # <linux/prctl.h>
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3  # <linux/capability.h>


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """`tmp_path`, its write bits given back afterwards so that pytest can remove it."""
    try:
        yield tmp_path
    finally:
        for root, dirs, files in os.walk(tmp_path):
            for name in dirs + files:
                Path(root, name).chmod(0o700)


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def make_read_only(store: Path) -> None:
    for path in (*store.parent.iterdir(), store.parent):
        path.chmod(0o555 if path.is_dir() else 0o444)


def without_override() -> None:
    """`preexec_fn`: as root, drop the capabilities that let root write any file (from the
    bounding set, so the command run next never has them); nothing to drop for anyone else."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def cli_read_only(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLI, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
        preexec_fn=without_override,
    )


def test_a_read_only_store_is_one_sentence_for_every_command(
    openai_server: ScriptedOpenAIServer, folder: Path
) -> None:
    store = folder / "store" / "checkpoints.sqlite"
    url = f"sqlite:///{store}"
    env = cli_env(openai_server.base_url, folder / "state")
    env["REACT_AGENT_CHECKPOINTER"] = url
    openai_server.add(Reply(content="Four."))
    first = run_cli("ask", "two and two?", "--thread", "t1", env=env)
    assert first.returncode == 0, first.stderr
    make_read_only(store)

    for args in (["threads"], ["history", "--thread", "t1"], ["ask", "again?", "--thread", "t1"]):
        done = cli_read_only(env, *args)
        assert done.returncode != 0, (args, done.stdout)
        message = last_line(done.stderr)
        assert_one_sentence(
            message, str(store), "read-only", banned=("damaged", "OSError", "Errno", "(set ")
        )
    assert not openai_server.remaining  # nothing was asked of the model


def incompressible(size: int) -> str:
    """Text the store cannot squeeze (checkpoints are zlib-compressed)."""
    rng = random.Random(size)
    return "".join(rng.choices(string.ascii_letters + string.digits, k=size))


def limited(size: int) -> Callable[[], None]:
    """`preexec_fn` for a child whose files cannot grow past `size` bytes."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def run_limited(env: dict[str, str], size: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLI, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
        preexec_fn=limited(size),
    )


def test_a_full_disk_mid_run_says_resume_and_resume_finishes(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """The disk fills while a tool's result is being saved: the sentence says `resume`, and
    `resume` (with room again) finishes the run from the last good checkpoint."""
    thread = f"full-{uuid.uuid4().hex[:8]}"
    store = tmp_path / "store" / "checkpoints.sqlite"
    env = cli_env(
        openai_server.base_url,
        tmp_path / "state",
        REACT_AGENT_CHECKPOINTER=f"sqlite:///{store}",
    )
    openai_server.add(
        Reply(tool_calls=[ToolCall("tick", {"label": "one"})]),
        Reply(content=incompressible(95_000)),  # this step does not fit in what is left
        Reply(content="Ticked."),
    )
    done = run_limited(env, 128 * 1024, "ask", "tick once", "--thread", thread, "--tools", TOOLS)
    assert done.returncode != 0, done.stdout
    message = last_line(done.stderr)
    assert f"thread {thread}" in message and "Traceback" not in done.stderr, done.stderr
    assert message.endswith(f"continue the run with: react-agent resume --thread {thread}")

    resumed = run_cli("resume", "--thread", thread, "--tools", TOOLS, "--json", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["answer"] == "Ticked."
    assert [s["tool"] for s in out["steps"] if s["kind"] == "action"] == ["tick"]


def test_a_full_disk_before_the_question_is_saved_says_to_ask_again(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """The disk is full before the new question is saved: resuming would find nothing (the
    thread's last run had ended), so the sentence says to ask again, and asking again works."""
    thread = f"full-{uuid.uuid4().hex[:8]}"
    store = tmp_path / "store" / "checkpoints.sqlite"
    env = cli_env(
        openai_server.base_url, tmp_path / "state", REACT_AGENT_CHECKPOINTER=f"sqlite:///{store}"
    )
    openai_server.add(Reply(content="First."))
    first = run_cli("ask", "first question", "--thread", thread, env=env)
    assert first.returncode == 0, first.stderr
    question = "second question " + incompressible(100_000)  # its checkpoint cannot be written
    done = run_limited(env, 64 * 1024, "ask", question, "--thread", thread)
    assert done.returncode != 0, done.stdout
    message = last_line(done.stderr)
    assert "continue the run" not in message, message
    assert f"a question with --thread {thread}" in message and "not saved" in message, message
    assert "Traceback" not in done.stderr
    assert not openai_server.remaining  # the model was never asked

    nothing = run_cli("resume", "--thread", thread, env=env)
    assert nothing.returncode != 0 and "nothing to resume" in nothing.stderr
    openai_server.add(Reply(content="Second."))
    again = run_cli("ask", "second question", "--thread", thread, "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == "Second."
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
