"""math_words: arithmetic phrased in English or Chinese becomes an expression the calculator's
evaluator accepts, with the exact value the phrase means; anything else gives None. (The
number words are read by text2num and cn2an; what is tested here is the reader around them.)

The round-trip properties write numbers in words with helpers of their own (below), so the
parser's reading of number words is checked against an independent writer, not against itself.
"""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.math_words import to_expression
from tools.safe_eval import CalculatorError, evaluate


def words(text: str) -> list[str]:
    return text.split()


UNITS = words(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen"
)
TENS = words("_ _ twenty thirty forty fifty sixty seventy eighty ninety")
CN_DIGITS = "零一二三四五六七八九"


def english(n: int, *, hyphen: bool = True, british: bool = False) -> str:
    """0 <= n < 10**12 in English words: 345 is "three hundred forty-five" (with `british`,
    "three hundred and forty-five")."""
    if n < 20:
        return UNITS[n]
    if n < 100:
        tens, unit = divmod(n, 10)
        return TENS[tens] + (("-" if hyphen else " ") + UNITS[unit] if unit else "")
    style = dict(hyphen=hyphen, british=british)
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        joint = " and " if british else " "
        return f"{UNITS[hundreds]} hundred" + (joint + english(rest, **style) if rest else "")
    for scale, name in ((10**9, "billion"), (10**6, "million"), (10**3, "thousand")):
        if n >= scale:
            high, rest = divmod(n, scale)
            joint = " and " if british and rest < 100 else " "
            head = f"{english(high, **style)} {name}"
            return head + (joint + english(rest, **style) if rest else "")
    raise AssertionError(n)


def chinese(n: int, two: str = "二") -> str:
    """0 <= n < 10**5 as a Chinese numeral: 105 is 一百零五, 10010 is 一万零一十, 17 is 十七."""
    if n == 0:
        return "零"
    out, gap = "", False
    for value, unit in ((10**4, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit, n = divmod(n, value)
        if digit:
            out += ("零" if gap else "") + (two if digit == 2 and unit else CN_DIGITS[digit]) + unit
            gap = False
        else:
            gap = bool(out)
    return out[1:] if out.startswith("一十") else out


def value_of(phrase: str) -> int | float:
    expression = to_expression(phrase)
    assert expression is not None, phrase
    return evaluate(expression)


CASES = [
    ("nineteen times thirty-one", 589),
    ("two hundred and six plus fifty-one", 257),
    ("40 percent of 35", 14),
    ("40% of 35", 14),
    ("the square root of 169", 13),
    ("half of 88", 44),
    ("What is 3 to the power of 4?", 81),
    ("eleven squared", 121),
    ("six cubed", 216),
    ("What is 2.5 multiplied by 6?", 15),
    ("subtract 14 from 100", 86),
    ("divide 81 by 9", 9),
    ("the sum of 12 and 30", 42),
    ("twice 21", 42),
    ("36乘以11", 396),
    ("64 加 36 等于多少？", 100),
    ("九十九减去九等于多少", 90),
    ("七十二除以八是多少", 9),
    ("1,200 divided by 4", 300),
    ("five raised to the third power", 125),
    ("3 to the 4th", 81),
    ("一百六十九的平方根", 13),
    ("九的平方", 81),
    ("四的立方是多少", 64),
    ("二的十次方", 1024),
    ("二百的百分之三十", 60),
    # one slip of the keyboard in a word of arithmetic
    ("seven tmes six", 42),
    ("the sqaure root of 625", 25),
    ("fourty plus two", 42),
    ("increase 80 by 15 percent", 92),
    ("reduce 250 by 20%", 200),
    ("take away seven from twenty", 13),
    ("ninety take away eleven", 79),
]


@pytest.mark.parametrize(("phrase", "expected"), CASES)
def test_phrases_mean_their_value(phrase: str, expected: float) -> None:
    assert value_of(phrase) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello there",
        "What is the capital of Peru?",
        "Where are my notes?",
        "x" * 600,
        "twelve houses plus three",  # a real word near none of arithmetic's stays as it is
        "7 tie 8",  # too short to respell
    ],
)
def test_text_without_arithmetic_gives_none(text: str) -> None:
    assert to_expression(text) is None


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 999_999),
    st.integers(1, 999_999),
    st.sampled_from([("plus", "+"), ("minus", "-"), ("times", "*")]),
    st.booleans(),
)
def test_english_number_words_round_trip(
    a: int, b: int, operator: tuple[str, str], british: bool
) -> None:
    phrase = f"{english(a, british=british)} {operator[0]} {english(b, british=british)}"
    assert value_of(phrase) == evaluate(f"{a} {operator[1]} {b}")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 99_999), st.integers(1, 99_999), st.sampled_from(["加", "减", "乘以"]))
def test_chinese_numerals_round_trip(a: int, b: int, operator: str) -> None:
    symbol = {"加": "+", "减": "-", "乘以": "*"}[operator]
    assert value_of(f"{chinese(a)}{operator}{chinese(b)}") == evaluate(f"{a} {symbol} {b}")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_gives_none_or_text_the_evaluator_reads(text: str) -> None:
    expression = to_expression(text)
    if expression is not None:
        assert set(expression) <= set("0123456789.+-*/() sqrt")
        # well-formed text whose value is out of bounds or undefined (1 / 0) is refused
        with contextlib.suppress(CalculatorError):
            evaluate(expression)


def test_hostile_inputs_are_fast() -> None:
    started = time.monotonic()
    for text in ["(" * 400, "one " * 120, "加" * 400, "9" * 400]:
        to_expression(text)
    assert time.monotonic() - started < 2.0
