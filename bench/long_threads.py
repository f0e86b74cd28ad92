"""Long threads (issue 27): does a turn's cost stay flat as a thread grows, and does `history`
stay bounded in time and memory?

One thread on the project's SQLite saver grows turn by turn, each turn run the way
`react-agent ask --thread T` runs it: the thread's lock, the state read, the run streamed with
durability "sync", the state read again. The model is `bench.doubles.BenchModel`: each turn
asks for one `fetch` (a distinct 2,000-character observation; `--repeat N`: N times as long),
then answers. At each size (10, 200, 500 turns by default) the script reports:

- the wall time of the last turns (median of `--window` turns ending at that size);
- `history` of the whole thread, run in a child process so its peak resident memory is its
  own: wall time, the growth of the child's peak RSS over its baseline (imports, an open
  store, a graph), and, for the streamed reading, the peak of Python allocations during a
  second pass (tracemalloc);
- the database's size.

    uv run python bench/long_threads.py                     # 10, 200, 500 turns
    uv run python bench/long_threads.py --quick             # 5 and 20 turns
    uv run python bench/long_threads.py --profile 500       # cProfile of turn 500 (top 30)
    uv run python bench/long_threads.py --history legacy    # history as full state snapshots
    uv run python bench/long_threads.py --repeat 10         # 20,000-character observations

`--history stream` (the default) reads rows with
`graph.persistence.timeline.aiter_history`; `legacy` rebuilds every full state with
`aget_state_history` and `tests.support.history_oracle.history_rows`, as `react-agent history`
did before issue 27.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import random
import resource
import string
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import build_ours
from bench.doubles import OBSERVATION_CHARS, USAGE, BenchModel, fetch_tool
from bench.report import human_bytes, table, write_json
from bench.timing import median

ROOT = Path(__file__).resolve().parents[1]
THREAD = "bench-long-thread"
SKIPPED = {"rows": 0, "seconds": float("nan"), "peak_kib": 0, "traced_bytes": 0}


def turn_policy(messages: list[Any]) -> Any:
    """One `fetch` per question, then an answer: the reply depends only on the last message."""
    from langchain_core.messages import AIMessage

    last = messages[-1]
    if last.type == "tool":
        return AIMessage(content="done", usage_metadata=USAGE)
    turn = sum(1 for m in messages if m.type == "human")
    call = {"name": "fetch", "args": {"index": turn}, "id": f"call_{turn}"}
    return AIMessage(content="", tool_calls=[call], usage_metadata=USAGE)


def observation_tool(repeat: int) -> Any:
    """`fetch` with observations `repeat` times as long, as distinct and as incompressible as
    `bench.doubles`' (a turn's cost on a long thread depends on the bytes its loads decode)."""
    if repeat == 1:
        return fetch_tool()
    from langchain_core.tools import StructuredTool

    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + " .,"
    texts = ["".join(rng.choices(alphabet, k=OBSERVATION_CHARS * repeat)) for _ in range(64)]

    def fetch(index: int) -> str:
        return texts[index % len(texts)]

    async def afetch(index: int) -> str:
        return fetch(index)

    return StructuredTool.from_function(
        func=fetch, coroutine=afetch, name="fetch", description="Fetch one item by its index."
    )


async def one_turn(agent: Any, url: str, turn: int) -> float:
    """A turn as the CLI runs it; its wall time in seconds."""
    from graph.persistence.locks import thread_lock

    config = {"configurable": {"thread_id": THREAD}}
    started = time.perf_counter()
    async with thread_lock(url, THREAD):
        await agent.aget_state(config)
        payload = {"messages": [("user", f"Question {turn}: fetch item {turn}, then say done.")]}
        async for _ in agent.astream(payload, config, stream_mode=["custom"], durability="sync"):
            pass
        snapshot = await agent.aget_state(config)
    elapsed = time.perf_counter() - started
    if (snapshot.values or {}).get("status") != "answered":
        raise RuntimeError(f"turn {turn} ended with {(snapshot.values or {}).get('status')!r}")
    return elapsed


def history_in_child(url: str, mode: str) -> dict[str, Any]:
    """`history` of the thread in a fresh process: rows, seconds, peak RSS above its baseline."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from bench.long_threads import child_history; child_history(sys.argv[2], sys.argv[3])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), url, mode],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"history child failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_history(url: str, mode: str) -> None:
    """The child's side: open the store, note the baseline RSS, read every row, report."""
    from graph.persistence.savers import open_async_saver

    async def go() -> dict[str, Any]:
        async with open_async_saver(url) as saver:
            agent = build_ours(BenchModel(turn_policy), [fetch_tool()], checkpointer=saver)
            config = {"configurable": {"thread_id": THREAD}}
            await agent.aget_state({"configurable": {"thread_id": "warm-up"}})
            base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            started = time.perf_counter()
            rows, chars = 0, 0
            if mode == "legacy":
                from tests.support.history_oracle import history_rows

                snapshots = [s async for s in agent.aget_state_history(config)]
                for row in history_rows(snapshots):
                    rows += 1
                    chars += len(json.dumps(row.as_dict(), ensure_ascii=False))
            else:
                from graph.persistence.timeline import aiter_history

                async for row in aiter_history(agent, THREAD):
                    rows += 1
                    chars += len(json.dumps(row.as_dict(), ensure_ascii=False))
            seconds = time.perf_counter() - started
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            traced = 0
            if mode == "stream":  # a second pass: the peak of Python allocations while reading
                from graph.persistence.timeline import aiter_history

                tracemalloc.start()
                async for _row in aiter_history(agent, THREAD):
                    pass
                traced = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            return {
                "rows": rows,
                "seconds": seconds,
                "peak_kib": peak - base,
                "base_kib": base,
                "traced_bytes": traced,
                "chars": chars,
            }

    print(json.dumps(asyncio.run(go())))


async def grow(args: argparse.Namespace, url: str, db: Path) -> list[dict[str, Any]]:
    from graph.persistence.savers import open_async_saver

    results: list[dict[str, Any]] = []
    turn = 0
    async with open_async_saver(url) as saver:
        tools = [observation_tool(args.repeat)]
        agent = build_ours(BenchModel(turn_policy), tools, checkpointer=saver)
        for size in args.sizes:
            times: list[float] = []
            while turn < size:
                turn += 1
                if turn == args.profile:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    times.append(await one_turn(agent, url, turn))
                    profiler.disable()
                    out = io.StringIO()
                    stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
                    stats.print_stats(30)
                    stats.sort_stats("tottime").print_stats(20)
                    print(out.getvalue(), file=sys.stderr)
                else:
                    times.append(await one_turn(agent, url, turn))
            window = times[-args.window :]
            skip = args.history_upto and size > args.history_upto
            history = SKIPPED if skip else history_in_child(url, args.history)
            results.append(
                {
                    "turns": size,
                    "turn_s": median(window),
                    "turn_max_s": max(window),
                    "history_rows": history["rows"],
                    "history_s": history["seconds"],
                    "history_peak_kib": history["peak_kib"],
                    "history_traced_bytes": history.get("traced_bytes", 0),
                    "db_bytes": db.stat().st_size + _wal(db),
                }
            )
            print(f"{size} turns: {results[-1]}", file=sys.stderr, flush=True)
    return results


def _wal(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,200,500", help="thread sizes in turns")
    parser.add_argument("--quick", action="store_true", help="5 and 20 turns")
    parser.add_argument("--window", type=int, default=5, help="turns in each median")
    parser.add_argument("--profile", type=int, default=0, help="cProfile this turn")
    parser.add_argument("--history", choices=("stream", "legacy"), default="stream")
    parser.add_argument(
        "--history-upto", type=int, default=0, help="skip history above this many turns"
    )
    parser.add_argument("--repeat", type=int, default=1, help="observation size x 2,000 chars")
    args = parser.parse_args()
    args.sizes = [5, 20] if args.quick else sorted(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-long-") as folder:
        db = Path(folder) / "checkpoints.sqlite"
        url = f"sqlite:///{db}"
        results = asyncio.run(grow(args, url, db))
    print(f"\nhistory read as: {args.history}\n")
    print(
        table(
            [
                "turns",
                "turn s (median)",
                "turn s (max)",
                "history rows",
                "history s",
                "history RSS growth",
                "history traced peak",
                "database",
            ],
            [
                (
                    r["turns"],
                    f"{r['turn_s']:.3f}",
                    f"{r['turn_max_s']:.3f}",
                    r["history_rows"],
                    f"{r['history_s']:.2f}",
                    human_bytes(r["history_peak_kib"] * 1024),
                    human_bytes(r["history_traced_bytes"]) if r["history_traced_bytes"] else "-",
                    human_bytes(r["db_bytes"]),
                )
                for r in results
            ],
        )
    )
    meta = {"history_mode": args.history, "observation_chars": OBSERVATION_CHARS * args.repeat}
    path = write_json("long_threads", {**meta, "results": results})
    print(f"\n(raw samples: {path.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
