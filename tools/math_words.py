"""Arithmetic phrased in words, English or Chinese, turned into an expression for the calculator.

Why: the local model (Gemma 3 270M) copies text well and translates it badly: asked "What is the
square root of 144?" it calls the calculator with `144`. When the calculator understands the
phrase itself, the model only has to copy the question's words into the `expression` argument.

How: NFKC, one tokenizing regex, question noise dropped, then a recursive-descent parser with
Python's precedence, strict on purpose: an unknown word, a construct it cannot place or an
ambiguous one (`5!`, `100 + 10%`) gives None, never a plausible wrong meaning. Nothing is
evaluated here: the result is text for `tools.safe_eval.evaluate`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal, localcontext
from functools import reduce
from typing import TypeVar

from tools.chinese_numerals import UNITS, chinese_number

MAX_TEXT_CHARS = 1000  # the caller caps at 500; longer text is not a question to translate
MAX_DEPTH = 30  # nesting (parentheses, "minus minus ...", "sum of sum of ...") before giving up

T = TypeVar("T")
Node = tuple[str, int]  # expression text and the precedence of its outermost operator
Table = tuple[tuple[tuple[str, ...], str], ...]  # phrases (as words) and what they stand for
ADD, MUL, UNARY, POW, ATOM = 1, 2, 3, 4, 5
_LEVEL = dict.fromkeys("+-", ADD) | dict.fromkeys(["*", "/", "//", "%", "×", "÷"], MUL)
_LEVEL |= {"**": POW, "^": POW}


def _tables(spec: str) -> dict[str, Table]:
    """Named tables, one a line: 'name: plus>+|added to>+' (a line starting with | continues);
    the longest phrases first, so that they win over their prefixes."""
    tables = {}
    for line in re.sub(r"\n\s+\|", "|", spec.strip()).splitlines():
        name, _, rows = line.partition(": ")
        cut = [row.partition(">") for row in rows.split("|")]
        pairs = [(tuple(phrase.split()), value) for phrase, _, value in cut]
        tables[name.strip()] = tuple(sorted(pairs, key=lambda pair: -len(pair[0])))
    return tables


def _words(spec: str, start: int = 0, step: int = 1) -> dict[str, int]:
    return {word: (start + n) * step for n, word in enumerate(spec.split())}


_UNITS = _words("zero one two three four five six seven eight nine ten eleven twelve thirteen")
_UNITS |= _words("fourteen fifteen sixteen seventeen eighteen nineteen", 14)
_TENS = _words("twenty thirty forty fifty sixty seventy eighty ninety", 2, 10)
_SMALL = _UNITS.keys() | _TENS.keys()
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_MULTIPLIERS = {"hundred", *_SCALES}
_NUMBER_WORDS = _SMALL | _MULTIPLIERS | {"point"}
_ORDINALS = _words("second third fourth fifth sixth seventh eighth ninth tenth", 2)
_FRACTIONS = {"half": 2, "halves": 2, "quarter": 4, "quarters": 4}
_FRACTIONS |= {word + plural: n for word, n in _ORDINALS.items() if n > 2 for plural in ("", "s")}
_CALLS = _words("sqrt abs round min max floor ceil log log10 exp sin cos tan").keys()
NUMBER_WORDS = frozenset(_NUMBER_WORDS | _FRACTIONS.keys())  # for tools.number_mentions
FUNCTION_NAMES = frozenset(_CALLS)
_OPERAND_STARTS = {*_CALLS, "pi", "e", "(", "a", "an"}
_DROPPED = _words(  # question noise, wherever it is: what is, how much is, 等于多少, ...
    "the please what what's whats is are does do how much calculate compute work out evaluate"
    " find solve can could you tell me equals equal ? ! = . : 等于多少 是多少 等于几 是几 得多少"
    " 多少 等于 是 呢 吗 啊 呀 计算 算一下 算算 帮我算 请问 请 求 算 的结果"
)

_CN_WORDS = _words(
    "加上 加 减去 减 乘以 乘 除以 除 平方根 平方 立方根 立方 开平方 开立方 开方 根号 次方 次幂"
    " 倍 一半 百分之 的结果 的 和 与 跟 积 差 商 负 等于多少 是多少 等于几 是几 得多少 多少"
    " 等于 是 呢 吗 啊 呀 计算 算一下 算算 帮我算 请问 请 求 算"
)
_TOKEN = re.compile(
    r"(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
    r"|(?P<cn>" + "|".join(sorted(_CN_WORDS, key=len, reverse=True)) + ")"
    r"|(?P<cnnum>[零〇一二两三四五六七八九十百千万亿]+(?:点[零〇一二两三四五六七八九]+)?)"
    r"|(?P<word>log10(?![0-9])|[a-z]+(?:'[a-z]+)?)"
    r"|(?P<sym>\*\*|//|[-+*/%^()×÷,=?!.:;])|(?P<space>\s+)|(?P<other>.)",
    re.DOTALL,
)
_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")  # twenty-three
_PUNCTUATION = str.maketrans({"。": ".", "、": ",", "’": "'", "‘": "'", "−": "-", "—": "-"})

_EXPONENTS = _ORDINALS | {f"{n} {s}": n for n in range(2, 21) for s in ("nd", "rd", "th")}
_NTH = "|".join(f"{to} {w} power>{n}" for to in ("to", "raised to") for w, n in _EXPONENTS.items())
_TABLES = _tables(  # "the" is dropped as noise; an op ending in ~ swaps its operands
    f"""
    sign: minus>-|->-
    add: plus>+|added to>+|add>+|+>+|加上>+|加>+|minus>-|less>-|take away>-|->-|减去>-|减>-
      |subtracted from>-~
    mul: multiplied by>*|times>*|x>*|*>*|×>×|乘以>*|乘>*|divided by>/|over>/|/>/|÷>÷|//>//
      |除以>/|除>/~|modulo>%|mod>%|%>%
    power: **>**|^>^|raised to power of>**|raised to power>**|raised to>**|to power of>**
      |to power>**|{_NTH}
    pair: 和>+|积>*|差>-|商>/
    amount: 倍>*|次方>**|次幂>**
    prefix: square root of>sqrt|square root>sqrt|sqrt of>sqrt|sqrt>sqrt|根号>sqrt|cube root of>cbrt
      |cube root>cbrt|absolute value of>abs|square of>square|cube of>cube|half of>half
      |twice>double|double>double|triple>triple|thrice>triple|百分之>percent|result of>same
      |value of>same
    suffix: squared>square|的 平方>square|平方>square|cubed>cube|的 立方>cube|立方>cube
      |的 平方根>sqrt|平方根>sqrt|开平方>sqrt|开方>sqrt|的 立方根>cbrt|立方根>cbrt|开立方>cbrt
      |的 一半>half
    list: sum of>+|total of>+|product of>*|difference between>-|difference of>-|quotient of>/
      |average of>mean|mean of>mean
    verb: subtract from>-~|add to>+|add and>+|multiply by>*|multiply and>*|divide by>/
    """
)
_VERBS = dict(_TABLES["verb"])  # subtract A from B, add A to B, multiply A by B, divide A by B


class _Unsure(Exception):
    """The text is not arithmetic this module understands."""


def _need(value: T) -> T:  # the value, or _Unsure when it is falsy
    if not value:
        raise _Unsure
    return value


def _chinese(text: str, lead: Decimal | None = None) -> Decimal:
    try:
        return chinese_number(text, lead)
    except ValueError as unreadable:
        raise _Unsure from unreadable


def to_expression(text: str) -> str | None:
    """The arithmetic expression a phrase in words means, or None when the text has no words to
    translate (it is already an expression, or has nothing arithmetic in it)."""
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        return None
    normal = unicodedata.normalize("NFKC", text).lower().translate(_PUNCTUATION)
    if re.search(r"\d\s*!|(?:[-+]|plus|minus|less)\s*[\d.]+\s*(?:%|per\s?cent)(?!\s*of)", normal):
        return None  # 5! (a factorial), 100 + 10% (10 or 0.1 added?): ambiguous, not guessed
    tokens = []  # (kind, text) without spaces and noise
    for match in _TOKEN.finditer(_HYPHEN.sub(" ", normal)):
        if match.lastgroup == "other":
            return None  # a character no arithmetic phrase has
        if match.lastgroup != "space" and match.group() not in _DROPPED:
            tokens.append((match.lastgroup or "", match.group()))
    tokens = tokens[1:] if tokens[:1] == [("sym", ",")] else tokens  # "please, what is ..."
    if not any(k in ("num", "cnnum") or w in _NUMBER_WORDS for k, w in tokens):
        return None
    try:
        with localcontext(prec=4 * MAX_TEXT_CHARS):  # digits are copied exactly, never rounded
            parser = _Parser(tokens)
            expression = parser.pair()[0]
            _need(parser.i == len(tokens))
    except (_Unsure, RecursionError):
        return None
    if expression.replace(" ", "") == "".join(text.split()):
        return None  # already an expression: the caller evaluates the text as written
    return expression


def _binary(left: Node, op: str, right: Node) -> Node:
    """`left op right`, in parentheses only where Python needs them; an op ending in ~ swaps."""
    if op.endswith("~"):
        left, op, right = right, op[:-1], left
    level = _LEVEL[op]
    if level == POW:  # right-associative; the exponent may be signed (2 ** -1)
        wrap_left, wrap_right = left[1] <= POW, right[1] < UNARY
    else:
        wrap_left, wrap_right = left[1] < level, right[1] <= level
    left_text = f"({left[0]})" if wrap_left else left[0]
    return f"{left_text} {op} {f'({right[0]})' if wrap_right else right[0]}", level


def _literal(value: Decimal | int | str) -> Node:
    return format(Decimal(value), "f"), ATOM


_APPLY: dict[str, Callable[[Node], Node]] = {
    "sqrt": lambda node: (f"sqrt({node[0]})", ATOM),
    "abs": lambda node: (f"abs({node[0]})", ATOM),
    "cbrt": lambda node: _binary(node, "**", ("(1 / 3)", ATOM)),
    "square": lambda node: _binary(node, "**", _literal(2)),
    "cube": lambda node: _binary(node, "**", _literal(3)),
    "half": lambda node: _binary(node, "/", _literal(2)),
    "percent": lambda node: _binary(node, "/", _literal(100)),
    "double": lambda node: _binary(_literal(2), "*", node),
    "triple": lambda node: _binary(_literal(3), "*", node),
    "same": lambda node: node,
    "-": lambda node: (f"-({node[0]})" if node[1] < UNARY else f"-{node[0]}", UNARY),
}


def _percent_of(part: Node, whole: Node) -> Node:
    return _binary(_binary(part, "*", whole), "/", _literal(100))


class _Parser:
    """Recursive descent over the tokens, loosest construct first; `_Unsure` on anything else."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.kinds = [kind for kind, _ in tokens] + [""] * 4  # padding: peeking ahead is safe
        self.words = [word for _, word in tokens] + [""] * 4
        self.i = self.depth = 0

    def peek(self, ahead: int = 0) -> str:
        return self.words[self.i + ahead]

    def take(self, *words: str) -> bool:
        found = tuple(self.words[self.i : self.i + len(words)]) == words
        self.i += len(words) if found else 0
        return found

    def first(self, table: Table) -> str | None:
        return next((value for words, value in table if self.take(*words)), None)

    def starts_number(self, ahead: int) -> bool:
        return self.kinds[self.i + ahead] in ("num", "cnnum") or self.peek(ahead) in _SMALL

    def grouped_since(self, start: int) -> bool:
        """Whether 1,024 was read since `start` (in a list or a call it may be two numbers)."""
        return any("," in word for word in self.words[start : self.i] if word[0].isdigit())

    def pair(self) -> Node:
        """An expression, or the Chinese "A和B的和/积/差/商"."""
        node = self.binary(ADD)
        if self.peek() in ("和", "与", "跟"):
            self.i += 1
            other = self.binary(ADD)
            _need(self.take("的"))
            node = _binary(node, _need(self.first(_TABLES["pair"])), other)
        return node

    def binary(self, level: int) -> Node:
        """The operators of one precedence level, left to right."""
        node = self.binary(MUL) if level == ADD else self.unary()
        while (op := self.first(_TABLES["add" if level == ADD else "mul"])) is not None:
            node = _binary(node, op, self.binary(MUL) if level == ADD else self.unary())
        return node

    def unary(self) -> Node:
        self.depth += 1  # every nesting passes here: the one place to bound it
        _need(self.depth <= MAX_DEPTH)
        sign = self.first(_TABLES["sign"])
        node = self.power() if sign is None else _APPLY[sign](self.unary())
        self.depth -= 1
        return node

    def power(self) -> Node:
        base = self.postfix()
        op = self.first(_TABLES["power"])
        if op is None:
            return base
        exponent = self.unary() if op in ("**", "^") else _literal(op)  # else: to the 3rd power
        return _binary(base, "^" if op == "^" else "**", exponent)

    def percent(self) -> bool:
        """Consume a percent sign or word; `%` before an operand is the modulo operator."""
        if self.take("percent") or self.take("per", "cent"):
            return True
        if self.peek() != "%" or self.starts_number(1) or self.peek(1) in _OPERAND_STARTS:
            return False
        _need(self.peek(1) not in ("+", "-"))  # 50% - 3 is a percentage, 50 % -3 a remainder
        self.i += 1
        return True

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if (suffix := self.first(_TABLES["suffix"])) is not None:
                node = _APPLY[suffix](node)
            elif self.percent():
                of = self.take("of")
                node = _percent_of(node, self.unary()) if of else _APPLY["percent"](node)
            elif self.take("的", "百分之"):
                node = _percent_of(node, self.primary())
            elif self.peek() == "的" and self.starts_number(1):
                self.i += 1
                amount = self.primary()
                if self.percent():  # X的Y%
                    node = _percent_of(node, amount)
                else:
                    node = _binary(node, _need(self.first(_TABLES["amount"])), amount)
            else:
                return node

    def primary(self) -> Node:
        word = self.peek()
        if word == "(" or (word in _CALLS and self.peek(1) == "("):
            self.i += 1 if word == "(" else 2
            start, arguments = self.i, [self.pair()]
            while word != "(" and self.take(","):
                arguments.append(self.pair())
            _need(self.take(")") and not (word != "(" and self.grouped_since(start)))
            return f"{'' if word == '(' else word}({', '.join(t for t, _ in arguments)})", ATOM
        if word in ("pi", "e"):
            self.i += 1
            return word, ATOM
        if (prefix := self.first(_TABLES["prefix"])) is not None:
            return _APPLY[prefix](self.unary())
        if (op := self.first(_TABLES["list"])) is not None:
            return self.listed(op)
        if word in ("subtract", "add", "multiply", "divide"):
            self.i += 1
            first = self.binary(ADD)
            self.i += 1
            return _binary(first, _need(_VERBS.get((word, self.peek(-1)))), self.unary())
        if self.take("remainder", "of") or self.take("remainder", "when"):
            dividend = self.unary()
            _need(self.take("divided", "by"))
            return _binary(dividend, "%", self.unary())
        if word in ("negative", "负") and self.starts_number(1):  # (-5) ** 2: a negative number
            self.i += 1
            return _APPLY["-"](self.quantity())
        return self.quantity()

    def listed(self, op: str) -> Node:
        """The items of "sum of A, B and C", one operand each ("product of 3 and 4 plus 1": 13)."""
        start, items = self.i, [self.unary()]
        while self.take(",", "and") or self.take(",") or self.take("and"):
            items.append(self.unary())
        commas = "," in self.words[start : self.i]  # then 1,024 may be two items
        too_many = op in ("-", "/") and len(items) > 2
        _need(len(items) > 1 and not too_many and not (commas and self.grouped_since(start)))
        node = reduce(lambda left, right: _binary(left, "+" if op == "mean" else op, right), items)
        return _binary((f"({node[0]})", ATOM), "/", _literal(len(items))) if op == "mean" else node

    def quantity(self) -> Node:
        """A number, or a fraction of one: "two thirds (of X)", "a quarter of X"."""
        article = self.peek() in ("a", "an") and self.peek(1) in _FRACTIONS  # a third
        self.i += article
        count = _literal(1 if article else self.number())
        if self.peek() not in _FRACTIONS:
            return count
        self.i += 1
        denominator = _literal(_FRACTIONS[self.peek(-1)])
        if not self.take("of"):
            return _binary(count, "/", denominator)
        whole = self.unary()  # X * 2 / 3 rather than X * (2 / 3): exact when it can be
        return _binary(whole if count[0] == "1" else _binary(whole, "*", count), "/", denominator)

    def number(self) -> Decimal:
        """Digits, a Chinese numeral or English number words ("three hundred and forty-five",
        "a million", "3 million", "three point one four")."""
        word, kind = self.peek(), self.kinds[self.i]
        if kind == "cnnum":
            self.i += 1
            return _chinese(word)
        scales = set(self.peek(1)) <= UNITS.keys()
        if kind == "num" and self.kinds[self.i + 1] == "cnnum" and scales:
            self.i += 2  # 3万, 1.5亿
            return _chinese(self.peek(-1), Decimal(word.replace(",", "")))
        total, group, limit, last = Decimal(0), Decimal(0), 10**15, ""
        while True:  # `last` is the kind of the previous word, which decides what may follow
            word, kind, scale = self.peek(), self.kinds[self.i], _SCALES.get(self.peek(), limit)
            if not last and kind == "num":
                group, last = Decimal(word.replace(",", "")), "num"
            elif not last and word in ("a", "an") and self.peek(1) in _MULTIPLIERS:
                group, last = Decimal(1), "a"
            elif word in _TENS and last in ("", "hundred", "scale", "and"):
                group, last = group + _TENS[word], "tens"
            elif word in _UNITS and (
                last in ("", "hundred", "scale", "and") or (last == "tens" and _UNITS[word] < 10)
            ):
                group, last = group + _UNITS[word], "unit"
            elif word == "hundred" and last in ("num", "a", "tens", "unit") and group < 100:
                group, last = group * 100, "hundred"
            elif scale < limit and last not in ("", "scale", "and"):
                total, group, limit, last = total + group * scale, Decimal(0), scale, "scale"
            elif word == "and" and last in ("hundred", "scale") and self.peek(1) in _SMALL:
                last = "and"
            else:
                break
            self.i += 1
        if last in ("num", "a", "and") or not self.take("point"):
            _need(last)
            return total + group
        digits = ""
        while _UNITS.get(self.peek(), 10) < 10:  # point one four: digits read one by one
            digits += str(_UNITS[self.peek()])
            self.i += 1
        return Decimal(f"{format(total + group, 'f')}.{_need(digits)}")
