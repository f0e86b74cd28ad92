"""How much of graph/ one run walks through: the modules whose functions one warmed-up
`invoke` calls, and their lines (issue 41's targets: one native run with one tool call in at
most 15 graph/ modules and 1,800 lines; the text protocol in at most 25 and 4,000).

A `sys.setprofile` hook records the file of every Python function called during one `invoke`
of a run with one tool call and an answer (InMemorySaver, no approvals, no user middleware),
after one identical warm-up run, so imports and first-use caches are not counted. Threads are
hooked from birth, the reused workers included (see `Walk`). The same count for LangChain's
`create_agent` is printed beside it: its own files under `langchain/agents/` and LangGraph's
`prebuilt/`, which play the part graph/ plays here.

    uv run python bench/call_path.py            # both protocols
    uv run python bench/call_path.py --list     # and each module with its lines
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import build_agent, inputs, run_config  # noqa: E402
from bench.report import table  # noqa: E402

TARGETS = {"native": (15, 1800), "text": (25, 4000)}


class Walk:
    """Records the files (as `inside` selects them) whose Python functions run while `on`.

    One hook for the whole process, installed before the first agent is built and never
    removed: worker threads (a sync model call or tool waited for on a reused daemon thread)
    keep the hook for their whole life, so every measured run's calls on threads an earlier
    run started are counted too. Python 3.11 has no way to hook a thread that already runs
    (3.12's `threading.setprofile_all_threads`), and hooking only new threads would miss them."""

    def __init__(self) -> None:
        self.inside: Callable[[str], bool] = ours
        self.on = False
        self.seen: set[str] = set()

    def hook(self, frame: Any, event: str, arg: Any) -> None:
        if self.on and event == "call":
            name = frame.f_code.co_filename
            if self.inside(name):
                self.seen.add(name)

    def install(self) -> None:
        sys.setprofile(self.hook)
        threading.setprofile(self.hook)


def lines(path: str) -> int:
    return Path(path).read_text(encoding="utf-8").count("\n")


def ours(path: str) -> bool:
    return path.startswith(str(ROOT / "graph"))


def upstream(path: str) -> bool:
    return "/langchain/agents/" in path or "/langgraph/prebuilt/" in path


WALK = Walk()


def measure(kind: str, protocol: str) -> set[str]:
    from langgraph.checkpoint.memory import InMemorySaver

    agent = build_agent(kind, protocol, iterations=1, checkpointer=InMemorySaver())

    def once() -> Any:
        return agent.invoke(inputs(), run_config(kind))

    once()  # warm-up: imports, first-use caches, the worker threads (hooked from birth)
    WALK.inside, WALK.seen, WALK.on = (ours if kind == "ours" else upstream), set(), True
    try:
        once()
    finally:
        WALK.on = False
    return WALK.seen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each module and its lines")
    args = parser.parse_args(argv)
    rows = []
    WALK.install()
    for protocol in ("native", "text"):
        for kind in ("ours", "create_agent"):
            if kind == "create_agent" and protocol == "text":
                continue  # create_agent has no text protocol of its own
            files = measure(kind, protocol)
            total = sum(lines(f) for f in files)
            most_modules, most_lines = TARGETS[protocol]
            target = f"<= {most_modules} / {most_lines:,}" if kind == "ours" else ""
            rows.append([kind, protocol, len(files), f"{total:,}", target])
            if args.list:
                for f in sorted(files, key=lines, reverse=True):
                    print(f"  {kind} {protocol}: {lines(f):5d}  {f}")
    print(table(["agent", "protocol", "modules", "lines", "target (modules / lines)"], rows))


if __name__ == "__main__":
    main()
