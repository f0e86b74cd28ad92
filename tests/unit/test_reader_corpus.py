"""The reader against the corpus of real replies and peer frameworks' parser tests.

`tests/data/react_replies/cases.jsonl` holds one case per line: the reply text, the enabled
tools (name -> argument -> JSON type, `?` marking an optional argument), the expected step and
the source it came from. Most replies are verbatim outputs of real models quoted in public
issue trackers and published agent logs; the rest re-express other frameworks' parser tests
(LangChain, LlamaIndex, CrewAI, smolagents, Haystack, NeMo Agent Toolkit, DB-GPT) as data, with
the expected value this reader's rules give (a case's `note` says where that differs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool

from graph.protocols.text.reader import ReactStep, parse_react

CASES_FILE = Path(__file__).resolve().parents[1] / "data" / "react_replies" / "cases.jsonl"


def load_cases() -> list[dict[str, Any]]:
    with CASES_FILE.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def make_tools(spec: dict[str, dict[str, str]]) -> list[BaseTool]:
    """StructuredTools from the corpus's simple schemas (`"type"` or `"type?"` per argument)."""
    tools: list[BaseTool] = []
    for name, params in spec.items():
        properties = {p: {"type": t.rstrip("?")} for p, t in params.items()}
        required = [p for p, t in params.items() if not t.endswith("?")]
        schema = {"type": "object", "properties": properties, "required": required}
        tools.append(
            StructuredTool(name=name, description=name, args_schema=schema, func=lambda **_: "")
        )
    return tools


def matches(step: ReactStep, expect: dict[str, Any]) -> bool:
    """A step is right when its kind, tool and input (or answer) are exactly the expected ones;
    an expected error may also require words in the message."""
    if step.kind != expect["kind"]:
        return False
    if step.kind == "action":
        return step.tool == expect["tool"] and step.tool_input == expect["input"]
    if step.kind == "final":
        return (step.answer or "").strip() == expect["answer"].strip()
    return expect.get("error_contains", "") in (step.error or "")


CASES = load_cases()


def test_corpus_is_large_and_mostly_real() -> None:
    real = [c for c in CASES if c["origin"].startswith("real")]
    assert len(CASES) >= 200
    assert len(real) * 2 > len(CASES)
    assert len({c["id"] for c in CASES}) == len(CASES)
    assert all(c["source"].startswith("https://") for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reader_corpus(case: dict[str, Any]) -> None:
    step = parse_react(case["reply"], make_tools(case["tools"]))
    assert matches(step, case["expect"]), (
        f"{case['id']} ({case['source']}): got kind={step.kind} tool={step.tool!r} "
        f"input={step.tool_input!r} answer={step.answer!r} error={step.error!r}; "
        f"want {case['expect']}"
    )
