"""Which worked examples a question gets: the ones whose questions look most like it.

With all six tools enabled there are two dozen examples; a small model given all of them
copies whichever record is nearest the question, often a record of the wrong tool. Similarity
is measured on what a question's wording shares with an example's: IDF-weighted words
(English, crudely stemmed), pairs of Chinese characters, and the question's shape (it has
numbers, it asks for arithmetic, it is in Chinese); an example also carries, at half weight,
the words of its tool's description, so "the date today" finds the clock's examples even if
none of them says "date". Plain Python: no embeddings, no model, microseconds per question.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

from graph.models.local.examples import Example, ExamplePool

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORDS = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
_ARITHMETIC = re.compile(
    r"\d\s*[-+*/×÷^%]\s*\d|\b(plus|minus|times|multipl\w*|divid\w*|sum|product|square|root|"
    r"percent|squared|cubed|power|half|twice|double)\b|[加减乘除倍平方根]",
    re.IGNORECASE,
)
_NUMBER_WORDS = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
    r"eighty|ninety|hundred|thousand|million)\b|[一二三四五六七八九十百千万]",
    re.IGNORECASE,
)
_STOP = frozenset(
    (
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "what",
        "do",
        "does",
        "did",
        "i",
        "me",
        "my",
        "you",
        "your",
        "it",
        "its",
        "this",
        "that",
        "with",
        "from",
        "by",
        "as",
        "can",
        "could",
        "please",
        "tell",
        "now",
    )
)


def features(text: str) -> Counter[str]:
    """Words (English), character pairs (Chinese), and the question's shape."""
    found: Counter[str] = Counter()
    for token in _WORDS.findall(text.casefold()):
        if _IS_CJK.match(token):
            found.update(token[i : i + 2] for i in range(max(len(token) - 1, 1)))
        elif token not in _STOP and not token.isdigit():
            found[token[:6]] += 1  # a crude stem: time/times, calculate/calculator
    if re.search(r"\d", text) or _NUMBER_WORDS.search(text):
        found["<number>"] += 1
    if _ARITHMETIC.search(text):
        found["<arithmetic>"] += 2
    if _IS_CJK.search(text):
        found["<chinese>"] += 1
    return found


def similarity(a: Counter[str], b: Counter[str], idf: Mapping[str, float]) -> float:
    """Cosine of IDF-weighted feature counts."""
    dot = sum(a[k] * b[k] * idf.get(k, 1.0) ** 2 for k in a.keys() & b.keys())
    if not dot:
        return 0.0
    na = math.sqrt(sum((v * idf.get(k, 1.0)) ** 2 for k, v in a.items()))
    nb = math.sqrt(sum((v * idf.get(k, 1.0)) ** 2 for k, v in b.items()))
    return dot / (na * nb)


def example_features(example: Example) -> Counter[str]:
    """An example's question, and at half weight what its tool is for: a question about "the
    date" then finds the clock's examples even if none of them says "date"."""
    found = features(example.question)
    for key, value in features(example.hint).items():
        if not key.startswith("<"):
            found[key] += value * 0.5
    return found


def pick_examples(question: str, pool: ExamplePool, count: int = 4) -> list[Example]:
    """The `count` examples most like the question, least similar first (the closest one ends
    up next to the question). At most two per tool, so one tool's many examples cannot crowd
    out the rest; slots no example earns are filled with one example per tool not shown yet
    (declaration order), so the model still sees the other tools."""
    examples = pool.examples
    if len(examples) <= count:
        return list(examples)
    vectors = [example_features(e) for e in examples]
    documents = Counter(k for v in vectors for k in v)
    idf = {k: math.log((1 + len(vectors)) / (1 + n)) + 1.0 for k, n in documents.items()}
    target = features(question)
    scores = [similarity(target, vector, idf) for vector in vectors]
    chosen: list[int] = []
    per_source: Counter[str] = Counter()
    for index in sorted(range(len(examples)), key=lambda i: (-scores[i], i)):
        source = examples[index].source
        if scores[index] <= 0 or per_source[source] >= 2:
            continue
        chosen.append(index)
        per_source[source] += 1
        if len(chosen) == count:
            break
    for index in range(len(examples)):  # the rest: other tools first, then anything
        if len(chosen) == count:
            break
        if index not in chosen and per_source[examples[index].source] == 0:
            chosen.append(index)
            per_source[examples[index].source] += 1
    for index in range(len(examples)):
        if len(chosen) == count:
            break
        if index not in chosen:
            chosen.append(index)
    return [examples[i] for i in reversed(chosen)]
