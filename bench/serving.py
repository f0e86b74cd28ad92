"""Serving throughput and latency: `langgraph dev` against Aegra with one and two instances.

Each server serves this project's graph on this machine, its model a scripted OpenAI-compatible
server in this process that answers every call after `--model-delay` seconds (a run is two
calls: the calculator, then the answer, so 2 × delay is model time). Clients are the LangGraph
SDK; for Aegra with two instances they alternate between them, as a round-robin load balancer
would. At each concurrency (10 and 20), that many clients each run questions back to back,
each on a new thread, `--runs` runs in all, every answer checked. Two ways of waiting for a
run: `runs.wait` (Aegra's learns that a run ended by polling every 2 s) and `runs.stream`
(updates, read to the end). Reported: runs per second, p50 and p95 of one run's latency
(thread creation included), errors, and the machine's load before and after.

Aegra needs PostgreSQL, redis-server and the serving environment (deploy/aegra/.venv), as
tests/integration/test_aegra.py does; each Aegra deployment gets a fresh database and its own
Redis. Not a test: numbers depend on the machine and its load.

    uv run python bench/serving.py [--runs 40] [--concurrency 10 20] [--model-delay 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import table, write_json
from tests.support.aegra import aegra, missing
from tests.support.langgraph_dev import langgraph_dev
from tests.support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

QUESTION = re.compile(r"What is (\d+) \* (\d+)\?")
MODES = ("wait", "stream")


def model(delay: float) -> ScriptedOpenAIServer:
    """The calculator for a question, then `Done: <result>`; stateless, so any number of runs
    can ask at once."""

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(content=f"Done: {last['content']}", delay=delay)
        asked = QUESTION.search(str(last["content"]))
        if asked is None:
            return Reply(content="Cannot read the question.", delay=delay)
        expression = f"{asked.group(1)} * {asked.group(2)}"
        return Reply(tool_calls=[ToolCall("calculator", {"expression": expression})], delay=delay)

    return ScriptedOpenAIServer(default=reply)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def one_run(client: Any, mode: str, a: int, b: int) -> bool:
    """One question on a new thread; whether the answer was right."""
    thread = (await client.threads.create())["thread_id"]
    question = {"messages": [{"role": "user", "content": f"What is {a} * {b}?"}]}
    if mode == "wait":
        out = await client.runs.wait(thread, "agent", input=question)
        answer = out.get("answer") if isinstance(out, dict) else None
    else:
        answer = None
        async for part in client.runs.stream(
            thread, "agent", input=question, stream_mode="updates"
        ):
            if part.event == "updates" and isinstance(part.data, dict):
                for update in part.data.values():
                    if isinstance(update, dict) and update.get("answer"):
                        answer = update["answer"]
    return answer == f"Done: {a * b}"


async def load(urls: list[str], api_key: str | None, mode: str, concurrency: int, runs: int):
    """`runs` runs by `concurrency` clients; returns (seconds in all, latencies, errors)."""
    from langgraph_sdk import get_client

    clients = [get_client(url=url, api_key=api_key, timeout=300) for url in urls]
    pick = itertools.cycle(clients)
    todo = iter(range(runs))
    latencies: list[float] = []
    errors: list[str] = []
    rng = random.Random(7)

    async def worker() -> None:
        for _ in todo:
            client = next(pick)
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            started = time.perf_counter()
            try:
                right = await one_run(client, mode, a, b)
            except Exception as exc:  # a failed run is counted, not fatal
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            latencies.append(time.perf_counter() - started)
            if not right:
                errors.append(f"wrong answer to {a} * {b}")

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        for client in clients:
            await client.aclose()
    return time.perf_counter() - started, latencies, errors


@contextlib.contextmanager
def served(name: str, model_url: str) -> Iterator[tuple[list[str], str | None]]:
    """The URLs (and key) of `langgraph dev`, or of Aegra with one or two instances."""
    env = {
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "sk-bench",
        "REACT_AGENT_MODEL": "scripted",
        "REACT_AGENT_TOOLS": "calculator",
    }
    if name == "langgraph dev":
        with langgraph_dev(env) as dev:
            yield [dev.url], None
        return
    instances = int(name.split("×")[1])
    with aegra({**env, "LOG_LEVEL": "WARNING"}, instances=instances) as deployment:
        yield deployment.urls, deployment.api_key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per concurrency and mode")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--model-delay", type=float, default=0.1, help="seconds per model call")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = parser.parse_args()
    problem = missing()
    servers = ["langgraph dev"] + ([] if problem else ["Aegra ×1", "Aegra ×2"])
    if problem:
        print(f"Aegra left out: {problem}", file=sys.stderr)
    load_before = os.getloadavg()
    rows, records = [], []
    with model(args.model_delay) as scripted:
        for name in servers:
            with served(name, scripted.base_url) as (urls, key):
                asyncio.run(load(urls, key, "wait", 2, 4))  # warm up: imports, pools, caches
                for mode, concurrency in itertools.product(args.modes, args.concurrency):
                    seconds, latencies, errors = asyncio.run(
                        load(urls, key, mode, concurrency, args.runs)
                    )
                    done = len(latencies)
                    record = {
                        "server": name,
                        "mode": mode,
                        "concurrency": concurrency,
                        "runs": args.runs,
                        "seconds": seconds,
                        "runs_per_second": done / seconds if seconds else 0.0,
                        "p50": percentile(latencies, 0.5) if latencies else None,
                        "p95": percentile(latencies, 0.95) if latencies else None,
                        "errors": errors,
                    }
                    records.append(record)
                    rows.append(
                        [
                            name,
                            f"runs.{mode}",
                            concurrency,
                            f"{record['runs_per_second']:.2f}",
                            f"{record['p50']:.2f}" if latencies else "-",
                            f"{record['p95']:.2f}" if latencies else "-",
                            len(errors),
                        ]
                    )
                    print(rows[-1], f"load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    print(
        table(["server", "client call", "concurrency", "runs/s", "p50 s", "p95 s", "errors"], rows)
    )
    print(
        f"\n{args.runs} runs per row, model {args.model_delay:.2f} s a call (2 calls a run); "
        f"load average before {load_before[0]:.2f} / {load_before[1]:.2f}, "
        f"after {load_after[0]:.2f} / {load_after[1]:.2f} (1 / 5 min), {os.cpu_count()} cores."
    )
    path = write_json(
        "serving",
        {
            "records": records,
            "model_delay": args.model_delay,
            "load_before": load_before,
            "load_after": load_after,
        },
    )
    print(f"written {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")


if __name__ == "__main__":
    main()
