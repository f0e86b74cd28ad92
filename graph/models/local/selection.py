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
from collections.abc import Iterable, Mapping

from graph.models.local.examples import Example, ExamplePool

# A tool's own word on how much a question is about what it holds (0..1, added to the likeness
# of its examples; -1 rules the tool out): the notes' search knows which questions its notes
# answer; no example can.
AFFINITY_WEIGHT = 1.0
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORDS = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
_THEN = re.compile(r"\bthen\b|\bafter that\b|然后|之后|再[加减乘除算查用]", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.?!;]\s+|[。？！；，]")
_FOLLOW_UP = re.compile(
    r"\b(add|subtract|multiply|divide|plus|minus|times|double|halve|square|convert)\b|"
    r"再?(?:加上|减去|乘以|除以)",
    re.IGNORECASE,
)
_SENTENCE_BREAK = re.compile(r"[.!?。！？\"'“‘(]")  # between two words: the second begins anew
_ARITHMETIC = re.compile(
    r"\d\s*[-+*/×÷^%]\s*\d|\b(plus|minus|times|multipl\w*|divid\w*|sum|product|square|root|"
    r"percent|squared|cubed|power|half|twice|double)\b|加|减|乘|除以|倍|平方|开方|根号",
    re.IGNORECASE,
)
_NUMBER_WORDS = re.compile(
    r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
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
        "right",
        "moment",
        "which",
        "s",
    )
)


def features(text: str) -> Counter[str]:
    """Words (English), character pairs (Chinese), and the question's shape. A name (a word
    capitalised inside a sentence: Paris, Ada) counts a quarter: it says what the question is
    about, not which tool answers it ("What time is it in Paris?" is the clock's question even
    though the weather's example is about Paris)."""
    found: Counter[str] = Counter()
    previous_end = None  # where the word before ended: the text between says if one starts
    for match in _WORDS.finditer(text):
        token = match.group().casefold()
        starts = previous_end is None or _SENTENCE_BREAK.search(text, previous_end, match.start())
        previous_end = match.end()
        if _IS_CJK.match(token):
            found.update(token[i : i + 2] for i in range(max(len(token) - 1, 1)))
        elif token not in _STOP and not token.isdigit():
            name = match.group()[0].isupper() and not starts
            weight = 0.25 if name else 1.0
            found[token[:6]] += weight  # a crude stem: time/times, calculate/calculator
            if len(token) > 4:
                found[token[:4]] += weight * 0.3  # and a cruder one: weekday/week
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


def asks_for_more_than_one_thing(question: str) -> bool:
    """ "..., then multiply it by 7", "How many ...? Add 10 to that.": a second request after the
    first. Only such a question is shown examples of several steps; others copied the second
    step of a shown record ("Where are checkpoints kept?" went on to `calculator 3 * 4`)."""
    if _THEN.search(question):
        return True
    clauses = [c for c in _CLAUSE_END.split(question) if c.strip()]
    return len(clauses) > 1 and any(_FOLLOW_UP.search(c) for c in clauses[1:])


def pick_examples(
    question: str, pool: ExamplePool, count: int = 4, affinity: Mapping[str, float] | None = None
) -> list[Example]:
    """The `count` examples most like the question, least similar first (the closest ends up
    next to the question, where a small model looks).

    The tool whose examples are most like the question gets the last two places: a small model
    copies the record nearest the question, and when that record and the one before it belong
    to different tools (the weather's "... in Paris right now?" beside the clock's "What time is
    it in London?"), it follows whichever stands last. The other places go to one example of
    each other tool, most similar first, and are filled in declaration order when no example
    is like the question at all, so the model still sees what else there is.

    `affinity`: per tool name, how much the question is about what that tool holds (-1..1,
    `examples.tool_affinity`), added to its examples' likeness. "How often does the agent save
    its state?" looks like none of the notes examples (tomatoes, ports), but the notes answer it.
    A tool whose affinity is negative is not shown at all: "In a ReAct round, what exactly
    does an Action consist of?" looked most like the calculator's examples ("exactly" is in
    its description), though a question without a number has nothing to calculate.
    """
    examples = pool.examples
    ruled_out = {tool for tool, value in (affinity or {}).items() if value < 0}
    examples = [e for e in examples if e.source not in ruled_out] or examples
    if len(examples) <= count:
        return list(examples)
    if not asks_for_more_than_one_thing(question):  # a two-step record teaches a second step
        examples = [e for e in examples if len(e.steps) < 2] or examples
    vectors = [example_features(e) for e in examples]
    # Rarity across tools, not across examples: "weather" is in every weather example, which
    # makes it common among examples and yet it is the word that says which tool answers.
    by_tool: dict[str, set[str]] = {}
    for example, vector in zip(examples, vectors, strict=True):
        by_tool.setdefault(example.source, set()).update(vector)
    documents = Counter(k for words in by_tool.values() for k in words)
    idf = {k: math.log((1 + len(by_tool)) / (1 + n)) + 1.0 for k, n in documents.items()}
    target = features(question)
    scores = [similarity(target, vector, idf) for vector in vectors]
    for index, example in enumerate(examples):  # what a tool knows its question is about
        scores[index] += AFFINITY_WEIGHT * (affinity or {}).get(example.source, 0.0)
    ranked = sorted(range(len(examples)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    if scores[ranked[0]] > 0:
        top = examples[ranked[0]].source
        chosen = [i for i in ranked if examples[i].source == top and scores[i] > 0][:2]
    shown = {examples[i].source for i in chosen}

    def take(indices: Iterable[int], *, one_per_tool: bool) -> None:
        for index in indices:
            if len(chosen) == count:
                return
            if index in chosen or (one_per_tool and examples[index].source in shown):
                continue
            chosen.append(index)
            shown.add(examples[index].source)

    take([i for i in ranked if scores[i] > 0], one_per_tool=True)  # other tools, most alike first
    take(range(len(examples)), one_per_tool=True)  # tools not shown yet, in declaration order
    take(range(len(examples)), one_per_tool=False)  # anything
    return [examples[i] for i in reversed(chosen[:count])]
