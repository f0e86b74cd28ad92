"""Doubles and measures for the long-lived process probe (tests/faults/test_probe_long_lived.py):
a stateless model that calls a different tool per question, tools of each kind, and a
`Footprint` of what a process that runs the agent many times must keep bounded (threads, file
descriptors, live run objects, pending tasks, allocated memory blocks, this process's
PostgreSQL sessions, call ledger rows).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import BaseTool, tool

from tests.support.concurrency_model import ConversationModel, question_of, weight

# What one run is made of: a leak of a run shows as some of these staying alive.
RUN_OBJECTS = frozenset(
    {
        "AIMessage",
        "HumanMessage",
        "ToolMessage",
        "ModelRequest",
        "ModelResponse",
        "ToolCallRequest",
        "ToolRuntime",
        "PregelScratchpad",
        "Runtime",
        "SyncPregelLoop",
        "AsyncPregelLoop",
        "Plan",
    }
)


class RotatingModel(ConversationModel):
    """`ConversationModel` that calls `cycle[N % len(cycle)]` for the question `q<N>`: one
    model object drives runs of every tool kind. For runs made one after another (the tool
    name is set on the object for the reply being made)."""

    cycle: tuple[str, ...] = ()

    def _reply(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> ChatResult:
        if self.cycle:
            asked, _ = question_of(messages)
            object.__setattr__(self, "tool", self.cycle[weight(asked) % len(self.cycle)])
        return super()._reply(messages, stop, **kwargs)


def tool_kinds(gate: threading.Event | None = None) -> dict[str, BaseTool]:
    """A sync tool, an async tool, a tool that raises, and (with `gate`) a sync tool that
    hangs until the gate opens when its text starts with "hang"."""

    @tool
    def sync_echo(text: str) -> str:
        """Repeat the text back (sync)."""
        return f"echo: {text}"

    @tool
    async def async_echo(text: str) -> str:
        """Repeat the text back (async)."""
        await asyncio.sleep(0)
        return f"echo: {text}"

    @tool
    def failing(text: str) -> str:
        """Always fails."""
        raise RuntimeError(f"disk on fire for {text}")

    kinds: dict[str, BaseTool] = {"sync": sync_echo, "async": async_echo, "raising": failing}
    if gate is not None:

        @tool
        def work(text: str) -> str:
            """Does the work; hangs on texts that start with "hang" until released."""
            if text.startswith("hang"):
                gate.wait(30)
            return f"worked {text}"

        kinds["hanging"] = work
    return kinds


# -- measures --------------------------------------------------------------------------------


def thread_names() -> Counter[str]:
    """Live threads by name; the default executor's (`asyncio_N`, at most its max_workers, reused)
    are left out: an event loop owns them, not the agent."""
    return Counter(t.name for t in threading.enumerate() if not t.name.startswith("asyncio_"))


def open_fds() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the descriptor listdir itself used, closed by now
            continue
    return found


def run_objects() -> Counter[str]:
    return Counter(name for x in gc.get_objects() if (name := type(x).__name__) in RUN_OBJECTS)


def own_tcp_ports() -> set[int]:
    """The local ports of this process's TCP sockets (a PostgreSQL session of this process is
    the one whose `client_port` is one of them: another suite may share the database)."""
    inodes = {link[len("socket:[") : -1] for link in open_fds() if link.startswith("socket:[")}
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[9] in inodes:
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def pg_sessions(url: str) -> int:
    """This process's sessions on the database of `url`, from `pg_stat_activity` (the counting
    session itself left out)."""
    import psycopg

    ports = own_tcp_ports()
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT client_port FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return sum(1 for (port,) in rows if port in ports)


def ledger_rows(folder: Path) -> int:
    """Rows of the call ledger's fallback file in the state folder (0 when there is none)."""
    path = folder / "ledger.sqlite"
    if not path.exists():
        return 0
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM store").fetchone()[0]
    finally:
        conn.close()


@dataclass
class Footprint:
    """What a long-lived process has after a number of runs (taken after a full collection)."""

    threads: Counter[str]
    fds: int
    objects: Counter[str]
    blocks: int
    tasks: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    @classmethod
    def take(cls, loop: asyncio.AbstractEventLoop | None = None, **extra: int) -> Footprint:
        gc.collect()
        tasks = len(asyncio.all_tasks(loop)) if loop is not None else 0
        return cls(
            thread_names(),
            len(open_fds()),
            run_objects(),
            sys.getallocatedblocks(),
            tasks,
            dict(extra),
        )

    def growth(self, later: Footprint) -> dict[str, Any]:
        """What `later` holds beyond this one: threads by name, descriptors, run objects by
        type, memory blocks, pending tasks."""
        return {
            "threads": dict(later.threads - self.threads),
            "fds": later.fds - self.fds,
            "objects": dict(later.objects - self.objects),
            "blocks": later.blocks - self.blocks,
            "tasks": later.tasks - self.tasks,
            **{k: later.extra.get(k, 0) - v for k, v in self.extra.items()},
        }


def assert_flat(
    grown: dict[str, Any],
    runs: int,
    *,
    fds: int = 3,
    threads: int = 2,
    objects: int = 6,
    blocks_per_run: int = 15,
) -> None:
    """Nothing in `grown` grows with the number of runs: a leak of one thing per run shows as
    about `runs` of it, far past these margins (a few for lazily opened files, a worker made in
    a benign race, a cache filling up)."""
    assert sum(grown["threads"].values()) <= threads, grown
    assert grown["fds"] <= fds, grown
    assert sum(grown["objects"].values()) <= objects, grown
    assert grown["blocks"] <= blocks_per_run * runs, grown
    assert grown["tasks"] <= 0, grown
