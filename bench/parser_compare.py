"""Our text-protocol reader against other frameworks' parsers, on the same corpus of replies.

    uv run --group peers python bench/parser_compare.py           # accuracy table
    uv run --group peers python bench/parser_compare.py --speed   # also: degenerate 100 kB replies
    uv run --group peers python bench/parser_compare.py --misses ours-tools   # list one's misses

The corpus is `tests/data/react_replies/cases.jsonl` (real model replies and the peers' own
parser tests, see its README). Parsers scored:

* `ours + tools`: `parse_react(reply, tools)`, as the agent calls it;
* `ours, no tools`: `parse_react(reply)`, names and inputs as written;
* LangChain `ReActSingleInputOutputParser` and `ReActJsonSingleInputOutputParser`
  (`langchain-classic`), LlamaIndex `ReActOutputParser` (`llama-index-core`), when installed.

A case is right when the kind (action, final answer, error) matches and, for an action, the tool
name is exactly the enabled tool's and the input equals the expected arguments; for an answer,
the text matches (whitespace at the ends ignored). To be fair to parsers that return raw input
text, every parser's input (ours without tools included) is shaped to the tool's schema by our
own shaping before the comparison, so only finding the right tool and input counts. A parser
that raises has answered "error".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from test_reader_corpus import load_cases, make_tools, matches  # noqa: E402

from graph.protocols.text.reader import ReactStep, parse_react  # noqa: E402
from graph.protocols.text.toolset import Toolset  # noqa: E402

Outcome = tuple[str, Any, Any]  # (kind, tool or None, input or answer)
Parser = Callable[[str], Outcome]


def _ours(with_tools: bool) -> Callable[[str, list[Any]], Outcome]:
    def run(reply: str, tools: list[Any]) -> Outcome:
        step = parse_react(reply, tools if with_tools else None)
        if step.kind == "action":
            return "action", step.tool, step.tool_input
        return step.kind, None, step.answer

    return run


def _langchain(json_parser: bool) -> Callable[[str, list[Any]], Outcome] | None:
    try:
        from langchain_classic.agents.output_parsers.react_json_single_input import (
            ReActJsonSingleInputOutputParser,
        )
        from langchain_classic.agents.output_parsers.react_single_input import (
            ReActSingleInputOutputParser,
        )
        from langchain_core.agents import AgentFinish
    except ImportError:
        return None
    parser = ReActJsonSingleInputOutputParser() if json_parser else ReActSingleInputOutputParser()

    def run(reply: str, _tools: list[Any]) -> Outcome:
        result = parser.parse(reply)
        if isinstance(result, AgentFinish):
            return "final", None, str(result.return_values.get("output", ""))
        return "action", result.tool, result.tool_input

    return run


def _llamaindex() -> Callable[[str, list[Any]], Outcome] | None:
    try:
        from llama_index.core.agent.react.output_parser import ReActOutputParser
        from llama_index.core.agent.react.types import ActionReasoningStep
    except ImportError:
        return None
    parser = ReActOutputParser()

    def run(reply: str, _tools: list[Any]) -> Outcome:
        step = parser.parse(reply)
        if isinstance(step, ActionReasoningStep):
            return "action", step.action, step.action_input
        return "final", None, str(getattr(step, "response", ""))

    return run


def score(run: Callable[[str, list[Any]], Outcome], case: dict[str, Any]) -> bool:
    tools = make_tools(case["tools"])
    try:
        kind, tool, value = run(case["reply"], tools)
    except Exception:
        kind, tool, value = "error", None, None
    if kind == "action":
        toolset = Toolset(tools)
        # an action naming no enabled tool is refused by any executor: an error
        shaped, problem = toolset.shape(tool, value) if tool in toolset.specs else ({}, "?")
        if problem is not None:
            kind, tool, value = "error", None, None
        else:
            value = shaped
    step = ReactStep(
        kind=kind,  # type: ignore[arg-type]
        tool=tool,
        tool_input=value if kind == "action" else None,
        answer=value if kind == "final" else None,
        error="error" if kind == "error" else None,
    )
    expect = dict(case["expect"])
    expect.pop("error_contains", None)  # peers' messages differ; the kind is what is scored
    return matches(step, expect)


def parsers() -> dict[str, Callable[[str, list[Any]], Outcome]]:
    found: dict[str, Callable[[str, list[Any]], Outcome] | None] = {
        "ours + tools": _ours(True),
        "ours, no tools": _ours(False),
        "LangChain ReAct": _langchain(False),
        "LangChain ReAct JSON": _langchain(True),
        "LlamaIndex ReAct": _llamaindex(),
    }
    missing = [name for name, run in found.items() if run is None]
    if missing:
        print(f"not installed (run with `uv run --group peers`): {', '.join(missing)}\n")
    return {name: run for name, run in found.items() if run is not None}


def table(
    cases: list[dict[str, Any]], runs: dict[str, Callable[[str, list[Any]], Outcome]]
) -> dict:
    results = {name: [score(run, case) for case in cases] for name, run in runs.items()}
    groups: dict[str, list[int]] = defaultdict(list)
    for index, case in enumerate(cases):
        groups[f"class: {case['class']}"].append(index)
        origin = "real" if case["origin"].startswith("real") else "peer-test"
        groups[f"origin: {origin}"].append(index)
    names = list(runs)
    print(f"{len(cases)} cases\n")
    print("| cases | n | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))

    def row(label: str, indices: list[int]) -> None:
        cells = [f"{100 * sum(results[n][i] for i in indices) / len(indices):.1f} %" for n in names]
        print(f"| {label} | {len(indices)} | " + " | ".join(cells) + " |")

    row("**all**", list(range(len(cases))))
    for label in sorted(groups, key=lambda g: (not g.startswith("origin"), g)):
        row(label, groups[label])
    return results


def speed() -> None:
    """Degenerate replies of about 100 kB (and the issue's two cases): best of 5, milliseconds."""
    n = 100_000
    shapes = {
        "<think> x 40,000 (280 kB)": "<think>" * 40_000,
        "Action Input: + { x 40,000": "Action: search\nAction Input: " + "{" * 40_000,
        "{ x 100k": "{" * n,
        "newlines": "\n" * n,
        "Thought: lines": "Thought: x\n" * (n // 11),
        "Action: lines": "Action: x\n" * (n // 10),
        "Observation: lines": "Observation: x\n" * (n // 15),
        "fence lines": "```\n" * (n // 4),
        "answer + fence lines + label": "Final Answer: x\n" + "```\n" * (n // 4) + "Action: y",
        "backticks": "`" * n,
        "quotes": '"' * n,
        "colons": ":" * n,
        "hashes": "#" * n,
        "broken JSON input": "Action: search\nAction Input: {'q': '" + "x, " * (n // 3),
        "mid-line labels": "x Action: " * (n // 10),
        "<tool> x 16k": "<tool>" * (n // 6),
        "prose answer": "word " * (n // 5),
        "< x 100k": "<" * n,
        "harmony messages": "<|channel|>analysis<|message|>x<|end|>" * (n // 38),
        "trailing special tokens": "Final Answer: x" + " <|im_end|>\n" * (n // 12),
    }
    tools = make_tools({"search": {"query": "string"}})
    print("\n| reply | chars | ms, no tools | ms, tools | kind |")
    print("|---|---:|---:|---:|---|")
    table_rows: list[list[float]] = []
    for text in shapes.values():  # warm up: compiled patterns and caches are not the subject
        parse_react(text[:1000], tools)
    for label, text in shapes.items():
        timings = []
        for with_tools in (None, tools):
            samples = []
            for _ in range(5):
                start = time.perf_counter()
                step = parse_react(text, with_tools)
                samples.append(time.perf_counter() - start)
            timings.append(min(samples) * 1000)
        table_rows.append(timings)
        print(f"| {label} | {len(text):,} | {timings[0]:.2f} | {timings[1]:.2f} | {step.kind} |")
    worst = max(max(row) for row in table_rows)
    print(f"\nslowest: {worst:.2f} ms (best of 5 each); load average {_load()}")


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--speed", action="store_true", help="also time degenerate replies")
    options.add_argument("--misses", metavar="PARSER", help="list the cases PARSER gets wrong")
    args = options.parse_args()
    cases = load_cases()
    runs = parsers()
    results = table(cases, runs)
    if args.misses:
        wanted = "".join(ch for ch in args.misses.lower() if ch.isalnum())
        name = next(
            (n for n in runs if "".join(c for c in n.lower() if c.isalnum()) == wanted), None
        )
        for ok, case in zip(results.get(name, []), cases, strict=False):
            if not ok:
                print(f"- {case['id']} [{case['class']}]: want {json.dumps(case['expect'])[:120]}")
    if args.speed:
        speed()
    print(f"\nstatistics: python {sys.version.split()[0]}; ", end="")
    print(
        f"{statistics.mean([len(c['reply']) for c in cases]):.0f} characters per reply on average"
    )


if __name__ == "__main__":
    main()
