"""A run drawn as a waterfall from its checkpoints alone: no collector, no span.

Every checkpoint is stamped when the node that wrote it finished, so the time a node took is the
time between its checkpoint and the one before; think's is the model call, act's the tool calls,
review's the wait for a person's decision. The messages of the run say the rest: each model
step's tokens (`usage_metadata`) and calls, each tool's result, duration and error. A run starts
at an `input` checkpoint (a question); a resume after an approval goes on in the same run.

The `trace` command reads a thread's rows with `graph.persistence.timeline.aiter_history`
(streamed, no full state rebuilt per checkpoint); `split_runs` cuts them into runs, `timeline`
builds one run's `Timeline`, and `rows_of` / `bar_text` draw it.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from graph import messages as m
from graph.persistence.history import CLOSING, HistoryRow, excerpt, show_input

WIDTH = 32  # characters of the waterfall column
PAUSE = "review"


@dataclass
class Bar:
    """One node's part of a run: where it starts and how long it took (ms from the run's
    start), what it did, and the tokens, error and approval wait it had."""

    node: str
    step: int | None
    start_ms: float
    duration_ms: float
    what: str
    input_tokens: int = 0
    output_tokens: int = 0
    error: bool = False
    waited: bool = False  # the time is a wait for an approval
    tools: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Timeline:
    """One run of a thread, as `react-agent trace` shows it."""

    thread_id: str
    run: int  # 1 for the thread's first run
    runs: int
    run_id: str  # the id of the run's input checkpoint
    started: str | None
    status: str
    duration_ms: float
    bars: list[Bar]
    error: str | None = None

    def total(self, key: str) -> float:
        return sum(getattr(bar, key) for bar in self.bars)

    @property
    def model_ms(self) -> float:
        return sum(b.duration_ms for b in self.bars if b.node == "think")

    @property
    def tool_ms(self) -> float:
        return sum(t["duration_ms"] for b in self.bars for t in b.tools)

    @property
    def waited_ms(self) -> float:
        return sum(b.duration_ms for b in self.bars if b.waited)

    def as_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in asdict(self).items() if k != "bars"},
            "model_ms": round(self.model_ms, 1),
            "tool_ms": round(self.tool_ms, 1),
            "waited_ms": round(self.waited_ms, 1),
            "input_tokens": int(self.total("input_tokens")),
            "output_tokens": int(self.total("output_tokens")),
            "bars": [asdict(bar) for bar in self.bars],
        }


def split_runs(rows: list[HistoryRow]) -> list[list[HistoryRow]]:
    """The thread's rows cut into runs, each starting at its `input` checkpoint."""
    runs: list[list[HistoryRow]] = []
    for row in rows:
        if row.node == "input" or not runs:
            runs.append([])
        runs[-1].append(row)
    return [run for run in runs if any(r.node == "input" for r in run)]


def _at(row: HistoryRow) -> datetime | None:
    return datetime.fromisoformat(row.created_at) if row.created_at else None


def _ms(later: datetime | None, earlier: datetime | None) -> float:
    if later is None or earlier is None:
        return 0.0
    return max(0.0, (later - earlier).total_seconds() * 1000)


def timeline(
    thread_id: str,
    runs: list[list[HistoryRow]],
    index: int,
    values: dict[str, Any],
    messages: list[Any],
    paused: bool,
) -> Timeline:
    """The `index`-th run (0-based) of `runs` as a Timeline; `values` is the state at the run's
    last checkpoint, `messages` the run's own messages (after its question)."""
    rows = runs[index]
    start = _at(rows[0])
    steps = iter([x for x in messages if x.type == "ai" and _is_step(x)])
    results = {x.tool_call_id: x for x in messages if x.type == "tool"}
    bars: list[Bar] = []
    pending: list[dict[str, Any]] = []
    number: int | None = None
    stamped = {r.checkpoint_id: r for r in rows}
    for previous, row in itertools.pairwise(rows):
        if row.node.startswith("__"):  # LangGraph's own entry task: no work of the agent's
            continue
        parent = stamped.get(row.parent_checkpoint_id or "")
        if parent is not None and parent is not previous:
            # a resume's fork from before a failed attempt: written when the resume began, so
            # the time since is a wait, no node's work; the next node is timed from it
            begin = _ms(_at(row), start)
            bars.append(Bar(row.node, number, round(begin, 1), 0.0, "resumed from here"))
            continue
        begin, end = _ms(_at(previous), start), _ms(_at(row), _at(previous))
        bar = Bar(row.node, number, round(begin, 1), round(end, 1), row.summary)
        if row.node == "think":
            message = next(steps, None)
            if message is not None:
                number = int(message.response_metadata.get(m.STEP) or (number or 0) + 1)
                usage = message.usage_metadata or {}
                bar.step = number
                bar.input_tokens = int(usage.get("input_tokens", 0))
                bar.output_tokens = int(usage.get("output_tokens", 0))
                pending = list(message.tool_calls)
        elif row.node == "act":
            bar.tools = [_tool(call, results.get(call["id"])) for call in pending]
            bar.error = any(t["error"] for t in bar.tools)
            pending = []
        elif row.node == PAUSE:
            bar.waited = True
            bar.what = "waited for approval" + (f"; {row.summary}" if row.summary else "")
        bars.append(bar)
    # as `threads` says it: a run whose last checkpoint still has work to do was cut short
    status = "paused" if paused else "unfinished" if rows[-1].next else values.get("status")
    status = status or "running"
    if paused:
        last = rows[-1]
        waiting = last.summary.split("waiting for approval: ", 1)[-1]
        bars.append(
            Bar(
                PAUSE,
                number,
                round(_ms(_at(last), start), 1),
                0.0,
                f"waiting for approval: {waiting}",
            )
        )
    if status == "error":  # the step that failed says so; finish only closed the run
        failed = [b for b in bars if b.what.startswith("error:")] or bars[-1:]
        for bar in failed:
            bar.error = True
    for bar in bars:
        if bar.node == "finish" and status == "error":
            bar.what = "error (below)"
    return Timeline(
        thread_id=thread_id,
        run=index + 1,
        runs=len(runs),
        run_id=rows[0].checkpoint_id,
        started=rows[0].created_at,
        status=status,
        duration_ms=round(_ms(_at(rows[-1]), start), 1),
        bars=bars,
        error=values.get("error") if status == "error" else None,
    )


def _is_step(message: Any) -> bool:
    """A reply think stored (a step, an answer), not the error or limit notice finish wrote."""
    return (message.response_metadata or {}).get(m.MARK) not in CLOSING


def _tool(call: dict[str, Any], result: Any) -> dict[str, Any]:
    meta = (getattr(result, "response_metadata", None) or {}) if result is not None else {}
    return {
        "name": call.get("name"),
        "args": call.get("args"),
        "duration_ms": float(meta.get(m.DURATION, 0.0)),
        "error": bool(result is not None and result.status == "error"),
        "result": m.shown(result) if result is not None else None,
    }


def bar_text(start_ms: float, duration_ms: float, total_ms: float, fill: str) -> str:
    """The bar of a part of a run: its offset and length scaled to WIDTH; at least one cell."""
    if total_ms <= 0:
        return fill
    offset = min(WIDTH - 1, int(start_ms / total_ms * WIDTH))
    length = max(1, round(duration_ms / total_ms * WIDTH))
    return (" " * offset + fill * min(length, WIDTH - offset)).ljust(WIDTH)


def seconds(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def heading(t: Timeline) -> str:
    """The run in one line: which, how it ended, where the time went, the tokens."""
    parts = [
        f"thread {t.thread_id}",
        f"run {t.run} of {t.runs}",
        t.status,
        seconds(t.duration_ms),
        f"model {seconds(t.model_ms)}",
        f"tools {seconds(t.tool_ms)}",
    ]
    if t.waited_ms or t.status == "paused":
        parts.append(f"approvals {seconds(t.waited_ms)}")
    parts.append(f"tokens {int(t.total('input_tokens'))} in / {int(t.total('output_tokens'))} out")
    return " · ".join(parts)


def rows_of(t: Timeline, fill: str) -> list[tuple[str, ...]]:
    """The table's rows: one per node that ran, one more per tool call under act."""
    out: list[tuple[str, ...]] = []
    for bar in t.bars:
        what = bar.what
        if bar.input_tokens or bar.output_tokens:
            what = f"{what} [{bar.input_tokens} in / {bar.output_tokens} out]"
        if bar.node == "act" and bar.tools:
            what = f"{len(bar.tools)} call{'s' * (len(bar.tools) > 1)}"
        if bar.node == PAUSE and bar.duration_ms == 0.0 and t.status == "paused":
            shown = "…"
        else:
            shown = seconds(bar.duration_ms)
        mark = "ERROR " if bar.error and bar.node != "act" else ""
        step = "" if bar.step is None else str(bar.step)
        graph = bar_text(bar.start_ms, bar.duration_ms, t.duration_ms, fill)
        out.append((step, bar.node, shown, graph, mark + excerpt(what, 160)))
        for tool in bar.tools:
            result = excerpt(" ".join(str(tool["result"] or "").split()), 120)
            failed = "ERROR " if tool["error"] else ""
            call = f"{tool['name']}({excerpt(show_input(tool['args']), 80)})"
            out.append(
                (
                    "",
                    "  tool",
                    seconds(tool["duration_ms"]),
                    bar_text(bar.start_ms, tool["duration_ms"], t.duration_ms, fill),
                    f"{failed}{call} → {result}",
                )
            )
    if t.error:
        out.append(("", "error", "", "", excerpt(t.error, 240)))
    return out
