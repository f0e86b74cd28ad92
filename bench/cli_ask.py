"""How long a whole `react-agent ask` takes on the embedded model, as a user meets it.

    uv run --extra local python bench/cli_ask.py [--runs 3] [QUESTION ...]

Each question runs `--runs` times as a fresh process (`python -m graph.cli ask`, after one
unrecorded warm-up run of the first question, so the disk cache is warm, the model file
assembled and the worked records' state saved): interpreter start, imports, the model's load
and the records' restore, the prompt and every step. `bench/first_answer.py` times the
README's own command (`uv run` included) and shows each part. Prints min, median and max
wall-clock seconds per question and over all runs, and the answer of the last run. With no
question given, five of different kinds: the README's, a division, the clock, the notes, and
one that needs no tool. The accuracy figures are `bench/local_eval.py`'s.
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
QUESTIONS = (
    "What is 17 * 23?",
    "What is 1,000 divided by 8?",
    "What time is it in Lisbon right now?",
    "What do my notes say about a thread id?",
    "Say hello to me.",
)


def timed(question: str, env: dict[str, str]) -> tuple[float, str]:
    """Seconds for one whole process, and the last line of its answer."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "graph.cli", "ask", question],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    answer = next(
        (line for line in done.stdout.splitlines() if line.startswith("Final Answer:")),
        f"(exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]})",
    )
    return seconds, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", nargs="*", default=list(QUESTIONS))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ask-") as state:
        env = {**os.environ, "REACT_AGENT_STATE_DIR": state}  # the default SQLite store in it
        timed(args.questions[0], env)  # warm-up: disk cache, model file, the place index
        every: list[float] = []
        print("| question | min s | median s | max s | last answer |")
        print("|---|---:|---:|---:|---|")
        for question in args.questions:
            runs = [timed(question, env) for _ in range(args.runs)]
            seconds = [s for s, _ in runs]
            every += seconds
            print(
                f"| {question} | {min(seconds):.1f} | {statistics.median(seconds):.1f} | "
                f"{max(seconds):.1f} | {runs[-1][1][:60]} |"
            )
        print(
            f"| **all {len(every)} runs** | {min(every):.1f} | "
            f"{statistics.median(every):.1f} | {max(every):.1f} | |"
        )
        print(f"(load average {os.getloadavg()[0]:.1f} at the end; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
