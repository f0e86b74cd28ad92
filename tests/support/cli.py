"""Running `react-agent` as a subprocess, as a user does, with an isolated environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CLI = str(Path(sys.executable).parent / "react-agent")
REPO = Path(__file__).resolve().parents[2]
POSTGRES_URL = os.environ.get(
    "REACT_AGENT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)


def cli_env(base_url: str, state_dir: Path, **extra: str) -> dict[str, str]:
    """The user's environment minus any agent or OpenAI settings, pointed at a test endpoint."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REACT_AGENT_"))}
    return {
        **clean,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-cli-test",
        "REACT_AGENT_STATE_DIR": str(state_dir),
        "PYTHONPATH": str(REPO),  # so `--tools tests.support.crash_tools:TOOLS` imports
        "REACT_AGENT_LOCAL": "off",  # never the embedded model unless a test asks for it
        "NO_COLOR": "1",
        "COLUMNS": "200",
        **extra,
    }


def run_cli(
    *args: str,
    env: dict[str, str],
    stdin: str | bytes | None = None,
    timeout: float = 60,
    command: list[str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """One run of the command (`command` replaces the `react-agent` script, e.g. with
    `[python, "-m", "graph.cli"]`). Output is text, decoded strictly as UTF-8 so a test sees
    any invalid byte the CLI writes; `stdin` may be bytes (to send invalid UTF-8)."""
    done = subprocess.run(
        [*(command or [CLI]), *args],
        env=env,
        input=stdin.encode() if isinstance(stdin, str) else (stdin or b""),
        capture_output=True,
        timeout=timeout,
        check=False,
        cwd=cwd or REPO,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def start_cli(*args: str, env: dict[str, str]) -> subprocess.Popen:
    """A CLI run in the background (for kill -9 and concurrency tests)."""
    return subprocess.Popen(
        [CLI, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


@contextmanager
def checkpointer_url(kind: str, folder: Path, prefix: str) -> Iterator[str]:
    """A checkpointer URL for a CLI test (`sqlite` in `folder`, or the test PostgreSQL); the
    PostgreSQL threads whose ids start with `prefix-` are deleted afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'store' / 'checkpoints.sqlite'}"
        return
    yield POSTGRES_URL
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
            conn.execute(f"DELETE FROM {table} WHERE thread_id LIKE '{prefix}-%'")


def recorded(path: Path) -> list[str]:
    """The lines a test tool wrote to its calls file (none before the first call)."""
    return path.read_text().splitlines() if path.exists() else []


def wait_for(predicate: Callable[[], Any], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
