"""The small number readers the calculator leans on: Chinese numerals read to their value (or a
ValueError, never a guess) and the test of whether a question holds anything to calculate."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tools.chinese_numerals import chinese_number
from tools.number_mentions import mentions_numbers


@pytest.mark.parametrize(
    ("numeral", "lead", "value"),
    [
        ("十七", None, "17"),
        ("一百零五", None, "105"),
        ("三千二百", None, "3200"),
        ("两万", None, "20000"),
        ("两万五", None, "25000"),
        ("一百五", None, "150"),
        ("一亿两千万", None, "120000000"),
        ("三点一四", None, "3.14"),
        ("万", Decimal(3), "30000"),
        ("亿", Decimal("1.5"), "150000000.0"),
        ("〇", None, "0"),
    ],
)
def test_a_chinese_numeral_reads_as_its_value(
    numeral: str, lead: Decimal | None, value: str
) -> None:
    assert chinese_number(numeral, lead) == Decimal(value)


@pytest.mark.parametrize("numeral", ["一二", "一亿一亿", "十百", "万", "百", "三点x", "五十五十"])
def test_characters_that_are_no_numeral_raise_value_error(numeral: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        chinese_number(numeral)


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("What is 17 * 23?", True),
        ("What is seventeen times three?", True),
        ("Double that.", True),
        ("一百二十八除以八", True),
        ("把它翻倍", True),
        ("What is log10(1000)?", True),
        ("Compute cos(pi).", True),
        ("What is sqrt(e)?", True),  # a call is enough
        ("Round trip: what does an Action consist of?", False),
        ("Which log file holds the errors?", False),
        ("我有一个问题：检查点存在哪里？", False),
        ("In a ReAct round, what exactly does an Action consist of?", False),
    ],
)
def test_a_question_mentions_numbers_only_when_it_holds_something_to_calculate(
    text: str, mentions: bool
) -> None:
    assert mentions_numbers(text) is mentions
