"""Goal 1 again, counted in instructions: the same runs as `overhead.py`, under valgrind.

This machine's CPU times move by 20-45 % between rounds (a shared VM), so a ratio of 1.04
against 0.97 says little. `callgrind` counts the instructions every thread executed, the same
count for the same code and inputs whatever else the machine does: what changed in the code
shows, and nothing else. It does not see the kernel's side (system calls, switching threads)
or memory stalls, so read it beside `overhead.py`'s CPU times, not instead of them.

Each variant runs in a child process under `valgrind --tool=callgrind`, with counting switched
on (`callgrind_control`) only around the measured runs, after two warm-up runs.

    uv run python bench/instructions.py                  # N=20, 3 runs per variant, ~4 min
    uv run python bench/instructions.py --quick          # N=5, 1 run
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import build_agent, check_run, inputs, run_config
from bench.report import ratio, table, write_json

# (agent kind, protocol, saver)
VARIANTS = [
    (kind, protocol, saver)
    for saver in ("none", "sqlite")
    for kind, protocol in (("create_agent", "native"), ("ours", "native"), ("ours", "text"))
]


def child(kind: str, protocol: str, saver: str, iterations: int, runs: int) -> None:
    """Build one agent, warm it up, and count `runs` runs of `iterations` iterations."""
    checkpointer = None
    if saver == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = Path(tempfile.mkdtemp(prefix="bench-instructions-")) / "threads.sqlite"
        checkpointer = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    agent = build_agent(kind, protocol, iterations, checkpointer)
    for _ in range(2):
        check_run(agent.invoke(inputs(), run_config(kind)), kind, iterations)
    _counting("on")
    for _ in range(runs):
        agent.invoke(inputs(), run_config(kind))
    _counting("off")


def _counting(state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], capture_output=True)


def count(variant: tuple[str, str, str], iterations: int, runs: int) -> float:
    """Instructions per iteration of one variant (millions)."""
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, "--child", *variant, str(iterations), str(runs),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"Collected\s*:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{' '.join(variant)}: valgrind failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")) / (iterations * runs) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", "-n", type=int, default=20)
    parser.add_argument("--runs", "-r", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N=5, 1 run")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, protocol, saver, n, runs = args.child
        child(kind, protocol, saver, int(n), int(runs))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind (with callgrind_control) is not installed here.")
    if args.quick:
        args.iterations, args.runs = 5, 1
    print(f"instructions: N={args.iterations}, {args.runs} runs per variant, sync invoke")
    counts = {v: count(v, args.iterations, args.runs) for v in VARIANTS}
    rows = []
    for variant, millions in counts.items():
        kind, protocol, saver = variant
        anchor = counts[("create_agent", "native", saver)]
        rows.append([f"{kind} {protocol} · {saver}", f"{millions:.3f}", ratio(millions / anchor)])
    print()
    print(table(["agent · saver", "M instructions / iter", "vs create_agent"], rows))
    write_json(
        "instructions",
        {
            "iterations": args.iterations,
            "runs": args.runs,
            "millions_per_iteration": {" ".join(v): c for v, c in counts.items()},
        },
    )


if __name__ == "__main__":
    main()
