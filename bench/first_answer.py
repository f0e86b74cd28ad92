"""The embedded model's first answer as a new user meets it: the README's first command, whole.

    uv run --extra local python bench/first_answer.py [--runs 5] [--turns 3] [--without-uv]

Runs `uv run --extra local react-agent ask "What is 17 * 23?"` `--runs` times, each a fresh
process (with `--without-uv`: `python -m graph.cli ask` and `chat`, to tell uv's share from
the process's own), after one unrecorded run that builds what a second run finds made: the model
file assembled and the worked records' KV state saved next to it (`graph/models/local/
prefix_cache.py`). Each run sets REACT_AGENT_LOCAL_TIMES=1, so the model prints what each part
cost, and the bench lays those lines on a timeline from the moment it started the command:

- `python`: when the interpreter started (before it, `uv run` checks the environment);
- `model`: the model loaded (`import llama_cpp`, then llama.cpp loads the file; this runs in a
  thread while the command imports LangChain and opens the store);
- `prefix`: the worked records' state restored from disk, or evaluated (the first time);
- `call N`: each model call, with how many prompt tokens it evaluated (the rest were in the KV
  cache: proof the cache is used) and how many it wrote;
- `exit`: the process ended (the answer printed, the checkpoint written), with the CPU
  seconds the command used (`uv`, the interpreter and anything they started; user + system),
  a figure a busy machine moves far less than the wall time.

Then a `chat` session on a pipe, `--turns` questions: the seconds from writing a question to
reading its answer, per turn (the first one includes the start).

Prints a table per run, the median wall time (target <= 3.0 s) and the chat turns (target
<= 2.0 s after the first), with the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What is 17 * 23?"
COMMAND = ["uv", "run", "--extra", "local", "react-agent", "ask", QUESTION]
# --without-uv: the same process started directly, so uv's own environment check is left out
DIRECT = [sys.executable, "-m", "graph.cli", "ask", QUESTION]
CHAT = ["uv", "run", "--extra", "local", "react-agent", "chat"]
CHAT_DIRECT = [sys.executable, "-m", "graph.cli", "chat"]
TURNS = ("What is 17 * 23?", "What is 1,000 divided by 8?", "What is 12 squared?")
AT = re.compile(r"\(at (\d+\.\d+)\)")
BORN = re.compile(r"process started at (\d+\.\d+)")
CALL = re.compile(r"call: (\d+) of (\d+) prompt tokens evaluated, (\d+) written, ([\d.]+) s")


def cpu_of_children() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_once(
    env: dict[str, str], command: list[str] = COMMAND
) -> tuple[float, float, list[tuple[str, float, str]], str]:
    """One whole process: its wall seconds, its CPU seconds, its timeline (label, seconds since
    the start of the command, detail) and its answer."""
    cpu_before = cpu_of_children()
    start = time.time()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.time() - start
    cpu = cpu_of_children() - cpu_before
    timeline: list[tuple[str, float, str]] = []
    calls = 0
    for line in done.stderr.splitlines():
        stamp = AT.search(line)
        if not line.startswith("[local model]") or stamp is None:
            continue
        at = float(stamp.group(1)) - start
        text = line.removeprefix("[local model] ").split(" (at ")[0]
        if born := BORN.search(line):
            timeline.append(("python", float(born.group(1)) - start, "the interpreter started"))
        if text.startswith("model start"):
            timeline.append(("model", at, text.removeprefix("model start: ")))
        elif text.startswith("prefix"):
            timeline.append(("prefix", at, text))
        elif call := CALL.search(text):
            calls += 1
            evaluated, prompt, written, seconds = call.groups()
            detail = f"{evaluated} of {prompt} tokens evaluated, {written} written, {seconds} s"
            timeline.append((f"call {calls}", at, detail))
    timeline.append(("exit", wall, f"status {done.returncode}, {cpu:.2f} s of CPU"))
    answer = next(
        (line for line in done.stdout.splitlines() if line.startswith("Final Answer:")),
        f"(no answer: {done.stderr.strip().splitlines()[-1:]})",
    )
    return wall, cpu, sorted(timeline, key=lambda row: row[1]), answer


def chat_turns(env: dict[str, str], turns: int, command: list[str] = CHAT) -> list[float]:
    """Seconds from writing each question to a piped `chat` to reading its answer."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    seconds = []
    try:
        for question in (TURNS * turns)[:turns]:
            start = time.time()
            process.stdin.write(question + "\n")
            process.stdin.flush()
            for line in process.stdout:
                if line.startswith(("Final Answer:", "Stopped:", "error:")):
                    break
            seconds.append(time.time() - start)
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument(
        "--without-uv", action="store_true", help="start `python -m graph.cli ask` directly"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-first-") as state:
        env = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REACT_AGENT_"))
            },
            "REACT_AGENT_STATE_DIR": state,
            "REACT_AGENT_LOCAL_TIMES": "1",
        }
        command = DIRECT if args.without_uv else COMMAND
        _, _, first, _ = run_once(env, command)  # the model assembled, the records' state saved
        made = [detail for label, _, detail in first if label == "prefix"]
        print(f"unrecorded first run: {made[0] if made else 'no prefix line'}")
        walls, cpus = [], []
        for n in range(1, args.runs + 1):
            wall, cpu, timeline, answer = run_once(env, command)
            walls.append(wall)
            cpus.append(cpu)
            print(f"\nrun {n}: {wall:.2f} s wall, {cpu:.2f} s CPU, {answer}")
            for label, at, detail in timeline:
                print(f"  {at:6.2f} s  {label:<7} {detail}")
        load = os.getloadavg()
        print(
            f"\nwall per process over {len(walls)} runs: min {min(walls):.2f} s, median "
            f"{statistics.median(walls):.2f} s, max {max(walls):.2f} s (target: median <= 3.0 s); "
            f"CPU per process: median {statistics.median(cpus):.2f} s"
        )
        if args.turns:
            turns = chat_turns(env, args.turns, CHAT_DIRECT if args.without_uv else CHAT)
            shown = ", ".join(f"{s:.2f}" for s in turns)
            later = statistics.median(turns[1:]) if len(turns) > 1 else float("nan")
            print(
                f"chat turns (s): {shown}; after the first, median {later:.2f} s (target <= 2.0 s)"
            )
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores")


if __name__ == "__main__":
    sys.exit(main())
