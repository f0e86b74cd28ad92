"""A stateless agent worker: the embed-in-your-own-service pattern.

Any number of these processes (on any number of machines) share one PostgreSQL checkpointer.
A worker keeps nothing about a conversation in memory: every turn loads the thread from the
database, runs, and writes it back, so consecutive turns of one thread can go to different
workers. While a turn runs, the worker holds the thread's advisory lock
(`graph.persistence.locks.thread_lock`), so a second worker asked to run the same thread at
the same time answers `busy` instead of interleaving checkpoints.

One turn, one process::

    python -m examples.worker --checkpointer postgresql://... --thread T --question Q
    # prints one JSON object: {"thread_id", "answer", "status", "error", "steps",
    #                          "messages", "worker"}; exit status as the CLI's: 0 answered,
    #                          1 error, 2 bad input or configuration, 3 stopped without an
    #                          answer (max_steps, stuck, timeout), 4 paused, 5 busy

A long-lived worker (a queue consumer, an HTTP handler...): one JSON request per stdin line,
``{"thread": T, "question": Q}``, one JSON answer per stdout line, until EOF::

    python -m examples.worker --checkpointer postgresql://... --serve

The model endpoint comes from the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
`REACT_AGENT_*`), as for every other way of running the agent. A turn that pauses for approval
(`REACT_AGENT_APPROVE`) answers `paused`: this worker has nobody to ask, so use approvals with
a client that can answer them (see `examples.sdk_client`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from graph import build_graph
from graph.cli.options import EXIT  # the exit statuses of the `react-agent` command
from graph.persistence.locks import ThreadBusy, thread_lock
from graph.persistence.savers import open_saver
from graph.settings import ConfigError


def run_turn(agent: Any, url: str, thread_id: str, question: str) -> dict[str, Any]:
    """Run one turn of `thread_id` under its lock; the result as a JSON-ready dict."""
    config = {"configurable": {"thread_id": thread_id}}
    inputs = {"messages": [("user", question)]}

    async def locked() -> dict[str, Any]:
        async with thread_lock(url, thread_id):
            return await asyncio.to_thread(agent.invoke, inputs, config, durability="sync")

    base: dict[str, Any] = {"thread_id": thread_id, "worker": os.getpid()}
    try:
        values = asyncio.run(locked())
    except ThreadBusy as exc:
        return {**base, "answer": None, "status": "busy", "error": str(exc)}
    paused = bool(values.get("__interrupt__"))
    return {
        **base,
        "answer": values.get("answer"),
        "status": "paused" if paused else values.get("status") or "error",
        "error": values.get("error"),
        "steps": len(values.get("steps") or []),
        "messages": len(values.get("messages") or []),
    }


def serve(agent: Any, url: str) -> int:
    """Answer JSON-line requests from stdin until EOF."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            thread_id, question = str(request["thread"]), str(request["question"])
        except (ValueError, KeyError, TypeError) as exc:
            reply: dict[str, Any] = {"status": "usage", "error": f"bad request {line!r}: {exc}"}
        else:
            reply = run_turn(agent, url, thread_id, question)
        print(json.dumps(reply, ensure_ascii=False), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m examples.worker",
        description="Run agent turns on threads kept in a shared checkpointer.",
    )
    parser.add_argument("--checkpointer", required=True, help="postgresql://... (or sqlite:///)")
    parser.add_argument("--thread", help="thread id of the turn")
    parser.add_argument("--question", help="the user's message for this turn")
    parser.add_argument("--serve", action="store_true", help="read JSON-line requests on stdin")
    parser.add_argument("--protocol", choices=["auto", "native", "text"])
    parser.add_argument("--max-steps", type=int)
    args = parser.parse_args(argv)
    if not args.serve and not (args.thread and args.question):
        parser.error("give --thread and --question, or --serve")

    settings = {"protocol": args.protocol, "max_steps": args.max_steps}
    try:
        with open_saver(args.checkpointer) as saver:
            agent = build_graph(checkpointer=saver, **settings)
            if args.serve:
                print(json.dumps({"ready": os.getpid()}), flush=True)
                return serve(agent, args.checkpointer)
            result = run_turn(agent, args.checkpointer, args.thread, args.question)
    except ConfigError as exc:
        print(json.dumps({"status": "usage", "error": str(exc)}), flush=True)
        return EXIT["usage"]
    print(json.dumps(result, ensure_ascii=False), flush=True)
    return EXIT.get(result["status"], EXIT["error"])


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)


__all__ = ["EXIT", "main", "run_turn"]
