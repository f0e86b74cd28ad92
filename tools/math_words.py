"""Arithmetic phrased in words, English or Chinese, turned into an expression for the calculator.

Numbers in words are read by libraries: `text2num` (English "three hundred and two") and `cn2an`
(Chinese "一百二十八"). What is left is a short table of operator phrases ("divided by",
"percent of", "乘以") and of question noise ("what is", "等于多少"). Strict on purpose: a word
that is neither a number, an operator nor noise gives None, never a plausible wrong meaning.
Nothing is evaluated here: the result is text for `tools.safe_eval.evaluate`.
"""

from __future__ import annotations

import re
import unicodedata
import warnings

MAX_TEXT_CHARS = 500
_NUMBER = r"(\d+(?:\.\d+)?|\([^()]*\))"
# (pattern, replacement) in order: phrases around two operands first, then single operators.
_REWRITES: tuple[tuple[str, str], ...] = (
    (rf"(?:the )?square root of {_NUMBER}", r"sqrt(\1)"),
    (rf"{_NUMBER} ?的平方根", r"sqrt(\1)"),
    (rf"(?:开方|根号) ?{_NUMBER}", r"sqrt(\1)"),
    (rf"{_NUMBER} ?(?:percent|per cent|%) of {_NUMBER}", r"(\1 * \2 / 100)"),
    (rf"{_NUMBER} ?% ?的 ?{_NUMBER}", r"(\1 * \2 / 100)"),
    (rf"{_NUMBER} ?的 ?{_NUMBER} ?%", r"(\1 * \2 / 100)"),  # 480的百分之十五 (cn2an: 480的15%)
    (rf"(?:the )?sum of {_NUMBER} and {_NUMBER}", r"(\1 + \2)"),
    (rf"(?:the )?product of {_NUMBER} and {_NUMBER}", r"(\1 * \2)"),
    (rf"(?:the )?difference between {_NUMBER} and {_NUMBER}", r"(\1 - \2)"),
    (
        rf"(?:increase|raise) {_NUMBER} by {_NUMBER} ?(?:percent|per cent|%)",
        r"(\1 * (100 + \2) / 100)",
    ),
    (
        rf"(?:decrease|reduce|lower) {_NUMBER} by {_NUMBER} ?(?:percent|per cent|%)",
        r"(\1 * (100 - \2) / 100)",
    ),
    (rf"(?:subtract|take away) {_NUMBER} from {_NUMBER}", r"(\2 - \1)"),
    (rf"add {_NUMBER} (?:to|and) {_NUMBER}", r"(\1 + \2)"),
    (rf"multiply {_NUMBER} (?:by|and) {_NUMBER}", r"(\1 * \2)"),
    (rf"divide {_NUMBER} by {_NUMBER}", r"(\1 / \2)"),
    (rf"half of {_NUMBER}", r"(\1 / 2)"),
    (rf"(?:twice|double) {_NUMBER}", r"(2 * \1)"),
    (rf"{_NUMBER} squared|{_NUMBER} ?的平方", r"(\1\2 ** 2)"),
    (rf"{_NUMBER} cubed|{_NUMBER} ?的立方", r"(\1\2 ** 3)"),
    (rf"{_NUMBER} ?的 ?{_NUMBER} ?次方", r"(\1 ** \2)"),  # 八的三次方
    (rf"{_NUMBER} (?:raised )?to the {_NUMBER}(?:st|nd|rd|th)(?: power)?", r"(\1 ** \2)"),
    (rf"{_NUMBER} (?:to the power of|raised to) {_NUMBER}", r"(\1 ** \2)"),
    (r"\b(?:plus|added to|and)\b|加上|加", " + "),
    (r"\b(?:minus|less|take away)\b|减去|减", " - "),
    (r"\b(?:times|multiplied by)\b|[x×]|乘以|乘", " * "),
    (r"\b(?:divided by|over)\b|÷|除以", " / "),
)
_NOISE = re.compile(
    r"\b(?:what(?:'s| is)|how much is|calculate|compute|please|the result of|equals?|is)\b"
    r"|等于多少|是多少|等于几|多少|计算|请|是|[?？=。!！,，]"
)
_LEFT = re.compile(r"[\d.+\-*/() ]|sqrt")
MIN_RESPELL_CHARS = 4  # a shorter word is too often one edit away from another real one
# the words arithmetic is written in, for `_respelled`: operators and English numbers
_SPELLED_WORDS = (
    "plus minus times multiplied divided over less added square squared root cubed "
    "percent half twice double sum product difference subtract multiply divide power increase "
    "raised what calculate compute equals zero three four five seven eight nine eleven "
    "twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty "
    "forty fifty sixty seventy eighty ninety hundred thousand million billion"
)
_SPELLED = tuple(_SPELLED_WORDS.split())


def to_expression(text: str) -> str | None:
    """The expression `text` states in words ("seventeen times twenty-three" -> "17 * 23"),
    or None when it is not arithmetic throughout or is too long to be a question. Text that
    reads as arithmetic only once a misspelled word is spelled right ("seven tmes six") is
    read that way (the calculator shows its reading)."""
    if not text or len(text) > MAX_TEXT_CHARS:
        return None
    found = _expression(text)
    if found is None:
        respelled = _respelled(text)
        if respelled != text:
            found = _expression(respelled)
    return found


def _respelled(text: str) -> str:
    """`text` with each word of `MIN_RESPELL_CHARS` letters or more that is no word of
    arithmetic, but one edit (a letter added, dropped, changed or two swapped) away from
    one, spelled as that word."""
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    def fix(match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < MIN_RESPELL_CHARS or word.casefold() in _SPELLED:
            return word
        found = process.extractOne(word.casefold(), _SPELLED, scorer=OSA.distance, score_cutoff=1)
        return found[0] if found else word

    return re.sub(r"[A-Za-z]+", fix, text)


def _expression(text: str) -> str | None:
    folded = unicodedata.normalize("NFKC", text).casefold().strip()
    numbers = read_numbers(folded)
    if numbers is None:
        return None
    expression = re.sub(r"(?<=\d),(?=\d{3})", "", numbers)
    expression = _NOISE.sub(" ", expression)
    expression = " ".join(expression.split())
    for pattern, replacement in _REWRITES:
        expression = re.sub(pattern, replacement, expression)
    expression = " ".join(expression.replace("sqrt (", "sqrt(").split())
    if _LEFT.sub("", expression).strip() or not re.search(r"\d", expression):
        return None
    return _unwrapped(expression)


def _unwrapped(expression: str) -> str:
    """Without parentheses around the whole: "(15 * 80 / 100)" reads "15 * 80 / 100"."""
    if not (expression.startswith("(") and expression.endswith(")")):
        return expression
    depth = 0
    for index, char in enumerate(expression):
        depth += (char == "(") - (char == ")")
        if depth == 0 and index < len(expression) - 1:
            return expression  # "(1 + 2) * (3 + 4)": the first closes before the end
    return expression[1:-1]


def read_numbers(text: str) -> str | None:
    """Lower-case `text` with its numbers in words as digits (English by text2num, Chinese by
    cn2an), or None when a library cannot read it."""
    from text_to_num import alpha2digit

    try:
        if re.search(r"[\u3400-\u9fff]", text):
            import cn2an  # about 0.6 s to import: only for text in Chinese

            with warnings.catch_warnings():  # cn2an warns of every run it cannot read
                warnings.simplefilter("ignore")
                text = cn2an.transform(text, "cn2an")
        if not re.search(r"[a-z]", text):
            return text
        return alpha2digit(re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text), "en", threshold=0)
    except (ValueError, KeyError, IndexError):
        return None
