"""The calculator's evaluator: arithmetic on an `ast` tree, every result bounded BEFORE it is made.

Kept apart from `tools/calculator.py` (the tool definition) because this is the part with the
safety argument, and it is worth reading on its own.

Why bounds before computing: CPython multiplies, raises to powers and rounds big integers while
holding the GIL, in one C call that no timeout can interrupt. `round(1, -10**9)` or `9 ** 9 ** 9`
would freeze the whole process (a `langgraph dev` server with its health check included). So:

- every number is finite and at most `MAX_MAGNITUDE` (1e300) in absolute value: literals are
  checked when read (`1e309` is infinity to Python, a 499-digit literal is just long), results
  after every operation (a float overflow to inf or nan is refused, never returned);
- `*` and `**` on integers estimate the result's bit length from the operands' and refuse
  before multiplying; `**` also refuses exponents above `MAX_EXPONENT`;
- `round(x, n)` of an integer with a very negative `n` is 0 without computing `10 ** -n`;
- the text is at most `MAX_EXPRESSION_CHARS`; the tree is walked without recursion, and every
  name, call and construct is checked before any arithmetic is done.

With operands below 1e300 every remaining operation is a few microseconds, so a whole
expression is too. Refusals are `CalculatorError` with one short reason, which the tool turns
into "Cannot calculate '...': <reason>."
"""

from __future__ import annotations

import ast
import math
import operator
import unicodedata
from collections.abc import Callable

Number = int | float

MAX_MAGNITUDE = 10**300
MAX_BITS = MAX_MAGNITUDE.bit_length()  # 997
MAX_EXPONENT = 10_000
MAX_EXPRESSION_CHARS = 500
LIMIT_TEXT = "1e300"

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot evaluate."""


def _round(value: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int):
        raise CalculatorError("round(): the number of digits must be a whole number")
    if isinstance(value, int) and ndigits < -(len(str(MAX_MAGNITUDE)) + 1):
        return 0  # |value| <= 1e300 rounds to 0 at 10**302; CPython would build 10**-ndigits
    return round(value, ndigits)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": _round,
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
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def _script(char: str) -> str | None:
    """'super' or 'sub' for a superscript or subscript character (Unicode's own decomposition
    says which: `²`, `⁻`, `ⁿ`, `₂`), else None."""
    if char.isascii():
        return None
    tag = unicodedata.decomposition(char).split(" ", 1)[0]
    return {"<super>": "super", "<sub>": "sub"}.get(tag)


def with_powers(text: str) -> str:
    """Superscripts as powers: `2⁸` is `2**(8)`, `10⁻³` is `10**(-3)`, `(1+2)²` is `(1+2)**(2)`.

    Read as plain digits (which Unicode's compatibility form does), `2⁸` would be 28, a wrong
    number given as an answer; a run of superscripts is therefore always a power, and
    `CalculatorError` says so when it cannot be one (nothing before it, or a subscript)."""
    if text.isascii():
        return text
    out: list[str] = []
    run: list[str] = []
    last = ""  # the last character before the run that is not a blank
    for char in text + " ":
        kind = _script(char)
        if kind == "sub":
            raise CalculatorError(
                f"the subscript {char!r} is not arithmetic; write the number with plain digits"
            )
        if kind == "super":
            run.append(unicodedata.normalize("NFKC", char).replace("\u2212", "-"))
            continue
        if run:
            if not (last.isalnum() or last in (")", ".")):
                raise CalculatorError(
                    "a superscript is a power and must follow a number or a closing "
                    "parenthesis, as in 2⁸ (2 to the 8th power)"
                )
            out.append(f"**({''.join(run)})")
            run, last = [], ")"
        out.append(char)
        if not char.isspace():
            last = char
    return "".join(out[:-1])


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression safely; raise `CalculatorError` with the reason.
    Superscripts are powers (`with_powers`)."""
    text = expression.strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    text = with_powers(text)
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not a valid arithmetic expression ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise CalculatorError("not a valid arithmetic expression") from None
    value = _Evaluation(text).run(tree.body)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


class _Evaluation:
    """One expression, evaluated without recursion: the parser accepts chains (`1+1+...`,
    `----1`) deeper than a recursive walk should go inside an agent's already deep stack."""

    def __init__(self, text: str) -> None:
        self.text = text

    def run(self, root: ast.expr) -> Number:
        values: list[Number] = []
        for node in self._postorder(root):
            if isinstance(node, ast.Constant):
                values.append(self._bounded(node.value, node, literal=True))
            elif isinstance(node, ast.Name):
                values.append(CONSTANTS[node.id])
            elif isinstance(node, ast.UnaryOp):
                values.append(_UNARY[type(node.op)](values.pop()))
            elif isinstance(node, ast.BinOp):
                right, left = values.pop(), values.pop()
                values.append(self._binary(node, left, right))
            else:
                assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                count = len(node.args)
                arguments = values[len(values) - count :]
                del values[len(values) - count :]
                values.append(self._call(node, node.func.id, arguments))
        return values[0]

    def _postorder(self, root: ast.expr) -> list[ast.expr]:
        """The nodes, children first; anything outside the grammar is refused here, before any
        arithmetic is done."""
        order: list[ast.expr] = []
        pending: list[tuple[ast.expr, bool]] = [(root, False)]
        while pending:
            node, ready = pending.pop()
            if ready:
                order.append(node)
                continue
            pending.append((node, True))
            pending.extend((child, False) for child in reversed(self._children(node)))
        return order

    def _children(self, node: ast.expr) -> list[ast.expr]:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return []
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return []
            raise CalculatorError(f"unknown name '{node.id}' (allowed: {allowed_names()})")
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return [node.operand]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return [node.left, node.right]
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name not in FUNCTIONS or node.keywords:
                shown = name or self._source(node.func)
                raise CalculatorError(
                    f"function '{shown}' is not allowed (allowed: {allowed_names()})"
                )
            return list(node.args)
        raise CalculatorError(f"'{self._source(node)}' is not allowed in an arithmetic expression")

    def _binary(self, node: ast.BinOp, left: Number, right: Number) -> Number:
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculatorError(f"exponent {_show(right)} is too large (limit {MAX_EXPONENT})")
        if _predicted_too_large(node.op, left, right):
            raise self._too_large(node)
        return self._bounded(self._apply(node, _BINARY[type(node.op)], left, right), node)

    def _call(self, node: ast.Call, name: str, arguments: list[Number]) -> Number:
        try:
            result = self._apply(node, FUNCTIONS[name], *arguments)
        except CalculatorError:
            raise
        except (TypeError, ValueError) as exc:
            raise CalculatorError(f"{name}(): {exc}") from None
        return self._bounded(result, node)

    def _apply(self, node: ast.expr, function: Callable[..., Number], *arguments: Number) -> Number:
        try:
            return function(*arguments)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise self._too_large(node) from None

    def _bounded(self, value: object, node: ast.expr, *, literal: bool = False) -> Number:
        """`value` if it is a finite real number within the limit; else the refusal."""
        if isinstance(value, complex):
            raise CalculatorError("the result is not a real number")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise CalculatorError(f"'{self._source(node)}' is not a number")
        if isinstance(value, float) and math.isnan(value):
            raise CalculatorError(f"the result of {self._source(node)} is not a number")
        limit = MAX_MAGNITUDE if isinstance(value, int) else float(MAX_MAGNITUDE)
        if abs(value) > limit:  # inf included
            if literal:
                raise CalculatorError(
                    f"the number {self._source(node)} is too large (the limit is {LIMIT_TEXT})"
                )
            raise self._too_large(node)
        return value

    def _too_large(self, node: ast.expr) -> CalculatorError:
        return CalculatorError(
            f"the result of {self._source(node)} is too large (the limit is {LIMIT_TEXT})"
        )

    def _source(self, node: ast.expr) -> str:
        """The node's own text (no `ast.unparse`: it recurses), shortened."""
        text = ast.get_source_segment(self.text, node) or type(node).__name__
        return _shorten(" ".join(text.split()))


def _predicted_too_large(op: ast.operator, left: Number, right: Number) -> bool:
    """Whether an integer `*` or `**` would certainly pass the limit (decided from bit lengths).

    Floats need no estimate: their arithmetic is constant time and overflows to inf or
    OverflowError, both refused afterwards. `+ - / // %` cannot grow past twice an operand.
    """
    if not (isinstance(left, int) and isinstance(right, int)):
        return False
    if isinstance(op, ast.Mult):
        return left != 0 and right != 0 and left.bit_length() + right.bit_length() - 2 > MAX_BITS
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        return right * (abs(left).bit_length() - 1) > MAX_BITS
    return False


def _shorten(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _show(value: Number) -> str:
    return _shorten(str(value) if isinstance(value, int) else f"{value:.6g}", 20)


def allowed_names() -> str:
    return ", ".join([*FUNCTIONS, *CONSTANTS])
