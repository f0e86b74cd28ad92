"""A safe calculator: arithmetic parsed with `ast`, never `eval` of raw text.

Models are bad at arithmetic and good at writing expressions, so this is usually the first tool
a ReAct agent reaches for. Only numbers, arithmetic operators, parentheses and an allow-list of
math functions and constants are evaluated; anything else is refused with a message the model can
act on.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

MAX_EXPONENT = 10_000
MAX_MAGNITUDE = 10**300
MAX_EXPRESSION_CHARS = 500

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot evaluate."""


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely; raise `CalculatorError` with the reason."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not a valid arithmetic expression ({exc.msg})") from None
    try:
        value = _eval(tree.body)
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("the result is too large") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _eval(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name '{node.id}' (allowed: {_allowed_names()})")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculatorError(f"exponent {right} is too large (limit {MAX_EXPONENT})")
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise CalculatorError("the result is not a real number")
        if abs(result) > MAX_MAGNITUDE:
            raise CalculatorError("the result is too large")
        return result
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _FUNCTIONS or node.keywords:
            shown = name or ast.unparse(node.func)
            raise CalculatorError(
                f"function '{shown}' is not allowed (allowed: {_allowed_names()})"
            )
        try:
            return _FUNCTIONS[name](*(_eval(arg) for arg in node.args))
        except (TypeError, ValueError) as exc:
            raise CalculatorError(f"{name}(): {exc}") from None
    raise CalculatorError(f"'{ast.unparse(node)}' is not allowed in an arithmetic expression")


def _allowed_names() -> str:
    return ", ".join([*_FUNCTIONS, *_CONSTANTS])


def _format(value: int | float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.12g}"


class CalculatorInput(BaseModel):
    expression: str = Field(
        description="An arithmetic expression, e.g. '17 * 23' or 'sqrt(2) * (3 + 4) ** 2'."
    )


def _calculate(expression: str) -> str:
    try:
        return _format(evaluate(expression))
    except CalculatorError as exc:
        raise ToolException(f"Cannot calculate '{expression}': {exc}.") from None


async def _acalculate(expression: str) -> str:
    return _calculate(expression)


calculator = StructuredTool.from_function(
    func=_calculate,
    coroutine=_acalculate,
    name="calculator",
    description=(
        "Evaluate an arithmetic expression exactly. Use it for any calculation instead of "
        "doing the arithmetic yourself. Supports + - * / // % ** (or ^), parentheses and "
        f"the functions {', '.join(_FUNCTIONS)}, and the constants pi and e."
    ),
    args_schema=CalculatorInput,
)
