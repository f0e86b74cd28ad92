"""Goal 4: 100 concurrent runs on one event loop (target: no slower than the prebuilt agent).

Each run is `ainvoke` on a fresh thread, no saver: 5 iterations of one instant async tool call
(2,000-character observation), then the answer; every model call is a 50 ms `asyncio.sleep`.
The ideal batch time is 6 model calls × 50 ms = 0.30 s; whatever exceeds it is orchestration
(CPU on one core, contended by 100 runs). Rounds interleave the agents; medians are reported.

    uv run python bench/concurrency.py [--quick] [--runs 100] [--rounds 9]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import build_ours, build_prebuilt, check_run, inputs, run_config
from bench.doubles import BenchModel, fetch_tool, loop_policy
from bench.report import percent, ratio, table, write_json
from bench.timing import compare, interleaved, median, spread, summary

AGENTS = [("prebuilt", "native"), ("ours", "native"), ("ours", "text")]


def variant(
    kind: str,
    protocol: str,
    runs: int,
    iterations: int,
    delay: float,
    loop: asyncio.AbstractEventLoop,
) -> Callable[[], Any]:
    model = BenchModel(loop_policy(iterations, protocol), delay=delay)
    tools = [fetch_tool()]
    agent = (
        build_prebuilt(model, tools)
        if kind == "prebuilt"
        else build_ours(model, tools, protocol=protocol, iterations=iterations)
    )

    async def batch() -> None:
        outs = await asyncio.gather(
            *(agent.ainvoke(inputs(), run_config(kind)) for _ in range(runs))
        )
        for out in outs:
            check_run(out, kind, iterations)

    return lambda: loop.run_until_complete(batch())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="concurrent runs per batch")
    parser.add_argument("--iterations", "-n", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--rounds", "-r", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="20 runs, 2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.rounds = 20, 2
    ideal = (args.iterations + 1) * args.delay

    loop = asyncio.new_event_loop()
    variants = {
        f"{kind} {protocol}": variant(kind, protocol, args.runs, args.iterations, args.delay, loop)
        for kind, protocol in AGENTS
    }
    singles = {
        f"{kind} {protocol} · 1 run": variant(kind, protocol, 1, args.iterations, args.delay, loop)
        for kind, protocol in AGENTS
    }
    print(
        f"concurrency: {args.runs} concurrent ainvoke runs × {args.iterations} iterations, "
        f"model {args.delay * 1000:.0f} ms per call, no saver, {args.rounds} rounds "
        f"(ideal {ideal:.2f} s)",
        flush=True,
    )
    samples = interleaved({**variants, **singles}, args.rounds, warmup=1)
    loop.close()

    base = samples["prebuilt native"]
    rows = []
    results: dict[str, Any] = {}
    for name, runs in samples.items():
        walls = [s.wall for s in runs]
        cpus = [s.cpu for s in runs]
        batch = "· 1 run" not in name
        count = args.runs if batch else 1
        entry = summary(runs)
        entry["cpu_ms_per_run_iteration"] = median(cpus) / (count * args.iterations) * 1000
        rel, paired = compare(walls, [s.wall for s in base]) if batch else (None, None)
        entry.update(wall_ratio=rel, paired_wall_ratio=paired, runs=count)
        results[name] = entry
        rows.append(
            [
                name,
                count,
                f"{median(walls):.3f}",
                percent(spread(walls)),
                f"{median(walls) / ideal:.1f}×",
                f"{entry['cpu_ms_per_run_iteration']:.2f}",
                ratio(rel),
                ratio(paired),
            ]
        )
    print()
    print(
        table(
            [
                "agent",
                "runs",
                "wall s",
                "IQR",
                "× ideal",
                "CPU ms per run-iteration",
                "vs prebuilt",
                "paired",
            ],
            rows,
        )
    )
    print(
        f"\nideal {ideal:.2f} s = {args.iterations + 1} model calls × {args.delay * 1000:.0f} ms. "
        "Ratios: ours / prebuilt batch wall time; < 1 means ours is faster. "
        "Target: ≤ 1.00× (no slower than the prebuilt)."
    )
    path = write_json(
        "concurrency",
        {
            "runs": args.runs,
            "iterations": args.iterations,
            "model_delay_s": args.delay,
            "ideal_s": ideal,
            "rounds": args.rounds,
            "results": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
