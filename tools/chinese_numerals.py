"""Chinese numerals read as numbers: 十七 17, 一百零五 105, 两万五 25000, 三点一四 3.14.

Why its own module: the calculator's phrase reader (`tools.math_words`) needs them, and so does
any tool that must tell a number in a Chinese question; the rules (the colloquial short forms
一百五 and 两万五, digits before a unit as in 3万) are a small grammar of their own.
"""

from __future__ import annotations

from decimal import Decimal

DIGITS = {char: n for n, char in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10**4, "亿": 10**8}


def chinese_number(text: str, lead: Decimal | None = None) -> Decimal:
    """The value of the Chinese numeral `text` (`lead`: digits written before it, as in 3万);
    ValueError when the characters are no numeral (一二, 一亿一亿, 十百)."""
    whole, _, fraction = text.partition("点")
    if fraction:
        digits = "".join(str(_digit(char)) for char in fraction)
        return Decimal(f"{chinese_number(whole):f}.{digits}")
    for big in "亿万":  # 一亿两千万 is 一 * 10**8 + 两千万
        high, found, low = whole.partition(big)
        if found:
            _require(big not in low, f"{big} twice in {text!r}")
            short = len(low) == 1 and low in DIGITS and low != "零"  # 两万五 is 25000
            rest = chinese_number(low) * (UNITS[big] // 10 if short else 1)
            if not high and lead is None:
                raise ValueError(f"{big} with no number before it in {text!r}")
            return (chinese_number(high, lead) if high else lead) * UNITS[big] + rest
    value, digit, smallest = Decimal(0), lead, 10**4
    for char in whole:
        unit = UNITS.get(char, 0)
        if not unit:  # 一二: digits read one by one are not a number here
            _require(digit is None or digit == 0, f"two digits in a row in {text!r}")
            digit = Decimal(_digit(char))
        else:
            _require(unit < smallest, f"{char} after a smaller unit in {text!r}")
            _require(digit is not None or unit == 10, f"{char} with no digit before it in {text!r}")
            value, digit, smallest = value + (1 if digit is None else digit) * unit, None, unit
    if digit and whole[-2:-1] in ("百", "千"):
        digit *= smallest // 10  # 一百五 is 150
    return value + (digit or 0)


def _digit(char: str) -> int:
    if char not in DIGITS:
        raise ValueError(f"{char!r} is not a Chinese digit")
    return DIGITS[char]


def _require(condition: bool, problem: str) -> None:
    if not condition:
        raise ValueError(problem)
