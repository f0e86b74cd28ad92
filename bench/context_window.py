"""Issue 41's context target: a 30-step run with 2 KB observations in an 8,192-token window
sends no request over the window, and the model never repeats a call because it could not see
it.

The model is scripted and honest about what it sees: turn `t` asks for items 0..N-1 one call
at a time, and at every request the model reads the request's text (every message, tool calls
included) for the calls `fetch({"turn": t, "index": i})` it already made; it asks for the
smallest index it cannot see, and answers once it sees all N. So a call left out of a request
comes back as a repeat, which the tool counts. Each item is a distinct 2,000-character text.

Tokens are counted the way the policy counts them (`graph.policies.context_fit.
estimated_tokens`: UTF-8 bytes / 3 plus 6 per message) over what the model really receives:
the rendered messages (system prompt included) and the tool schemas bound to it. The window
is the whole 8,192; the policy itself aims at `context_share` (0.75) of it less the reply's
room.

    uv run python bench/context_window.py                  # 30 steps, 2 turns, both protocols
    uv run python bench/context_window.py --steps 60 --window 4096
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

from bench.common import build_graph
from bench.doubles import OBSERVATIONS, USAGE, BenchModel
from bench.report import table
from graph.policies.context_fit import CLEARED, CONDENSED
from graph.policies.token_estimates import estimated_tokens

TURN = re.compile(r"^Turn (\d+):")


def seen(messages: list[BaseMessage], turn: int) -> set[int]:
    """The indexes of this turn's calls the request shows, in any form (a call, its text, a
    line of the condensed note)."""
    marker = re.compile(rf'"turn": {turn}, "index": (\d+)')
    found: set[int] = set()
    for message in messages:
        text = message.text
        if isinstance(message, AIMessage) and message.tool_calls:
            text += json.dumps(message.tool_calls)
        found.update(int(i) for i in marker.findall(text))
    return found


def policy_for(steps: int, protocol: str):  # type: ignore[no-untyped-def]
    def policy(messages: list[BaseMessage]) -> AIMessage:
        questions = [TURN.match(x.text) for x in messages if x.type == "human"]
        turn = int(next(q for q in reversed(questions) if q).group(1))
        missing = sorted(set(range(steps)) - seen(messages, turn))
        if not missing:
            text = (
                "Thought: I have every item.\nFinal Answer: done" if protocol == "text" else "done"
            )
            return AIMessage(content=text, usage_metadata=USAGE)
        args = {"turn": turn, "index": missing[0]}
        if protocol == "text":
            content = f"Thought: next item.\nAction: fetch\nAction Input: {json.dumps(args)}"
            return AIMessage(content=content, usage_metadata=USAGE)
        call = {"name": "fetch", "args": args, "id": f"call_{turn}_{missing[0]}_{time.time_ns()}"}
        return AIMessage(content="", tool_calls=[call], usage_metadata=USAGE)

    return policy


def counting_fetch(calls: list[tuple[int, int]]) -> BaseTool:
    def fetch(turn: int, index: int) -> str:
        calls.append((turn, index))
        return OBSERVATIONS[index % len(OBSERVATIONS)]

    return StructuredTool.from_function(fetch, name="fetch", description="Fetch item `index`.")


def request_tokens(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> int:
    return estimated_tokens(messages) + estimated_tokens(tools)


def measure(protocol: str, steps: int, window: int, turns: int) -> dict[str, Any]:
    calls: list[tuple[int, int]] = []
    model = BenchModel(policy_for(steps, protocol), record=True)
    agent = build_graph(
        model=model,
        tools=[counting_fetch(calls)],
        protocol=protocol,
        checkpointer=InMemorySaver(),
        context_window=window,
        max_steps=steps + 5,
    )
    config = {"configurable": {"thread_id": f"context-{protocol}"}}
    statuses = []
    started = time.process_time()
    for turn in range(1, turns + 1):
        question = f"Turn {turn}: fetch items 0 to {steps - 1}, one call each, then say done."
        statuses.append(agent.invoke({"messages": [("user", question)]}, config)["status"])
    cpu = time.process_time() - started
    sizes = [request_tokens(r.messages, r.tools) for r in model.requests]
    texts = ["\n".join(x.text for x in r.messages) for r in model.requests]
    return {
        "protocol": protocol,
        "statuses": statuses,
        "calls": len(calls),
        "repeated": len(calls) - len(set(calls)),
        "missing": turns * steps - len(set(calls)),
        "requests": len(sizes),
        "largest": max(sizes),
        "over": sum(size > window for size in sizes),
        "cleared": sum(CLEARED in t for t in texts),
        "condensed": sum(CONDENSED in t for t in texts),
        "cpu_ms_per_request": 1000 * cpu / len(sizes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="tool calls per turn (30)")
    parser.add_argument("--window", type=int, default=8192, help="context_window in tokens")
    parser.add_argument("--turns", type=int, default=2, help="turns on one thread (2)")
    parser.add_argument("--protocol", choices=["native", "text", "both"], default="both")
    args = parser.parse_args()
    protocols = ["native", "text"] if args.protocol == "both" else [args.protocol]
    rows = [measure(p, args.steps, args.window, args.turns) for p in protocols]
    print(
        f"{args.turns} turn(s) of {args.steps} calls, 2,000-character observations, "
        f"window {args.window} tokens (estimated as the policy does)"
    )
    headers = list(rows[0])
    print(table(headers, [[row[h] for h in headers] for row in rows]))
    ok = all(r["repeated"] == 0 and r["missing"] == 0 and r["over"] == 0 for r in rows)
    print("target met" if ok else "TARGET MISSED")


if __name__ == "__main__":
    main()
