"""Worked examples: where they come from, which ones a question gets, how they are written.

A small base model does not follow instructions; it continues documents. Shown a few finished
question → thought → action → observation → answer records, it writes the next record the
same way, so the examples *are* the protocol. Three things decide whether that works, and
each has its place here:

- the examples show each tool's real output layout, so the model finds the answer in a real
  observation where it found it in the example's. Each tool declares its own examples next to
  its definition (`EXAMPLES = [...]` in the tool's module, or `metadata={"examples": [...]}`),
  where they change together with the tool's output;
- the right examples are in front of the model: with many tools, the ones whose questions look
  most like this question (`selection.pick_examples`), the closest last, right before the
  question, where a small model looks;
- observations are easy to copy from: one line per entry, no blank lines, bounded
  (`observation_text`), the same for examples and real results.

An example is a mapping: `question`, `input` (the Action Input), `observation`, `answer`
(optional after an observation: then what a quoted answer would be, the observation's first
line that says something), optional `thought` and `final_thought`, optional `tool` (default:
the tool declaring it); or, for several tools in sequence, `steps: [{"tool", "input",
"observation", "thought"?}, ...]`.
An example is offered only when all its tools are.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.protocols.text.observations import QUOTED_THOUGHT, observation_text, quotable_lines

FINAL_THOUGHT = QUOTED_THOUGHT  # the records show the thought a forced answer gets

# No tool: a question the model can answer from the question itself.
DIRECT_EXAMPLES: tuple[Mapping[str, Any], ...] = (
    {
        "question": "Translate 'good morning' into French.",
        "thought": "This needs no tool.",
        "answer": "Bonjour.",
    },
    {
        "question": "你好，你是谁？",
        "thought": "This needs no tool.",
        "answer": "你好！我是一个可以使用工具的助手。",
    },
    {
        "question": "What is the plural of 'mouse'?",
        "thought": "This needs no tool.",
        "answer": "Mice.",
    },
)


@dataclass(frozen=True)
class Step:
    tool: str
    tool_input: dict[str, Any]
    observation: str
    thought: str = ""


@dataclass(frozen=True)
class Example:
    question: str
    answer: str
    steps: tuple[Step, ...] = ()
    thought: str = ""  # the thought before the answer (after the last observation)
    source: str = ""  # the tool that declared it ("" for the built-in direct examples)
    hint: str = ""  # what the declaring tool is for (its description's first sentence)

    @property
    def tools(self) -> frozenset[str]:
        return frozenset(step.tool for step in self.steps)


@dataclass
class ExamplePool:
    """The examples offered with a set of tools, in declaration order."""

    examples: list[Example] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.examples)


def make_example(raw: Mapping[str, Any], default_tool: str = "", hint: str = "") -> Example:
    """An `Example` from the mapping a tool declares (see the module docstring)."""
    steps: list[Step] = []
    if raw.get("steps"):
        for item in raw["steps"]:
            steps.append(
                Step(
                    tool=str(item.get("tool") or default_tool),
                    tool_input=dict(item.get("input") or {}),
                    observation=str(item.get("observation", "")),
                    thought=str(item.get("thought", "")),
                )
            )
    elif "input" in raw:
        steps.append(
            Step(
                tool=str(raw.get("tool") or default_tool),
                tool_input=dict(raw.get("input") or {}),
                observation=str(raw.get("observation", "")),
                thought=str(raw.get("thought", "")),
            )
        )
    thought = str(raw.get("final_thought") or ("" if steps else raw.get("thought", "")))
    return Example(
        question=str(raw["question"]),
        answer=str(raw["answer"] if "answer" in raw or not steps else _quoted(steps[-1])),
        steps=tuple(steps),
        thought=thought,
        source=default_tool,
        hint=hint,
    )


def _quoted(step: Step) -> str:
    """An example's answer when it gives none: what a quoted answer would be."""
    quotes = quotable_lines([step.observation])
    if not quotes:
        raise ValueError("an example without an answer needs an observation to quote")
    return quotes[0]


def declared_examples(tool: Any) -> list[Mapping[str, Any]]:
    """What a tool declares: `metadata["examples"]`, else its module's `EXAMPLES` (only a module
    that is already imported is read: examples never cause an import)."""
    metadata = getattr(tool, "metadata", None) or {}
    if isinstance(metadata, Mapping) and metadata.get("examples"):
        return list(metadata["examples"])
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    found = getattr(module, "EXAMPLES", None) if module is not None else None
    if not isinstance(found, (list, tuple)):
        return []
    name = getattr(tool, "name", "")
    return [e for e in found if isinstance(e, Mapping) and e.get("tool", name) == name]


NOT_FOR_TOOL = -1.0  # an affinity that leaves the tool's examples out (see `tool_affinity`)


def tool_affinity(tool: Any, question: str) -> float:
    """How much `question` is about what `tool` holds (-1..1), by the tool's own declaration:
    `metadata={"affinity": callable}` or `AFFINITY = callable` in its module; 0 without one or
    when it fails (picking examples never fails a request). A negative value (`NOT_FOR_TOOL`)
    says the question cannot be for the tool: the calculator and a question without a number."""
    metadata = getattr(tool, "metadata", None) or {}
    judge = metadata.get("affinity") if isinstance(metadata, Mapping) else None
    if judge is None:
        function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
        module = sys.modules.get(getattr(function, "__module__", "") or "")
        judge = getattr(module, "AFFINITY", None) if module is not None else None
    if not callable(judge):
        return 0.0
    try:
        value = float(judge(question))
    except Exception:  # a tool's judgement is advice: never a failed request
        return 0.0
    return min(max(value, NOT_FOR_TOOL), 1.0) if value == value else 0.0


def tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        function = tool.get("function", tool)
        return str(function.get("name", ""))
    return str(getattr(tool, "name", "") or getattr(tool, "__name__", ""))


def example_pool(tools: Sequence[Any], *, direct: bool = True) -> ExamplePool:
    """Every example of these tools whose tools are all among them, and the direct ones."""
    names = {tool_name(t) for t in tools}
    # The direct examples first: in a prompt of all examples the tools' records stand closer
    # to the question, and a question like none of them gets a direct answer next to it.
    pool: list[Example] = [make_example(raw) for raw in DIRECT_EXAMPLES] if direct else []
    seen: set[str] = set()
    for tool in tools:
        hint = first_sentence(_description(tool))
        for raw in declared_examples(tool):
            try:
                example = make_example(raw, tool_name(tool), hint)
            except (KeyError, TypeError, ValueError):
                continue  # a malformed example is left out, never a failed request
            if example.tools <= names and example.question not in seen:
                seen.add(example.question)
                pool.append(example)
    return ExamplePool(pool)


# -- rendering -------------------------------------------------------------------------------


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def render_step(thought: str, tool: str, tool_input: Any, observation: str | None) -> str:
    arguments = (
        json.dumps(tool_input, ensure_ascii=False)
        if not isinstance(tool_input, str)
        else tool_input
    )
    lines = [
        f"Thought: {one_line(thought) or f'I should use {tool}.'}",
        f"Action: {tool}",
        f"Action Input: {arguments}",
    ]
    if observation is not None:
        lines.append(f"Observation: {observation_text(observation)}")
    return "\n".join(lines)


def render_final(thought: str, answer: str) -> str:
    return f"Thought: {one_line(thought) or FINAL_THOUGHT}\nFinal Answer: {one_line(answer)}"


def render_example(example: Example) -> str:
    parts = [f"Question: {one_line(example.question)}"]
    for step in example.steps:
        parts.append(render_step(step.thought, step.tool, step.tool_input, step.observation))
    parts.append(render_final(example.thought, example.answer))
    return "\n".join(parts)


def _description(tool: Any) -> str:
    if isinstance(tool, Mapping):
        return str(tool.get("function", tool).get("description", ""))
    return str(getattr(tool, "description", "") or "")


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", one_line(text), maxsplit=1)[0]


def render_tools(tools: Iterable[Any]) -> str:
    """One line per tool: its name and the first sentence of its description."""
    lines = []
    for tool in tools:
        first = first_sentence(_description(tool))
        lines.append(f"- {tool_name(tool)}: {first}" if first else f"- {tool_name(tool)}")
    return "\n".join(lines)
