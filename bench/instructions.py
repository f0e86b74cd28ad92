"""Goal 1 again, counted in instructions: the same runs as `overhead.py`, under valgrind.

This machine's CPU times move by 20-45 % between rounds (a shared VM), so a ratio of 1.04
against 0.97 says little. `callgrind` counts the instructions every thread executed, the same
count for the same code and inputs whatever else the machine does: what changed in the code
shows, and nothing else. It does not see the kernel's side (system calls, switching threads)
or memory stalls, so read it beside `overhead.py`'s CPU times, not instead of them.

Each variant runs in child processes under `valgrind --tool=callgrind`, with counting switched
on (`callgrind_control`) only around the measured runs, after two warm-up runs. One child per
hash seed (`PYTHONHASHSEED` = 0, 1, ...), and the mean is reported: string hashing decides the
order of sets and dicts, which decides some of the work (one variant moved by 0.26 M
instructions per iteration from one random seed to another), so a single seed can be lucky
for one agent and not for the other; the spread over the seeds is reported beside the mean.

    uv run python bench/instructions.py                  # N=20, 4 seeds x 2 runs, ~7 min
    uv run python bench/instructions.py --quick          # N=5, 1 seed, 1 run
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import statistics
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
    for kind in ("create_agent", "ours")
    for protocol in ("native", "text")
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


def count(variant: tuple[str, str, str], iterations: int, runs: int, seeds: int) -> list[float]:
    """Instructions per iteration of one variant (millions), one count per hash seed."""
    return [count_one(variant, iterations, runs, seed) for seed in range(seeds)]


def count_one(variant: tuple[str, str, str], iterations: int, runs: int, seed: int) -> float:
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, "--child", *variant, str(iterations), str(runs),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    found = re.search(r"Collected\s*:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{' '.join(variant)}: valgrind failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")) / (iterations * runs) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", "-n", type=int, default=20)
    parser.add_argument("--runs", "-r", type=int, default=2, help="measured runs per child")
    parser.add_argument("--seeds", "-s", type=int, default=4, help="children (hash seeds)")
    parser.add_argument("--quick", action="store_true", help="N=5, 1 seed, 1 run")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, protocol, saver, n, runs = args.child
        child(kind, protocol, saver, int(n), int(runs))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind (with callgrind_control) is not installed here.")
    if args.quick:
        args.iterations, args.runs, args.seeds = 5, 1, 1
    print(
        f"instructions: N={args.iterations}, {args.seeds} hash seeds x {args.runs} runs per "
        "variant, sync invoke"
    )
    counts = {v: count(v, args.iterations, args.runs, args.seeds) for v in VARIANTS}
    means = {v: statistics.fmean(c) for v, c in counts.items()}
    rows = []
    for variant, millions in means.items():
        kind, protocol, saver = variant
        spread = max(counts[variant]) - min(counts[variant])
        anchor = means[("create_agent", protocol, saver)]  # the same protocol and saver
        rows.append(
            [
                f"{kind} {protocol} · {saver}",
                f"{millions:.3f}",
                f"{spread:.3f}",
                ratio(millions / anchor),
            ]
        )
    print()
    print(
        table(["agent · saver", "M instructions / iter", "spread (seeds)", "vs create_agent"], rows)
    )
    print(
        "\nvs create_agent: against create_agent with the same protocol and saver (under text, "
        "create_agent runs the same model wrapped in TextReAct)."
    )
    write_json(
        "instructions",
        {
            "iterations": args.iterations,
            "runs": args.runs,
            "seeds": args.seeds,
            "millions_per_iteration": {" ".join(v): means[v] for v in counts},
            "per_seed": {" ".join(v): c for v, c in counts.items()},
        },
    )


if __name__ == "__main__":
    main()
