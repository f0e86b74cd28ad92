"""How long `react-agent` takes to start, measured as a user meets it: whole processes.

    uv run python bench/cli_startup.py [--runs 15] [--repo PATH]

Each command runs `--runs` times as a fresh process (after one unrecorded warm-up run, so the
figures are for a warm disk cache, like every run after the first); the table gives min, median
and max wall-clock seconds. `--repo` points at another checkout (say, an older commit in a
`git worktree`) to compare: its `graph` package is run with this interpreter.

Commands that need no model or store are measured (`--help`, `ask --help`, `config`, `tools`);
with no endpoint configured and the embedded model off, nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (["--help"], ["ask", "--help"], ["config"], ["tools"])


def timed(repo: Path, args: list[str], env: dict[str, str]) -> float | None:
    """Seconds for one run; None when the command fails (an older checkout may lack it)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "graph.cli", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    elapsed = time.perf_counter() - start
    return elapsed if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--repo", type=Path, default=ROOT)
    options = parser.parse_args()
    repo = options.repo.resolve()
    with tempfile.TemporaryDirectory() as state:
        env = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REACT_AGENT_"))
            },
            "PYTHONPATH": str(repo),
            "REACT_AGENT_LOCAL": "off",
            "REACT_AGENT_STATE_DIR": state,
        }
        print(f"react-agent start-up, {options.runs} runs each, {repo}")
        print(f"{'command':<16} {'min s':>7} {'median s':>9} {'max s':>7}")
        for args in COMMANDS:
            if timed(repo, args, env) is None:  # the warm-up run
                print(f"{' '.join(args):<16} fails in this checkout")
                continue
            times = [t for t in (timed(repo, args, env) for _ in range(options.runs)) if t]
            print(
                f"{' '.join(args):<16} {min(times):7.3f} {statistics.median(times):9.3f} "
                f"{max(times):7.3f}"
            )


if __name__ == "__main__":
    main()
