"""A dozen offline tasks on the embedded local model, with and without the ReAct grammar.

Runs the agent (text protocol, `max_steps` 4) against the packaged Gemma 3 270M (or
`REACT_AGENT_GGUF`) through `graph.local_model`, on offline tools only (calculator,
knowledge_search over the sample notes, current_time), in three modes:

- `free`: no grammar (what the model writes is what the parser gets);
- `grammar`: every reply constrained by `graph.grammar.grammar_for(tools)`;
- `grammar+budget`: the same, and after 2 observations only a Final Answer is allowed
  (`chat_model(..., final_after=2)`).

Prints one Markdown table per mode (success, status, steps, invalid replies, prompt/completion
tokens, wall time per task) and a summary, and writes everything to
`bench/results/local_eval.json`. A task succeeds when the run ends `answered` and the answer
contains what the task expects.

    uv run --extra local python bench/local_eval.py            # ~10-20 min on 2 cores
    uv run --extra local python bench/local_eval.py --quick    # 3 tasks, grammar modes only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from graph import build_graph  # noqa: E402
from graph.local_model import LocalServer, chat_model, local_available  # noqa: E402
from tools import load_tools  # noqa: E402

TOOLS = ["calculator", "knowledge_search", "current_time"]
MAX_STEPS = 4
MAX_TOKENS = 256  # per reply; without a grammar a small model writes until this


def contains(*needles: str) -> Callable[[str, dict], bool]:
    def check(answer: str, _out: dict) -> bool:
        low = answer.lower()
        return any(n.lower() in low for n in needles)

    return check


def clock(answer: str, out: dict) -> bool:
    """The answer repeats the date or the hh:mm that current_time returned."""
    seen = [s.get("observation") or "" for s in out["steps"] if s.get("tool") == "current_time"]
    for text in seen:
        for piece in re.findall(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}", text):
            if piece in answer:
                return True
    return False


@dataclass
class Task:
    name: str
    question: str
    check: Callable[[str, dict], bool]
    kind: str


TASKS = [
    Task("mul", "What is 17 * 23?", contains("391"), "arithmetic"),
    Task("add", "What is 123 + 456?", contains("579"), "arithmetic"),
    Task("pow", "What is 2 ** 10?", contains("1024", "1,024"), "arithmetic"),
    Task("sqrt", "What is the square root of 144?", contains("12"), "arithmetic"),
    Task("percent", "What is 15% of 80?", contains("12"), "arithmetic"),
    Task(
        "kb-count",
        "How many tools does the agent ship? Search my notes.",
        contains("six", "6"),
        "knowledge",
    ),
    Task(
        "kb-setting",
        "Which setting picks the Wikipedia language edition? Search my notes.",
        contains("REACT_AGENT_WIKIPEDIA_LANG"),
        "knowledge",
    ),
    Task(
        "kb-storage",
        "Where can checkpoints be kept? Search my notes.",
        contains("sqlite", "postgres", "memory"),
        "knowledge",
    ),
    Task("clock-utc", "What time is it now in UTC?", clock, "clock"),
    Task("clock-tokyo", "What is the date today in Tokyo (Asia/Tokyo)?", clock, "clock"),
    Task(
        "two-step-kb",
        "Search my notes for how many tools the agent ships, then multiply that number by 7.",
        contains("42"),
        "two-step",
    ),
    Task(
        "two-step-calc",
        "Compute 17 * 23, then subtract 91 from the result.",
        contains("300"),
        "two-step",
    ),
]

MODES: dict[str, dict[str, Any]] = {
    "free": {"grammar": False},
    "grammar": {"grammar": True},
    "grammar+budget": {"grammar": True, "final_after": 2},
}


@dataclass
class Result:
    task: str
    kind: str
    mode: str
    success: bool
    status: str
    answer: str
    actions: int
    invalid: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    calls: list[str] = field(default_factory=list)


def run_task(server: LocalServer, task: Task, mode: str) -> Result:
    tools = load_tools(TOOLS)
    model = chat_model(server, tools, max_tokens=MAX_TOKENS, timeout=300, **MODES[mode])
    agent = build_graph(
        model=model,
        tools=tools,
        checkpointer=InMemorySaver(),
        protocol="text",
        max_steps=MAX_STEPS,
    )
    started = time.perf_counter()
    out = agent.invoke(
        {"messages": [("user", task.question)]},
        {"configurable": {"thread_id": f"{task.name}-{mode}"}},
    )
    seconds = time.perf_counter() - started
    steps = out.get("steps") or []
    usage = [s["usage"] for s in steps if s.get("usage")]
    answer = out.get("answer") or ""
    status = out.get("status") or "?"
    return Result(
        task=task.name,
        kind=task.kind,
        mode=mode,
        success=status == "answered" and task.check(answer, out),
        status=status,
        answer=answer,
        actions=sum(1 for s in steps if s["kind"] == "action"),
        invalid=sum(1 for s in steps if s["kind"] == "invalid"),
        prompt_tokens=sum(u.get("input_tokens", 0) for u in usage),
        completion_tokens=sum(u.get("output_tokens", 0) for u in usage),
        seconds=seconds,
        calls=[
            f"{s['tool']} {json.dumps(s.get('tool_input'), ensure_ascii=False)}"
            for s in steps
            if s["kind"] == "action"
        ],
    )


def table(rows: list[Result]) -> str:
    lines = [
        "| task | ok | status | actions | invalid | prompt tok | completion tok | s | answer |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        answer = " ".join(r.answer.split())
        answer = (answer[:60] + "…") if len(answer) > 60 else answer
        answer = answer.replace("|", "\\|")
        lines.append(
            f"| {r.task} | {'yes' if r.success else 'no'} | {r.status} | {r.actions} | "
            f"{r.invalid} | {r.prompt_tokens} | {r.completion_tokens} | {r.seconds:.1f} | "
            f"{answer} |"
        )
    return "\n".join(lines)


def summary(results: list[Result], modes: list[str]) -> str:
    lines = [
        "| mode | success | answered | invalid replies | mean actions | prompt tok | "
        "completion tok | total s | mean s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in modes:
        rows = [r for r in results if r.mode == mode]
        if not rows:
            continue
        n = len(rows)
        lines.append(
            f"| {mode} | {sum(r.success for r in rows)}/{n} | "
            f"{sum(r.status == 'answered' for r in rows)}/{n} | {sum(r.invalid for r in rows)} | "
            f"{sum(r.actions for r in rows) / n:.1f} | {sum(r.prompt_tokens for r in rows)} | "
            f"{sum(r.completion_tokens for r in rows)} | {sum(r.seconds for r in rows):.0f} | "
            f"{sum(r.seconds for r in rows) / n:.1f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 tasks, grammar modes only")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default all)")
    args = parser.parse_args()
    if not local_available():
        print("The local extra is not installed: uv sync --extra local", file=sys.stderr)
        return 2
    for name in list(os.environ):
        if name.startswith("REACT_AGENT_") and name != "REACT_AGENT_GGUF":
            os.environ.pop(name)
    modes = [m for m in args.modes.split(",") if m]
    tasks = TASKS
    if args.tasks:
        tasks = [t for t in TASKS if t.name in args.tasks.split(",")]
    if args.quick:
        tasks, modes = TASKS[:1] + TASKS[5:6] + TASKS[8:9], ["grammar", "grammar+budget"]
    results: list[Result] = []
    with LocalServer() as server:
        for mode in modes:
            for task in tasks:
                result = run_task(server, task, mode)
                results.append(result)
                print(
                    f"{mode:>15} {task.name:<14} {'ok ' if result.success else 'no '} "
                    f"{result.status:<10} {result.seconds:6.1f} s  {result.calls}",
                    file=sys.stderr,
                    flush=True,
                )
        model_file, startup = str(server.model), server.startup_seconds
    for mode in modes:
        print(f"\n### {mode}\n")
        print(table([r for r in results if r.mode == mode]))
    print("\n### summary\n")
    print(summary(results, modes))
    out = ROOT / "bench" / "results" / "local_eval.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "model_file": model_file,
        "server_startup_seconds": startup,
        "max_steps": MAX_STEPS,
        "max_tokens": MAX_TOKENS,
        "tools": TOOLS,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "python": platform.python_version(),
        },
        "results": [r.__dict__ for r in results],
    }
    out.write_text(json.dumps(payload, indent=2, ensure_ascii=False))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
