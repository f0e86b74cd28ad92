"""A safe calculator: arithmetic parsed with `ast`, never `eval` of raw text.

Models are bad at arithmetic and good at writing expressions, so this is usually the first tool
a ReAct agent reaches for. Only numbers, arithmetic operators, parentheses and an allow-list of
math functions and constants are evaluated; anything else is refused with a message the model can
act on. The evaluator, with the bounds that keep any expression fast (no huge integers built
while holding the GIL), lives in `tools/safe_eval.py`; this module is the tool.
"""

from __future__ import annotations

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from tools.math_words import to_expression
from tools.safe_eval import FUNCTIONS, MAX_EXPRESSION_CHARS, CalculatorError, evaluate, with_powers

__all__ = ["CalculatorError", "CalculatorInput", "calculator", "evaluate"]

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
    reading, written = None, expression
    try:
        # superscripts become powers before anything reads the text: the words reader would
        # take `2⁸` for 28
        expression = with_powers(expression)
    except CalculatorError as exc:
        raise ToolException(f"Cannot calculate '{_shown(written)}': {exc}.") from None
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
            raise ToolException(f"Cannot calculate '{_shown(written)}': {exc}.") from None
    result = _format(value)
    if len(result) > MAX_RESULT_CHARS:  # cannot happen with the 1e300 limit; kept as a guard
        result = result[:MAX_RESULT_CHARS] + f" [cut at {MAX_RESULT_CHARS} characters]"
    return f"{result}\n(read as {reading})" if reading else result


def _shown(expression: str) -> str:
    if len(expression) > MAX_EXPRESSION_CHARS:
        return expression[: MAX_EXPRESSION_CHARS - 1] + "…"
    return expression


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
