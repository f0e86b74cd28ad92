"""Goal 5: prompt size per request for the seed task, under both protocols, vs the prebuilt.

"What's the weather like in Beijing and Guangzhou?" with a fake `weather` tool (the real tool's
name, description and argument schema; a fixed one-line observation per city). The scripted model
records every request. Per request we count characters:

- messages: every message's text content, plus each tool call's name and JSON arguments
  (system prompt shown separately; ids and other metadata not counted);
- tool schemas (native only): the JSON of the `tools` list sent with the request.

Under the text protocol each request must be the previous one plus that step's own text (the
reply the model wrote and the observation it got): printed per step as growth vs own text.

    uv run python bench/prompt_size.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, StructuredTool

from bench.common import build_ours, build_prebuilt, check_run, run_config
from bench.doubles import USAGE, BenchModel, Request
from bench.report import table, write_json

QUESTION = "What's the weather like in Beijing and Guangzhou?"
OBSERVATIONS = {
    "Beijing": (
        "Beijing (China, Beijing), 2025-04-26 15:00 GMT+8: partly cloudy, 23.4°C, feels like "
        "23.1°C, humidity 43%, wind Southwest 2.7 m/s, precipitation 0.0 mm, no alerts"
    ),
    "Guangzhou": (
        "Guangzhou (China, Guangdong), 2025-04-26 15:00 GMT+8: slight rain, 24.2°C, feels like "
        "27.1°C, humidity 79%, wind Northeast 1.3 m/s, precipitation 0.4 mm, no alerts"
    ),
}
FINAL = (
    "Beijing: partly cloudy, 23.4°C (feels like 23.1°C), humidity 43%, southwest wind 2.7 m/s. "
    "Guangzhou: slight rain, 24.2°C (feels like 27.1°C), humidity 79%, northeast wind 1.3 m/s."
)
TEXT_REPLIES = [
    "Thought: I need the current weather in both cities; first Beijing.\nAction: weather\n"
    'Action Input: {"location": "Beijing"}',
    'Thought: Now Guangzhou.\nAction: weather\nAction Input: {"location": "Guangzhou"}',
    f"Thought: I have the weather in both cities.\nFinal Answer: {FINAL}",
]


def weather_tool() -> BaseTool:
    """A fake `weather`: the real tool's name, description and schema, canned observations."""

    def weather(location: str) -> str:
        return OBSERVATIONS.get(location, f"No weather station found for {location!r}.")

    async def aweather(location: str) -> str:
        return weather(location)

    try:
        from tools import load_tools

        real = load_tools(["weather"])[0]
        return StructuredTool.from_function(
            func=weather,
            coroutine=aweather,
            name=real.name,
            description=real.description,
            args_schema=real.args_schema,
        )
    except Exception:  # the tools package changed: a stand-in with the same shape
        return StructuredTool.from_function(
            func=weather,
            coroutine=aweather,
            name="weather",
            description="Get the current weather for one city or place.",
        )


def native_policy(parallel: bool) -> Callable[[list[BaseMessage]], AIMessage]:
    cities = list(OBSERVATIONS)

    def policy(messages: list[BaseMessage]) -> AIMessage:
        step = sum(1 for m in messages if m.type == "ai")
        todo = [cities] if parallel else [[c] for c in cities]
        if step >= len(todo):
            return AIMessage(content=FINAL, usage_metadata=USAGE)
        calls = [
            {
                "name": "weather",
                "args": {"location": city},
                "id": f"call_{step}_{i}",
                "type": "tool_call",
            }
            for i, city in enumerate(todo[step])
        ]
        return AIMessage(content="", tool_calls=calls, usage_metadata=USAGE)

    return policy


def text_policy(messages: list[BaseMessage]) -> AIMessage:
    step = sum(1 for m in messages if m.type == "ai")
    return AIMessage(content=TEXT_REPLIES[min(step, len(TEXT_REPLIES) - 1)], usage_metadata=USAGE)


def message_chars(message: BaseMessage) -> int:
    content = message.content
    if isinstance(content, str):
        size = len(content)
    else:
        size = sum(len(p if isinstance(p, str) else p.get("text", "")) for p in content)
    for call in getattr(message, "tool_calls", None) or []:
        size += len(call["name"]) + len(json.dumps(call["args"], ensure_ascii=False))
    return size


def describe(requests: list[Request]) -> list[dict[str, Any]]:
    rows = []
    previous: list[BaseMessage] | None = None
    for number, request in enumerate(requests, 1):
        system = sum(message_chars(m) for m in request.messages if m.type == "system")
        conversation = sum(message_chars(m) for m in request.messages if m.type != "system")
        row: dict[str, Any] = {
            "request": number,
            "messages": len(request.messages),
            "system_chars": system,
            "conversation_chars": conversation,
            "message_chars": system + conversation,
            "tool_schema_chars": len(json.dumps(request.tools, ensure_ascii=False))
            if request.tools
            else 0,
            "stop": request.stop,
            "per_message": [[m.type, message_chars(m)] for m in request.messages],
        }
        if previous is not None:
            new = request.messages[len(previous) :]
            kept = request.messages[: len(previous)]
            row["prefix_stable"] = len(kept) == len(previous) and all(
                a.type == b.type and a.content == b.content
                for a, b in zip(kept, previous, strict=True)
            )
            row["growth_chars"] = row["message_chars"] - rows[-1]["message_chars"]
            row["new_text_chars"] = sum(message_chars(m) for m in new)
        rows.append(row)
        previous = request.messages
    return rows


def run(scenario: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    kind, protocol, parallel = {
        "prebuilt native, parallel calls": ("prebuilt", "native", True),
        "ours native, parallel calls": ("ours", "native", True),
        "prebuilt native, one call per step": ("prebuilt", "native", False),
        "ours native, one call per step": ("ours", "native", False),
        "ours text": ("ours", "text", False),
    }[scenario]
    policy = text_policy if protocol == "text" else native_policy(parallel)
    model = BenchModel(policy, record=True)
    tools = [weather_tool()]
    agent = (
        build_prebuilt(model, tools)
        if kind == "prebuilt"
        else build_ours(model, tools, protocol=protocol, iterations=5)
    )
    out = agent.invoke({"messages": [("user", QUESTION)]}, run_config(kind))
    check_run(out, kind, 2)
    rows = describe(model.requests)
    if protocol == "text":  # own text of step k: the reply the model wrote + its observation
        for k, row in enumerate(rows[1:], 1):
            observation = next(
                m for m in model.requests[k].messages[len(model.requests[k - 1].messages) :][1:]
            )
            row["own_text_chars"] = len(TEXT_REPLIES[k - 1]) + message_chars(observation)
            row["grows_by_own_text_only"] = (
                row["prefix_stable"] and row["growth_chars"] == row["own_text_chars"]
            )
    answer = out.get("answer") or out["messages"][-1].content
    return rows, {"answer_ok": answer.strip() == FINAL, "request_count": len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="same run (it is already quick)")
    parser.parse_args()
    scenarios = [
        "prebuilt native, parallel calls",
        "ours native, parallel calls",
        "prebuilt native, one call per step",
        "ours native, one call per step",
        "ours text",
    ]
    results: dict[str, Any] = {}
    step_rows = []
    totals = []
    for scenario in scenarios:
        rows, info = run(scenario)
        results[scenario] = {"requests": rows, **info}
        for row in rows:
            step_rows.append(
                [
                    scenario,
                    row["request"],
                    row["messages"],
                    row["system_chars"],
                    row["conversation_chars"],
                    row["message_chars"],
                    row["tool_schema_chars"],
                    row.get("growth_chars", "-"),
                    row.get("new_text_chars", "-"),
                    row.get("own_text_chars", "-"),
                    {True: "yes", False: "NO"}.get(row.get("prefix_stable"), "-"),
                ]
            )
        sent = sum(r["message_chars"] + r["tool_schema_chars"] for r in rows)
        totals.append([scenario, len(rows), sum(r["message_chars"] for r in rows), sent])
        results[scenario]["total_chars_sent"] = sent
    print(
        f'prompt size: "{QUESTION}", observations {len(OBSERVATIONS["Beijing"])} and '
        f"{len(OBSERVATIONS['Guangzhou'])} characters\n"
    )
    print(
        table(
            [
                "scenario",
                "request",
                "messages",
                "system",
                "conversation",
                "all messages",
                "tool schemas",
                "growth",
                "new messages",
                "own text",
                "prefix kept",
            ],
            step_rows,
        )
    )
    base = {s[0]: s[3] for s in totals}
    print()
    rows = []
    for scenario, count, messages, sent in totals:
        ref = (
            base["prebuilt native, parallel calls"]
            if "parallel" in scenario
            else base["prebuilt native, one call per step"]
        )
        rows.append([scenario, count, messages, sent, f"{sent / ref:.2f}×"])
    print(
        table(
            [
                "scenario",
                "requests",
                "message chars, all requests",
                "+ tool schemas (chars sent)",
                "vs prebuilt",
            ],
            rows,
        )
    )
    text_rows = results["ours text"]["requests"][1:]
    ok = all(r.get("grows_by_own_text_only") for r in text_rows)
    print("\ntext protocol, growth per step (chars of request k minus request k-1):")
    for r in text_rows:
        print(
            f"  request {r['request']}: +{r['growth_chars']} chars; own text of step "
            f"{r['request'] - 1} (reply as written + observation) = {r['own_text_chars']}; "
            f"earlier messages unchanged: {'yes' if r['prefix_stable'] else 'NO'}"
        )
    print(f"  → each step grows by its own text only: {'yes' if ok else 'NO'}")
    print(
        "\n'vs prebuilt': characters sent over the whole run (messages + tool schemas) relative "
        "to the prebuilt agent doing the same calls (ours text: vs the prebuilt with one call "
        "per step, the same 3 requests). "
        "Our native system prompt is in 'system'; the prebuilt sends none by default."
    )
    path = write_json(
        "prompt_size",
        {"question": QUESTION, "text_grows_by_own_text_only": ok, "results": results},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
