"""Whether a question holds anything to calculate with, for the calculator's affinity.

Why: the embedded model is shown a tool's worked examples only when the question could be for
that tool. A question with no number, number word or operation in it ("In a ReAct round, what
does an Action consist of?") is not for the calculator, and its examples would only pull the
model towards a wrong call. Recall matters more than precision here: a question wrongly let
through still has the other tools' examples beside the calculator's.
"""

from __future__ import annotations

import re
import unicodedata

from tools.math_words import FUNCTION_NAMES, NUMBER_WORDS

# Words that make a question arithmetic without a number in it ("double that", after a search)
OPERATION_WORDS = frozenset(
    {
        *("double", "twice", "triple", "half", "square", "squared", "cube", "cubed", "root"),
        *("percent", "sum", "total", "product", "average", "mean", "power", "dozen", "pi"),
        *("plus", "minus", "times", "multiply", "multiplied", "divide", "divided"),
        *("add", "added", "subtract", "subtracted"),
    }
)
_ANY_NUMBER = re.compile(
    r"\d|[零〇二两三四五六七八九十百千万亿]|一(?![个台次件位种条些点])|[加减乘除倍]|平方|开方"
)
_CALL = re.compile(r"\b(?:" + "|".join(sorted(FUNCTION_NAMES)) + r")\s*\(")  # "round" alone is none


def mentions_numbers(text: str) -> bool:
    """Whether `text` holds anything to calculate with: a digit, a number word (English or
    Chinese, though not the 一 of 一个/一台, "a"), an operation word ("multiply that by
    itself", 翻倍) or a function or constant ("cos(pi)")."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    if _ANY_NUMBER.search(normal):
        return True
    if set(re.findall(r"[a-z]+", normal)) & (NUMBER_WORDS | OPERATION_WORDS):
        return True
    return _CALL.search(normal) is not None
