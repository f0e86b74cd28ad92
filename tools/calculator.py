"""A safe calculator: arithmetic parsed with `ast`, never `eval` of raw text.

Models are bad at arithmetic and good at writing expressions, so this is usually the first tool
a ReAct agent reaches for. Only numbers, arithmetic operators, parentheses and an allow-list of
math functions and constants are evaluated; anything else is refused with a message the model can
act on. The evaluator, with the bounds that keep any expression fast (no huge integers built
while holding the GIL), lives in `tools/safe_eval.py`; this module is the tool.
"""

from __future__ import annotations

import ast

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools.math_words import to_expression
from tools.number_mentions import mentions_numbers
from tools.safe_eval import FUNCTIONS, MAX_EXPRESSION_CHARS, CalculatorError, evaluate

__all__ = ["CalculatorError", "CalculatorInput", "calculator", "evaluate", "question_arithmetic"]

MAX_RESULT_CHARS = 1000  # a result is at most 1e300 (301 digits); a refusal quotes <= 500 chars


def _format(value: int | float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.12g}"


class CalculatorInput(BaseModel):
    expression: str = Field(
        description=(
            "An arithmetic expression, e.g. '17 * 23' or 'sqrt(2) * (3 + 4) ** 2'; arithmetic "
            "in words also works ('15 percent of 80', 'the square root of 144', '17乘以23')."
        )
    )


def _calculate(expression: str) -> str:
    """The result on the first line (what an answer quotes). An expression is evaluated as
    written; only one that is not (words, a question around it) is read as words, and then how
    it was read is on the second line, so a wrong reading shows."""
    reading = None
    try:
        value = evaluate(expression)
    except CalculatorError as exc:
        if len(expression) <= MAX_EXPRESSION_CHARS:
            reading = to_expression(expression)
        try:
            value = evaluate(reading) if reading else None
        except CalculatorError:
            value = None
        if value is None:
            shown = expression
            if len(shown) > MAX_EXPRESSION_CHARS:
                shown = shown[: MAX_EXPRESSION_CHARS - 1] + "…"
            raise ToolException(f"Cannot calculate '{shown}': {exc}.") from None
    result = _format(value)
    if len(result) > MAX_RESULT_CHARS:  # cannot happen with the 1e300 limit; kept as a guard
        result = result[:MAX_RESULT_CHARS] + f" [cut at {MAX_RESULT_CHARS} characters]"
    return f"{result}\n(read as {reading})" if reading else result


async def _acalculate(expression: str) -> str:
    return _calculate(expression)


calculator = StructuredTool.from_function(
    func=_calculate,
    coroutine=_acalculate,
    name="calculator",
    description=(
        "Evaluate an arithmetic expression exactly. Use it for any calculation instead of "
        "doing the arithmetic yourself. Supports + - * / // % ** (or ^), parentheses, "
        f"the functions {', '.join(FUNCTIONS)}, the constants pi and e, and arithmetic in "
        "English or Chinese words."
    ),
    args_schema=CalculatorInput,
)


def question_arithmetic(question: str) -> str | None:
    """The arithmetic a question states from end to end, as an expression: "(45 + 55) * 12 / 8
    = ?", "what is seven to the power of four" (`7 ** 4`), "一百二十八除以八是多少" (`128 / 8`).
    None when the question is not arithmetic throughout (a word problem, a question about
    something else) or holds no operation ("what is 42?")."""
    text = question.strip()
    if len(text) > MAX_EXPRESSION_CHARS:
        return None
    expression = to_expression(text) or text.rstrip(" =?？!！.。")
    try:
        tree = ast.parse(expression, mode="eval")
        evaluate(expression)
    except (SyntaxError, ValueError, CalculatorError):
        return None
    if not any(isinstance(node, (ast.BinOp, ast.Call)) for node in ast.walk(tree)):
        return None
    return expression


def arithmetic_affinity(question: str) -> float:
    """How much `question` is for the calculator (graph.models.local.examples.tool_affinity):
    1 when it is arithmetic throughout, -1 (not for it) when it holds no number at all."""
    if question_arithmetic(question):
        return 1.0
    return 0.0 if mentions_numbers(question) else -1.0


# The argument a small model fills with the arithmetic copied from the question
# (graph.models.local.copying): a copy a character or two off ("eight times seven" for
# "eighteen times seven") is taken as the piece of the question it copied.
COPIED_ARGUMENT = "expression"
# When the whole question is arithmetic, that arithmetic is the expression, whatever the small
# model wrote: it copied a part ("(45 + 55)" of "(45 + 55) * 12 / 8") or translated badly
# ("108 / 8" for 一百二十八除以八, "twenty-one times 21" for "nineteen times twenty-one").
ARGUMENT_FROM_QUESTION = question_arithmetic
AFFINITY = arithmetic_affinity


# Worked examples for small local models (graph.models.local.examples): real output layout. The
# input copies the question's own words (the calculator reads them; a small model copies well and
# translates badly), and the answer repeats the result: copying is what a small model does well.
EXAMPLES = [
    {
        "question": "What is 12 * 9?",
        "thought": "I pass the arithmetic to the calculator.",
        "input": {"expression": "12 * 9"},
        "observation": "108",
        "answer": "108",
    },
    {
        "question": "What is forty-two divided by six?",
        "thought": "I pass the arithmetic to the calculator.",
        "input": {"expression": "forty-two divided by six"},
        "observation": "7\n(read as 42 / 6)",
        "answer": "7",
    },
    {
        "question": "125 加 37 等于多少？",
        "thought": "I pass the arithmetic to the calculator.",
        "input": {"expression": "125 加 37"},
        "observation": "162\n(read as 125 + 37)",
        "answer": "162",
    },
    {
        "question": "What is 20% of 45?",
        "thought": "I pass the arithmetic to the calculator.",
        "input": {"expression": "20% of 45"},
        "observation": "9\n(read as 20 * 45 / 100)",
        "answer": "9",
    },
    {
        "question": "What is half of 90?",
        "thought": "I pass the arithmetic to the calculator.",
        "input": {"expression": "half of 90"},
        "observation": "45\n(read as 90 / 2)",
        "answer": "45",
    },
    {
        "question": "What is the square root of 196?",
        "thought": "I pass the arithmetic to the calculator.",
        "input": {"expression": "the square root of 196"},
        "observation": "14\n(read as sqrt(196))",
        "answer": "14",
    },
    {
        "question": "A bus has 40 seats. How many seats do 3 buses have?",
        "thought": "3 buses with 40 seats each is 40 * 3.",
        "input": {"expression": "40 * 3"},
        "observation": "120",
        "answer": "120",
    },
    {
        "question": "Compute 6 * 7, then add 8 to the result.",
        "steps": [
            {"thought": "First I multiply.", "input": {"expression": "6 * 7"}, "observation": "42"},
            {
                "thought": "Now I add 8 to 42.",
                "input": {"expression": "42 + 8"},
                "observation": "50",
            },
        ],
        "answer": "50",
    },
]
