"""Goal 1: orchestration CPU per iteration (think + act + observe), ours vs the prebuilt agent.

Scripted instant model, one tool call per iteration, each observation a distinct 2,000-character
text; every run is a fresh thread of N iterations plus the answer. Variants run interleaved in
one process (rotated order each round); we report medians over rounds of CPU time
(`time.process_time`, all threads) and wall time per iteration, and ours/prebuilt ratios with
the same saver. `--profile` instead runs cProfile on our agent and prints where the time goes.

    uv run python bench/overhead.py                 # default: N=20, 30 rounds
    uv run python bench/overhead.py --quick         # smoke run
    uv run python bench/overhead.py --mode async    # ainvoke (+ AsyncSqliteSaver)
    uv run python bench/overhead.py --profile [--profile-saver sqlite] [--protocol text]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import HumanMessage

from bench.common import (
    QUESTION,
    build_agent,
    check_run,
    inputs,
    run_config,
)
from bench.doubles import BenchModel, fetch_tool, loop_policy
from bench.report import RESULTS, percent, ratio, table, write_json
from bench.timing import compare, interleaved, median, spread, summary

# (label, agent kind, protocol)
AGENTS = [
    ("prebuilt", "prebuilt", "native"),
    ("create_agent", "create_agent", "native"),
    ("ours", "ours", "native"),
    ("create_agent", "create_agent", "text"),  # the same model wrapped in TextReAct
    ("ours", "ours", "text"),
]


class Runner:
    """Runs one variant's agent for one fresh thread, sync or on one persistent event loop."""

    def __init__(self, mode: str, tmp: Path) -> None:
        self.mode = mode
        self.tmp = tmp
        self.loop = asyncio.new_event_loop() if mode == "async" else None
        self._closers: list[Callable[[], Any]] = []

    def saver(self, kind: str, name: str) -> Any:
        if kind == "none":
            return None
        path = self.tmp / f"{name}.sqlite"
        if self.mode == "sync":
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(path, check_same_thread=False)
            self._closers.append(conn.close)
            return SqliteSaver(conn)
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async def open_saver() -> tuple[Any, Any]:  # the saver binds the running loop
            conn = await aiosqlite.connect(path)
            return conn, AsyncSqliteSaver(conn)

        conn, saver = self.loop.run_until_complete(open_saver())
        self._closers.append(lambda: self.loop.run_until_complete(conn.close()))
        return saver

    def variant(self, agent: Any, kind: str, iterations: int) -> Callable[[], Any]:
        def run() -> Any:
            config = run_config(kind)
            if self.mode == "sync":
                out = agent.invoke(inputs(), config)
            else:
                out = self.loop.run_until_complete(agent.ainvoke(inputs(), config))
            check_run(out, kind, iterations)
            return out

        return run

    def close(self) -> None:
        for close in reversed(self._closers):
            close()
        if self.loop is not None:
            self.loop.close()


def floor_variant(iterations: int) -> Callable[[], Any]:
    """The model and tool calls alone, no graph: what neither agent can avoid."""
    model = BenchModel(loop_policy(iterations)).bind_tools([fetch_tool()])
    tool = fetch_tool()

    def run() -> None:
        messages: list[Any] = [HumanMessage(QUESTION)]
        for _ in range(iterations + 1):
            reply = model.invoke(messages)
            messages.append(reply)
            for call in reply.tool_calls:
                messages.append(tool.invoke({**call, "type": "tool_call"}))

    return run


def benchmark(args: argparse.Namespace) -> None:
    n = args.iterations
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        runner = Runner(args.mode, Path(tmp))
        try:
            variants: dict[str, Callable[[], Any]] = {}
            meta: dict[str, dict[str, str]] = {}
            for saver in ("none", "sqlite"):
                for label, kind, protocol in AGENTS:
                    name = f"{label} {protocol} · {saver}"
                    agent = build_agent(
                        kind, protocol, n, runner.saver(saver, name.replace(" ", "_"))
                    )
                    variants[name] = runner.variant(agent, kind, n)
                    meta[name] = {"agent": label, "protocol": protocol, "saver": saver}
            if args.mode == "sync":
                variants["floor: model + tool calls alone"] = floor_variant(n)
                meta["floor: model + tool calls alone"] = {
                    "agent": "floor",
                    "protocol": "native",
                    "saver": "none",
                }
            print(
                f"overhead: N={n} iterations per run, {args.rounds} rounds, mode={args.mode}, "
                f"observation 2,000 chars",
                flush=True,
            )
            samples = interleaved(variants, args.rounds, warmup=2)
        finally:
            runner.close()

    rows = []
    results: dict[str, Any] = {}
    for name, runs in samples.items():
        info = meta[name]
        base = samples.get(f"prebuilt native · {info['saver']}")
        # create_agent with the same protocol (under text: the model wrapped in TextReAct)
        anchor = samples.get(f"create_agent {info['protocol']} · {info['saver']}")
        cpu = [s.cpu for s in runs]
        wall = [s.wall for s in runs]
        entry = {**info, **summary(runs)}
        entry["cpu_ms_per_iteration"] = median(cpu) / n * 1000
        entry["wall_ms_per_iteration"] = median(wall) / n * 1000
        cpu_ratio = wall_ratio = paired = None
        if base is not None and info["agent"] != "floor":
            cpu_ratio, paired = compare(cpu, [s.cpu for s in base])
            wall_ratio = compare(wall, [s.wall for s in base])[0]
        vs_create = None
        if anchor is not None and info["agent"] != "floor":
            vs_create = compare(cpu, [s.cpu for s in anchor])[0]
        entry.update(
            cpu_ratio=cpu_ratio,
            wall_ratio=wall_ratio,
            paired_cpu_ratio=paired,
            cpu_ratio_create_agent=vs_create,
        )
        results[name] = entry
        rows.append(
            [
                name,
                f"{entry['cpu_ms_per_iteration']:.2f}",
                f"{entry['wall_ms_per_iteration']:.2f}",
                percent(spread(cpu)),
                ratio(cpu_ratio),
                ratio(paired),
                ratio(wall_ratio),
                ratio(vs_create),
            ]
        )
    print()
    print(
        table(
            [
                "agent · saver",
                "CPU ms/iter",
                "wall ms/iter",
                "CPU IQR",
                "CPU vs prebuilt",
                "paired",
                "wall vs prebuilt",
                "CPU vs create_agent",
            ],
            rows,
        )
    )
    print(
        "\nratios: ours / prebuilt with the same saver (median of ours over median of the "
        "prebuilt; 'paired' = median of per-round ratios), and CPU against bare create_agent "
        "with the same saver and protocol (under text, create_agent runs the same model "
        "wrapped in TextReAct). < 1 means ours is cheaper. Target: ≤ 1.10× create_agent."
    )
    path = write_json(
        "overhead",
        {
            "iterations": n,
            "rounds": args.rounds,
            "mode": args.mode,
            "observation_chars": 2000,
            "results": results,
        },
    )
    print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")


def profile(args: argparse.Namespace) -> None:
    n = args.iterations
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        runner = Runner(args.mode, Path(tmp))
        try:
            agent = build_agent(
                "ours", args.protocol, n, runner.saver(args.profile_saver, "profile")
            )
            run = runner.variant(agent, "ours", n)
            run()  # warm-up: bindings, caches, the saver's tables
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.rounds):
                run()
            profiler.disable()
        finally:
            runner.close()
    RESULTS.mkdir(parents=True, exist_ok=True)
    dump = RESULTS / f"overhead-{args.protocol}-{args.profile_saver}-{args.mode}.prof"
    profiler.dump_stats(dump)
    total_iterations = n * args.rounds
    for key, count in (("cumulative", 25), ("tottime", 25)):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.strip_dirs().sort_stats(key).print_stats(count)
        print(
            f"\n== our agent, protocol={args.protocol}, saver={args.profile_saver}, "
            f"mode={args.mode}: {args.rounds} runs × {n} iterations "
            f"({total_iterations} iterations); top {count} by {key} =="
        )
        text = out.getvalue()
        print(text[text.find("   ncalls") :].rstrip())
    print(f"\nfull profile: {dump} (e.g. `python -m pstats {dump}` or snakeviz)")
    print(
        "(cProfile sees only this thread: in sync runs LangGraph writes checkpoints and runs "
        "parallel tasks on worker threads, so saver work shows up as lock waits; --mode async "
        "keeps nearly everything on the profiled loop thread. cProfile inflates Python-heavy "
        "code: compare entries, not absolute times.)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", "-n", type=int, default=20)
    parser.add_argument("--rounds", "-r", type=int, default=30)
    parser.add_argument("--mode", choices=["sync", "async"], default="sync")
    parser.add_argument("--quick", action="store_true", help="N=5, 3 rounds")
    parser.add_argument("--profile", action="store_true", help="cProfile our agent instead")
    parser.add_argument("--protocol", choices=["native", "text"], default="native")
    parser.add_argument("--profile-saver", choices=["none", "sqlite"], default="none")
    args = parser.parse_args()
    if args.quick:
        args.iterations, args.rounds = 5, 3
    if args.profile:
        profile(args)
    else:
        benchmark(args)


if __name__ == "__main__":
    main()
