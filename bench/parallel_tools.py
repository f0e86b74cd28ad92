"""Goal 3: four tool calls of 0.2 s in one step run in parallel (ideal 0.2 s, target ≤ 0.25 s).

The instant scripted model asks for 4 calls of a `wait` tool in its first reply (native
protocol: the text protocol runs one action per reply), then answers. Wall time of the whole run,
ours vs the prebuilt agent, for an async tool (`asyncio.sleep`, no sync form) and a sync tool
(`time.sleep`, no async form), each under `ainvoke` and `invoke`. Rounds interleave the
variants; medians are reported.

    uv run python bench/parallel_tools.py [--quick] [--rounds 7] [--seconds 0.2]
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
from bench.doubles import BenchModel, loop_policy, sleep_tool
from bench.report import percent, ratio, table, write_json
from bench.timing import compare, interleaved, median, spread, summary

CALLS = 4
TARGET_S = 0.25


def variant(
    kind: str, tool_kind: str, mode: str, seconds: float, loop: asyncio.AbstractEventLoop
) -> Callable[[], Any]:
    policy = loop_policy(
        1, calls_per_step=CALLS, tool="wait", args=lambda _step, call: {"label": f"call {call}"}
    )
    model = BenchModel(policy)
    tools = [sleep_tool(seconds, tool_kind)]
    agent = (
        build_prebuilt(model, tools)
        if kind == "prebuilt"
        else build_ours(model, tools, iterations=1)
    )

    def run() -> Any:
        config = run_config(kind)
        if mode == "invoke":
            out = agent.invoke(inputs(), config)
        else:
            out = loop.run_until_complete(agent.ainvoke(inputs(), config))
        check_run(out, kind, CALLS)
        errors = [m for m in out["messages"] if getattr(m, "status", None) == "error"]
        if errors:
            raise RuntimeError(f"{kind}: tool errors: {errors[0].content}")
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", "-r", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.2, help="each tool call's duration")
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds

    loop = asyncio.new_event_loop()
    combos = [
        ("async tool", "async", "ainvoke"),
        ("sync tool", "sync", "invoke"),
        ("sync tool", "sync", "ainvoke"),
        ("async tool", "async", "invoke"),
    ]
    variants: dict[str, Callable[[], Any]] = {}
    unsupported: dict[str, str] = {}
    for label, tool_kind, mode in combos:
        for kind in ("prebuilt", "ours"):
            name = f"{kind} · {label} · {mode}"
            run = variant(kind, tool_kind, mode, args.seconds, loop)
            try:
                run()  # also the warm-up; a combination an agent cannot run is reported
            except Exception as exc:
                unsupported[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                continue
            variants[name] = run
    print(
        f"parallel tools: {CALLS} calls × {args.seconds} s in one step, native protocol, "
        f"{rounds} rounds (ideal {args.seconds:.2f} s, target ≤ {TARGET_S} s)",
        flush=True,
    )
    samples = interleaved(variants, rounds, warmup=0)
    loop.close()

    rows = []
    results: dict[str, Any] = {}
    for label, _tool_kind, mode in combos:
        base_name = f"prebuilt · {label} · {mode}"
        for kind in ("prebuilt", "ours"):
            name = f"{kind} · {label} · {mode}"
            if name in unsupported:
                rows.append([kind, label, mode, "n/a", "-", "-", "-", "-", unsupported[name]])
                results[name] = {"unsupported": unsupported[name]}
                continue
            walls = [s.wall for s in samples[name]]
            wall = median(walls)
            entry = {**summary(samples[name]), "meets_target": wall <= TARGET_S}
            rel = paired = None
            if base_name in samples and kind == "ours":
                base = [s.wall for s in samples[base_name]]
                rel, paired = compare(walls, base)
            entry.update(wall_ratio=rel, paired_wall_ratio=paired)
            results[name] = entry
            rows.append(
                [
                    kind,
                    label,
                    mode,
                    f"{wall:.3f}",
                    percent(spread(walls)),
                    ratio(rel),
                    ratio(paired),
                    "yes" if wall <= TARGET_S else "NO",
                    "",
                ]
            )
    print()
    print(
        table(
            [
                "agent",
                "tool",
                "run with",
                "wall s",
                "IQR",
                "vs prebuilt",
                "paired",
                f"≤ {TARGET_S} s",
                "note",
            ],
            rows,
        )
    )
    print(
        f"\nideal {args.seconds:.2f} s (the 4 calls overlap completely); sequential would be "
        f"{CALLS * args.seconds:.1f} s. Ratios: ours / prebuilt, < 1 means ours is faster."
    )
    path = write_json(
        "parallel_tools",
        {
            "calls": CALLS,
            "seconds_per_call": args.seconds,
            "rounds": rounds,
            "target_s": TARGET_S,
            "results": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
