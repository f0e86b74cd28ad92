"""What the embedded model knows about a tool beyond its schema: worked examples, and how its
argument relates to the question. Typed, and carried by the tool itself.

A small base model continues documents; a few finished records of a tool (question, the tool,
its input, its real output, the answer) teach it when to choose the tool and what to write as
its input. Any LangChain tool takes part by carrying hints in its metadata:

    from graph.models.local.hints import Example, ToolHints

    lookup = StructuredTool.from_function(
        ..., metadata={HINTS_KEY: ToolHints(
            examples=(Example("Where is order 42?", {"order": "42"}, "shipped", "It shipped."),),
            piece_argument="order",
        )},
    )

The built-in tools' hints are in `builtin_hints`, by tool name; a tool's own metadata wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

HINTS_KEY = "react_agent_hints"


@dataclass(frozen=True)
class Step:
    """One call in a worked example: the tool, its input, and its real output."""

    tool: str
    tool_input: Mapping[str, Any]
    observation: str


@dataclass(frozen=True)
class Example:
    """A worked record: the question, the calls made for it (none: a direct answer), the
    answer. `Example(question, input, observation, answer)` is a one-call record of the tool
    that declares it (`tool` left empty)."""

    question: str
    tool_input: Mapping[str, Any] | None = None
    observation: str = ""
    answer: str = ""
    tool: str = ""
    more: tuple[Step, ...] = ()  # further calls, for a question that needs several

    def steps(self, default_tool: str) -> tuple[Step, ...]:
        if self.tool_input is None:
            return self.more
        first = Step(self.tool or default_tool, self.tool_input, self.observation)
        return (first, *self.more)


@dataclass(frozen=True)
class ToolHints:
    """How the embedded model uses one tool.

    - `examples`: worked records shown to the model (the tool's real output layout);
    - `question_argument`: takes the user's whole question (a search ranked by its words);
      code fills it, and the step says so;
    - `piece_argument`: copied from the question (a place, a title): only its pieces;
    - `arithmetic_argument`: an expression over the question's numbers, operators,
      parentheses and a few functions;
    - `accepts`: for a piece argument, which pieces of the question the tool can use (a place
      the clock knows); the grammar then offers only those, when there are any;
    - `reads`: for an arithmetic argument, what the tool makes of a piece of the question (its
      result), None when it cannot use it; the argument is then a piece the tool reads, when
      the question has one, and code writes it when it is the only one.
    """

    examples: tuple[Example, ...] = ()
    question_argument: str | None = None
    piece_argument: str | None = None
    arithmetic_argument: str | None = None
    accepts: Callable[[str], bool] | None = None
    reads: Callable[[str], str | None] | None = None

    @property
    def single_argument(self) -> str | None:
        """The one argument the model writes as plain text (the record shows it bare)."""
        return self.question_argument or self.piece_argument or self.arithmetic_argument


def tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        return str(tool.get("function", tool).get("name", ""))
    return str(getattr(tool, "name", "") or getattr(tool, "__name__", ""))
