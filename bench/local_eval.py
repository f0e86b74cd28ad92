"""Offline tasks on the embedded local model: accuracy, time and steps per mode and model.

Every task runs with ALL default tools offered (calculator, weather, wikipedia,
knowledge_search, web_fetch, current_time), on the text protocol, under the run policies
recommended for the embedded model (`graph.models.local`). The tasks need only offline tools:
arithmetic in symbols, in words and in Chinese, word problems, look-ups in a notes folder, the
clock, two tools in sequence, and questions that need no tool. A task succeeds when the run
ends with a Final Answer that contains what the task expects (for the clock: the date or hh:mm
the tool really returned).

Task sets (`--tasks`):

- DEVELOPMENT sets: `builtin` (below), `holdout`, `fresh`, `unseen`, `final`
  (bench/data/local_eval_*.jsonl), and `blind1`, `blind2`, `blind3`
  (bench/data/local_eval_blind*.jsonl, each over its own notes folder, bench/data/blind*_notes/,
  set as REACT_AGENT_KB_DIR for the run). Their questions and failures were read while
  building; a figure on them says little about new wording;
- the blind sets, each written by a helper who saw neither the code nor the other sets and
  run once on the code of its day (bench/data/BLIND*.md, the runs' lines in
  bench/data/local_eval_blind*_run.md), became development sets after that run. A new blind
  figure needs a new set, added to `NOTED_SETS` and run once.

Modes (`--modes`, comma-separated):

- `agent`: the agent itself (`build_graph` with the embedded model's run policies): what
  `react-agent ask` does;
- `baseline`: no model at all. The tool whose records share the most words with the question
  (none: no answer) is called with the question as its argument, and the answer is the
  result's first quotable line, the code the agent runs after a call. What the model adds is
  the agent's figure minus this one;
- `completion`, `chat`: the loop driven here (bind_tools, stop, grammar, the conversation in
  LangChain's standard form) with the completion prompt, or the text protocol's chat
  transcript.

    uv run --extra local python bench/local_eval.py --modes agent,baseline --tasks holdout
    uv run --extra local python bench/local_eval.py --modes agent --tasks all

Prints a line per task, then a Markdown table per mode and model (with accuracy per path: the
answer written by the model, or by code when one line was all it could be), and writes
`bench/results/local_eval.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402

from graph.models.local import (  # noqa: E402
    ANSWER_AFTER,
    QUOTED_ANSWERS,
    RUN_DEADLINE,
    STEP_TOKENS,
    LocalServer,
    chat_model,
    local_available,
    local_server,
    stop_local_server,
)
from graph.protocols.text.grammar import grammar_for, request_options  # noqa: E402
from graph.protocols.text.observations import quotable_lines  # noqa: E402
from graph.protocols.text.prompts import invalid_reply_observation, text_system_prompt  # noqa: E402
from graph.protocols.text.reader import parse_react  # noqa: E402
from tools import TOOL_NAMES, load_tools  # noqa: E402

MAX_STEPS = 4

Check = Callable[[str, list[dict]], bool]


def number(*values: str | float) -> Check:
    """The answer contains one of these numbers (digits not glued to other digits or to a
    decimal part; 1,024 ok), a number equal to one once both are rounded to 4 places (7.00 for
    7), or a longer decimal that rounds to one, half up (2.33333333333 for 2.3333). A set may
    give the values as JSON numbers or as text."""
    expected = [_number_text(v) for v in values]

    def check(answer: str, _steps: list[dict]) -> bool:
        plain = re.sub(r"(?<=\d),(?=\d{3})", "", answer)
        if any(re.search(rf"(?<![\d.]){re.escape(v)}(?!\d|\.\d)", plain) for v in expected):
            return True
        written = re.findall(r"(?<![\d.])-?\d+(?:\.\d+)?", plain)
        return any(
            ("." in v and _rounds_to(d, v)) or _same_to_four_places(d, v)
            for d in written
            for v in expected
        )

    return check


def _number_text(value: str | float) -> str:
    """A value as the answer would write it: 8.0 as "8"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _same_to_four_places(written: str, expected: str) -> bool:
    """Whether both numbers are equal once rounded to 4 places, half up (7.00 and 7)."""
    place = Decimal("0.0001")
    try:
        rounded = Decimal(written).quantize(place, ROUND_HALF_UP)
        return rounded == Decimal(expected).quantize(place, ROUND_HALF_UP)
    except InvalidOperation:
        return False


def _rounds_to(written: str, expected: str) -> bool:
    """Whether the decimal `written`, with more places than `expected`, rounds to it."""
    places = len(expected.partition(".")[2])
    if len(written.partition(".")[2]) <= places:
        return False
    with localcontext(prec=len(written) + places + 2):
        try:
            rounded = Decimal(written).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
            return rounded == Decimal(expected)
        except InvalidOperation:
            return False


def words(*needles: str) -> Check:
    def check(answer: str, _steps: list[dict]) -> bool:
        low = answer.casefold()
        return any(n.casefold() in low for n in needles)

    return check


def either(*checks: Check) -> Check:
    def check(answer: str, steps: list[dict]) -> bool:
        return any(c(answer, steps) for c in checks)

    return check


def clock(zone: str) -> Check:
    """The clock was asked for this zone, and the answer repeats the date or the hh:mm that it
    really returned."""

    def check(answer: str, steps: list[dict]) -> bool:
        for step in steps:
            if step.get("tool") == "current_time" and f"({zone}," in step["observation"]:
                for piece in re.findall(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}", step["observation"]):
                    if piece in answer:
                        return True
        return False

    return check


def weekday_in(zone: str) -> Check:
    """The answer names the weekday the clock returned for this zone."""

    def check(answer: str, steps: list[dict]) -> bool:
        for step in steps:
            if step.get("tool") == "current_time" and f"({zone}," in step["observation"]:
                day = step["observation"].rsplit(", ", 1)[-1].strip()
                if day and day.casefold() in answer.casefold():
                    return True
        return False

    return check


def utc_by_name(answer: str, _steps: list[dict]) -> bool:
    """UTC named as the zone, not an offset of another zone's reading ("UTC+08:00")."""
    return bool(re.search(r"\bUTC\b(?![+-]\d)", answer))


def year_times_two(answer: str, steps: list[dict]) -> bool:
    return number(str(datetime.now(UTC).year * 2))(answer, steps)


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # arithmetic | knowledge | clock | two-step | no-tool
    question: str
    check: Check
    tool: str | None  # the tool a right run uses first (None: no tool)


def _tasks() -> list[Task]:
    a, k, c, t, n = "arithmetic", "knowledge", "clock", "two-step", "no-tool"
    calc, kb, now = "calculator", "knowledge_search", "current_time"
    return [
        Task("mul", a, "What is 19 * 27?", number("513"), calc),
        Task("add", a, "What is 123 + 456?", number("579"), calc),
        Task("pow", a, "What is 3 ** 7?", number("2187"), calc),
        Task("sub", a, "What is 1000 - 387?", number("613"), calc),
        Task("div", a, "What is 144 / 12?", number("12"), calc),
        Task("parens", a, "Calculate (15 + 5) * 3.", number("60"), calc),
        Task("decimal", a, "What is 7.5 * 4?", number("30"), calc),
        Task("square", a, "What is 99 * 99?", number("9801"), calc),
        Task("words-mul", a, "What is seventeen times twenty-three?", number("391"), calc),
        Task("words-add", a, "What is three hundred plus forty-five?", number("345"), calc),
        Task("percent", a, "How much is 15 percent of 80?", number("12"), calc),
        Task("sqrt", a, "What is the square root of 144?", number("12"), calc),
        Task("half", a, "What is half of 250?", number("125"), calc),
        Task(
            "apples", a, "I have 12 boxes with 8 apples each. How many apples?", number("96"), calc
        ),
        Task("zh-mul", a, "17乘以23等于多少？", number("391"), calc),
        Task("zh-add", a, "100加250等于多少？", number("350"), calc),
        Task("zh-sub", a, "计算 88 减 29。", number("59"), calc),
        Task("zh-div", a, "48除以6是多少？", number("8"), calc),
        Task(
            "kb-count",
            k,
            "How many tools does the agent ship? Search my notes.",
            either(words("six"), number("6")),
            kb,
        ),
        Task(
            "kb-wiki-lang",
            k,
            "Which setting picks the Wikipedia language edition? Search my notes.",
            words("REACT_AGENT_WIKIPEDIA_LANG"),
            kb,
        ),
        Task(
            "kb-storage",
            k,
            "Where can checkpoints be kept, according to my notes?",
            words("sqlite", "postgres", "memory"),
            kb,
        ),
        Task(
            "kb-react",
            k,
            "What does ReAct stand for? Check my notes.",
            words("reasoning and acting"),
            kb,
        ),
        Task(
            "kb-fetch-allow",
            k,
            "Which setting lets web_fetch read private hosts? Search my notes.",
            words("REACT_AGENT_FETCH_ALLOW"),
            kb,
        ),
        Task(
            "kb-zone",
            k,
            "What time zone does current_time use by default? Search my notes.",
            utc_by_name,
            kb,
        ),
        Task(
            "kb-provider",
            k,
            "Which weather provider is the default? Search my notes.",
            words("open-meteo", "open meteo"),
            kb,
        ),
        Task(
            "kb-zh-provider",
            k,
            "我的笔记里，天气工具默认用哪个数据源？",
            words("open-meteo", "open meteo"),
            kb,
        ),
        Task(
            "kb-thread",
            k,
            "What happens when I run again with the same thread id? Search my notes.",
            words("continue", "same conversation", "loaded"),
            kb,
        ),
        Task(
            "kb-dir",
            k,
            "Which environment variable sets the knowledge base folder? Check my notes.",
            words("REACT_AGENT_KB_DIR"),
            kb,
        ),
        Task("clock-utc", c, "What time is it now in UTC?", clock("UTC"), now),
        Task("clock-tokyo", c, "What is the date today in Tokyo?", clock("Asia/Tokyo"), now),
        Task(
            "clock-ny-day",
            c,
            "What day of the week is it in New York?",
            weekday_in("America/New_York"),
            now,
        ),
        Task("clock-zh", c, "现在上海几点？", clock("Asia/Shanghai"), now),
        Task("clock-london", c, "What is today's date in London?", clock("Europe/London"), now),
        Task("clock-paris", c, "What time is it in Paris right now?", clock("Europe/Paris"), now),
        Task(
            "two-kb-calc",
            t,
            "Search my notes for how many tools the agent ships, then multiply that number by 7.",
            number("42"),
            kb,
        ),
        Task(
            "two-calc", t, "Compute 17 * 23, then subtract 91 from the result.", number("300"), calc
        ),
        Task("two-calc-div", t, "Compute 25 * 4, then divide the result by 5.", number("20"), calc),
        Task(
            "two-year",
            t,
            "What year is it now in UTC? Multiply that year by 2.",
            year_times_two,
            now,
        ),
        Task(
            "two-kb-add",
            t,
            "How many tools ship with the agent according to my notes? Add 10 to that number.",
            number("16"),
            kb,
        ),
        Task("direct-fr", n, "Translate 'thank you' into French.", words("merci"), None),
        Task("direct-es", n, "Say hello in Spanish.", words("hola"), None),
        Task("direct-opposite", n, "What is the opposite of 'hot'?", words("cold"), None),
        Task("direct-caps", n, "Write the word 'dog' in capital letters.", words("DOG"), None),
        Task("direct-zh", n, "请用英语说“谢谢”。", words("thank you", "thanks"), None),
    ]


TASKS = _tasks()
DATA = ROOT / "bench" / "data"
HOLDOUT = DATA / "local_eval_holdout.jsonl"
# DEVELOPMENT sets: their questions and failures were read while the code was built.
DEV_SETS = {
    "holdout": HOLDOUT,
    "fresh": DATA / "local_eval_fresh.jsonl",
    "unseen": DATA / "local_eval_unseen.jsonl",
    "final": DATA / "local_eval_final.jsonl",
}
# sets over their own notes folder: (questions, notes). The three blind sets are spent (each
# was run once, then read): development sets now. A new blind figure needs a new set.
NOTED_SETS = {
    "blind1": (DATA / "local_eval_blind.jsonl", DATA / "blind_notes"),
    "blind2": (DATA / "local_eval_blind2.jsonl", DATA / "blind2_notes"),
    "blind3": (DATA / "local_eval_blind3.jsonl", DATA / "blind3_notes"),
}
KB_VARIABLE = "REACT_AGENT_KB_DIR"
CHECKS: dict[str, Callable[..., Check]] = {
    "number": lambda values: number(*values),
    "words": lambda values: words(*values),
    "clock": clock,
    "weekday": weekday_in,
}


def load_tasks(path: Path) -> list[Task]:
    """Tasks from a JSON-lines file: name, kind, question, tool and a check, one of
    `{"number": [...]}`, `{"words": [...]}`, `{"clock": zone}`, `{"weekday": zone}`.
    A task without a tool (`tool` null) needs none."""
    tasks = []
    for number_, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        ((kind, argument),) = raw["check"].items()
        if kind not in CHECKS:
            raise SystemExit(f"{path}:{number_}: unknown check {kind!r}")
        check = CHECKS[kind](argument)
        tasks.append(Task(raw["name"], raw["kind"], raw["question"], check, raw.get("tool")))
    return tasks


SINGLE = ("arithmetic", "knowledge", "clock", "word_problem")
NO_TOOL = ("no-tool", "direct")

MODES: dict[str, dict[str, Any]] = {
    "chat": {"options": {"prompt_mode": "chat"}, "grammar": True},
    "completion": {"options": {}, "grammar": True},
    "agent": {"options": {}, "grammar": True},  # build_graph, its nodes and its run policies
    "baseline": {"options": {}, "grammar": False},  # no model (see the module docstring)
}


@dataclass
class Result:
    task: str
    kind: str
    mode: str
    model: str
    success: bool
    right_tool: bool
    ended: str  # answered | deadline | max_steps | invalid
    answer: str
    seconds: float
    steps: list[dict] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    invalid: int = 0
    path: str = "model"  # who wrote the answer: "model", or "code" (one line was all it could be)
    argument: str = ""  # who wrote the first call's input: "model", "code", or "" (no call)


def right(task: Task, ended: str, answer: str, steps: list[dict]) -> bool:
    """Answered with what the task expects. A question about the notes is right only when the
    notes were searched: another tool's words ("Open-Meteo" in the weather tool's error) must
    not pass for an answer from them."""
    searched = task.kind != "knowledge" or any(s["tool"] == "knowledge_search" for s in steps)
    return ended == "answered" and task.check(answer, steps) and searched


def scored(task: Task, mode: str, label: str, ended: str, answer: str, steps: list, **rest: Any):
    """A task's result (see `right`)."""
    return Result(
        task=task.name,
        kind=task.kind,
        mode=mode,
        model=label,
        success=right(task, ended, answer, steps),
        right_tool=(steps[0]["tool"] if steps else None) == task.tool,
        ended=ended,
        answer=answer,
        steps=steps,
        **rest,
    )


def run_agent_task(model: Any, tools: list, task: Task, mode: str, label: str) -> Result:
    """One run of the agent itself: `build_graph` with the embedded model's run policies."""
    from graph import build_graph

    agent = build_graph(
        model=model,
        tools=tools,
        protocol="text",
        max_steps=MAX_STEPS,
        answer_after=ANSWER_AFTER,
        max_tokens=STEP_TOKENS,
        run_timeout=RUN_DEADLINE,
        constrained_decoding="on",
        quoted_answers=QUOTED_ANSWERS,
    )
    started = time.monotonic()
    out = agent.invoke({"messages": [("user", task.question)]})
    seconds = time.monotonic() - started
    actions = [s for s in out["steps"] if s["kind"] == "action"]
    steps = [
        {"tool": s["tool"], "input": s["tool_input"], "observation": s["observation"]}
        for s in actions
    ]
    ended = {"answered": "answered", "timeout": "deadline", "max_steps": "max_steps"}.get(
        out["status"], "invalid"
    )
    answer = (out.get("answer") or "") if ended == "answered" else ""
    usage = [s["usage"] for s in out["steps"] if s.get("usage")]
    last = next((x for x in reversed(out["messages"]) if x.type == "ai"), None)
    meta = last.response_metadata if last is not None else {}
    by_code = meta.get("react_quoted") or meta.get("react_decided_by") == "code"
    first_call = next((x for x in out["messages"] if x.type == "ai" and x.tool_calls), None)
    argument = first_call.response_metadata.get("react_argument_by", "") if first_call else ""
    return scored(
        task,
        mode,
        label,
        ended,
        answer,
        steps,
        seconds=seconds,
        prompt_tokens=sum(u.get("input_tokens", 0) for u in usage),
        completion_tokens=sum(u.get("output_tokens", 0) for u in usage),
        invalid=sum(s["kind"] == "invalid" for s in out["steps"]),
        path="code" if by_code else "model",
        argument=argument,
    )


def run_baseline_task(tools: list, task: Task, mode: str, label: str) -> Result:
    """No model: the tool whose records share the most words with the question, called with
    the question as its argument; the answer is the result's first quotable line."""
    from graph.models.local.builtin_hints import hints_for
    from graph.protocols.text.grammar import tool_specs

    started = time.monotonic()
    asked = _words(task.question)
    best, tool = 0, None
    for candidate in tools:
        known = _words(candidate.description)
        for example in hints_for(candidate).examples:
            known |= _words(example.question)
        shared = len(asked & known)
        if shared > best:
            best, tool = shared, candidate
    steps: list[dict] = []
    answer, ended = "", "invalid"
    if tool is not None:
        hints = hints_for(tool)
        ((_, schema),) = tool_specs([tool])
        argument = hints.single_argument or next(iter(schema.get("properties") or {"input": 0}))
        tool_input = {argument: task.question}
        try:
            observation = str(tool.invoke(tool_input))
        except Exception as exc:
            observation = f"Error: {exc}"
        steps.append({"tool": tool.name, "input": tool_input, "observation": observation})
        quotes = quotable_lines([observation])
        answer, ended = (quotes[0] if quotes else observation), "answered"
    seconds = time.monotonic() - started
    argument = "code" if steps else ""
    return scored(
        task, mode, label, ended, answer, steps, seconds=seconds, path="code", argument=argument
    )


def _words(text: str) -> set[str]:
    """Lower-case words of three letters or more, and Chinese characters."""
    found = set(re.findall(r"[a-z]{3,}", text.casefold()))
    return found | set(re.findall(r"[\u3400-\u9fff]", text))


def run_task(model: Any, tools: list, task: Task, mode: str, label: str, grammar: bool) -> Result:
    """One run, the agent's loop and policies: answer budget, tokens per step, deadline."""
    by_name = {t.name: t for t in tools}
    messages: list[Any] = [
        SystemMessage(text_system_prompt(tools)),
        HumanMessage(task.question, id=f"q-{uuid.uuid4().hex[:8]}"),
    ]
    steps: list[dict] = []
    started = time.monotonic()
    deadline = started + RUN_DEADLINE
    ended, answer, usage_in, usage_out, invalid = "max_steps", "", 0, 0, 0
    for _ in range(MAX_STEPS):
        remaining = deadline - time.monotonic()
        if remaining <= 0.5:
            ended = "deadline"
            break
        results = sum(not s["observation"].startswith("Error: ") for s in steps)
        offered = tools if results < ANSWER_AFTER else []  # failed calls do not count
        options: dict[str, Any] = {"stop": ["Observation:"], "max_tokens": STEP_TOKENS}
        if grammar:  # quoted answers: right after an observation, the answer is its first line
            last = steps[-1] if steps and messages[-1].type == "tool" else None
            quotes = quotable_lines([last["observation"]]) if last else []
            if len(quotes) == 1 and not offered:  # the only answer allowed: no call needed
                ended, answer = "answered", quotes[0]
                break
            options |= request_options(grammar_for(offered, quotes=quotes))
        try:
            reply = model.bind_tools(offered).bind(**options).invoke(messages, timeout=remaining)
        except TimeoutError:
            ended = "deadline"
            break
        usage = reply.usage_metadata or {}
        usage_in += usage.get("input_tokens", 0)
        usage_out += usage.get("output_tokens", 0)
        step = parse_react(reply.text)
        if step.kind == "final":
            ended, answer = "answered", step.answer or ""
            break
        if (
            step.kind == "error"
            or step.tool not in by_name
            or not isinstance(step.tool_input, dict)
        ):
            invalid += 1
            error = step.error or f"unknown tool {step.tool!r} or bad input"
            messages += [
                AIMessage(reply.text),
                HumanMessage(
                    invalid_reply_observation(error, list(by_name)),
                    id=f"do-not-render-{uuid.uuid4().hex[:8]}",
                ),
            ]
            ended = "invalid"
            continue
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        try:
            observation = str(by_name[step.tool].invoke(step.tool_input))
        except Exception as exc:  # the agent turns tool failures into observations too
            observation = f"Error: {exc}"
        steps.append({"tool": step.tool, "input": step.tool_input, "observation": observation})
        messages += [
            AIMessage(
                step.thought,
                tool_calls=[{"id": call_id, "name": step.tool, "args": step.tool_input}],
            ),
            ToolMessage(observation, tool_call_id=call_id),
        ]
    return scored(
        task,
        mode,
        label,
        ended,
        answer,
        steps,
        seconds=time.monotonic() - started,
        prompt_tokens=usage_in,
        completion_tokens=usage_out,
        invalid=invalid,
    )


def summary(results: list[Result]) -> str:
    lines = [
        "| model | mode | all tasks | single-tool | two-step | no-tool | right first tool | "
        "median s | max s | mean steps | invalid |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = list(dict.fromkeys((r.model, r.mode) for r in results))
    for model, mode in keys:
        rows = [r for r in results if (r.model, r.mode) == (model, mode)]

        def rate(selected: list[Result]) -> str:
            if not selected:
                return "–"
            ok = sum(r.success for r in selected)
            return f"{ok}/{len(selected)} ({100 * ok / len(selected):.0f} %)"

        seconds = [r.seconds for r in rows]
        lines.append(
            f"| {model} | {mode} | {rate(rows)} | {rate([r for r in rows if r.kind in SINGLE])} | "
            f"{rate([r for r in rows if r.kind == 'two-step'])} | "
            f"{rate([r for r in rows if r.kind in NO_TOOL])} | "
            f"{sum(r.right_tool for r in rows)}/{len(rows)} | "
            f"{statistics.median(seconds):.1f} | {max(seconds):.1f} | "
            f"{statistics.mean(len(r.steps) for r in rows):.1f} | {sum(r.invalid for r in rows)} |"
        )
    return "\n".join(lines)


def by_path(results: list[Result]) -> str:
    """Accuracy by who wrote the answer (the model, or code: one line was all it could be) and
    by who wrote the first call's input (the model, or code: one input was all it could be,
    such as the whole question for a search)."""
    lines = [
        "| model | mode | answer by model | answer by code | input by model | input by code |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for model, mode in dict.fromkeys((r.model, r.mode) for r in results):
        ran = [r for r in results if (r.model, r.mode) == (model, mode)]
        cells = [
            _rate([r for r in ran if getattr(r, field) == who])
            for field in ("path", "argument")
            for who in ("model", "code")
        ]
        lines.append(f"| {model} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(rows: list[Result]) -> str:
    ok = sum(r.success for r in rows)
    return f"{ok}/{len(rows)}" + (f" ({100 * ok / len(rows):.0f} %)" if rows else "")


def by_kind(results: list[Result]) -> str:
    kinds = list(dict.fromkeys(r.kind for r in results))
    lines = ["| model | mode | " + " | ".join(kinds) + " |", "|---|---|" + "---:|" * len(kinds)]
    for model, mode in dict.fromkeys((r.model, r.mode) for r in results):
        cells = []
        for kind in kinds:
            rows = [r for r in results if (r.model, r.mode, r.kind) == (model, mode, kind)]
            cells.append(f"{sum(r.success for r in rows)}/{len(rows)}")
        lines.append(f"| {model} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rescore(path: Path) -> int:
    """The tables for a results file, with the tasks' current checks (the runs are not
    repeated; the clock's "year * 2" is checked against this year)."""
    by_name = {t.name: t for t in [*TASKS, *(t for p in DEV_SETS.values() for t in load_tasks(p))]}
    results = []
    for raw in json.loads(path.read_text())["results"]:
        result = Result(**raw)
        task = by_name.get(result.task)
        if task is not None:
            result.success = right(task, result.ended, result.answer, result.steps)
        results.append(result)
    print(summary(results) + "\n\n" + by_path(results) + "\n\n" + by_kind(results))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="agent", help=f"comma-separated: {', '.join(MODES)}")
    parser.add_argument(
        "--gguf", action="append", default=[], help="model file(s) (default: packaged)"
    )
    parser.add_argument("--base-url", default="", help="use a running llama.cpp server instead")
    parser.add_argument(
        "--tasks",
        default="builtin",
        help="development sets: builtin, holdout, fresh, unseen, final "
        "(bench/data/local_eval_*.jsonl), both (builtin and holdout), all (those five, over the "
        "shipped notes); blind1, blind2, blind3 (the spent blind sets, each over its own notes "
        "in bench/data); or a .jsonl path",
    )
    parser.add_argument(
        "--engine",
        choices=("in-process", "server"),
        default="in-process",
        help="the model in this process, as `react-agent ask` runs it (default), or a llama.cpp "
        "server (the `chat` mode always uses one)",
    )
    parser.add_argument("--only", default="", help="task kinds or names, comma-separated")
    parser.add_argument("--quick", action="store_true", help="15 tasks, every kind")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "local_eval.json"))
    parser.add_argument("--rescore", default="", help="only re-check the answers in this file")
    args = parser.parse_args()
    if args.rescore:
        return rescore(Path(args.rescore))
    if not args.base_url and not local_available():
        print("The local extra is not installed: uv sync --extra local", file=sys.stderr)
        return 2
    modes = [m for m in args.modes.split(",") if m]
    if args.tasks in NOTED_SETS:
        questions, notes = NOTED_SETS[args.tasks]
        tasks = load_tasks(questions)
        os.environ[KB_VARIABLE] = str(notes)  # the set's own notes
    elif args.tasks in ("builtin", "both", "all", *DEV_SETS):
        chosen = {
            "builtin": TASKS,
            **{name: load_tasks(path) for name, path in DEV_SETS.items()},
            "both": [*TASKS, *load_tasks(HOLDOUT)],
            "all": [*TASKS, *(t for path in DEV_SETS.values() for t in load_tasks(path))],
        }
        tasks = chosen[args.tasks]
    else:
        tasks = load_tasks(Path(args.tasks))
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t.kind in wanted or t.name in wanted]
    if args.quick:
        names = {
            "mul", "words-add", "zh-mul", "percent", "kb-count", "kb-storage", "kb-thread",
            "kb-zh-provider", "clock-utc", "clock-tokyo", "clock-zh", "two-calc", "two-kb-calc",
            "direct-fr", "direct-zh",
        }  # fmt: skip
        tasks = [t for t in TASKS if t.name in names]
    tools = load_tools(TOOL_NAMES)
    results: list[Result] = []
    servers = args.gguf or [None]
    meta: list[dict] = []
    for gguf in servers:
        server = None
        if args.base_url or modes == ["baseline"]:
            base_url, label = args.base_url or "http://127.0.0.1:9/v1", "server"
        elif args.engine == "server" or "chat" in modes:
            server = LocalServer(gguf, progress=None).start()
            base_url, label = server.base_url, server.model.name
            meta.append({"model": label, "startup_seconds": server.startup_seconds})
        else:  # the process's own model, as `react-agent ask` runs it
            stop_local_server()
            server = local_server(progress=None, model=gguf)
            base_url, label = server.base_url, server.model.name
            meta.append({"model": label, "startup_seconds": server.startup_seconds})
        try:
            for mode in modes:
                model = chat_model(base_url, **MODES[mode]["options"])
                for task in tasks:
                    if mode == "agent":
                        r = run_agent_task(model, tools, task, mode, label)
                    elif mode == "baseline":
                        r = run_baseline_task(tools, task, mode, label)
                    else:
                        r = run_task(model, tools, task, mode, label, MODES[mode]["grammar"])
                    results.append(r)
                    calls = [
                        f"{s['tool']} {json.dumps(s['input'], ensure_ascii=False)}" for s in r.steps
                    ]
                    print(
                        f"{label[:22]:<22} {mode:<9} {task.name:<15} "
                        f"{'ok ' if r.success else 'no '}{r.ended:<9} {r.seconds:5.1f} s "
                        f"{calls} -> {r.answer[:70]!r}",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            if server is not None:
                server.stop()
    print("\n" + summary(results) + "\n\n" + by_path(results) + "\n\n" + by_kind(results))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "servers": meta,
        "policies": {
            "answer_after": ANSWER_AFTER,
            "quoted_answers": QUOTED_ANSWERS,
            "step_tokens": STEP_TOKENS,
            "run_deadline": RUN_DEADLINE,
            "max_steps": MAX_STEPS,
        },
        "tools": list(TOOL_NAMES),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "python": platform.python_version(),
        },
        "results": [asdict(r) for r in results],
    }
    out.write_text(json.dumps(payload, indent=2, ensure_ascii=False))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
